// The lobby: rows updated in place (a Join click held across a refresh of the list, forty times,
// always takes effect), each match's settings and clock shown before joining, the name typed in
// the page (remembered; refused in words before sending, and in words when the server refuses
// it), matches nobody is in any more marked, no presence shown for finished matches, and the
// page fitting a 390 px phone with touch targets of 44 px.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { overflowing, smallTargets } from "./fit.mjs";
import { callApi, launchBrowser, shot, startServer } from "./harness.mjs";

let server;
let chrome;
before(async () => {
  server = await startServer();
  chrome = await launchBrowser();
});
after(async () => {
  await chrome?.close();
  await server?.stop();
});

/** A waiting Pylos match with Ada in seat 1 (through the API, as any program may). */
async function waitingMatch(extra = {}) {
  const created = await callApi(server, "CreateMatch", { config: { game: "GAME_PYLOS", seats: 2 }, ...extra });
  const matchId = created.match.matchId;
  await callApi(server, "JoinMatch", { matchId, playerName: "Ada" });
  return { matchId, creatorToken: created.creatorToken };
}

/** Force a refresh of the list and wait until the page has shown the answer. */
async function refreshNow(page) {
  const answered = page.waitForResponse((r) => r.url().includes("/ziggurat.v1.MatchService/ListMatches"));
  await page.evaluate(() => document.querySelector("section.matches").dispatchEvent(new Event("refresh")));
  await answered;
  await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
}

test("a Join click held across a refresh of the list takes effect, forty times out of forty", { timeout: 300_000 }, async () => {
  // Ten older matches that change (cancelled) while clicks are held, then forty to join.
  const decoys = [];
  for (let i = 0; i < 10; i++) decoys.push(await waitingMatch());
  const targets = [];
  for (let i = 0; i < 40; i++) targets.push((await waitingMatch()).matchId);
  const context = await chrome.browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(server.url);
  await page.fill("#name", "Bea");
  let joined = 0;
  for (const [i, matchId] of targets.entries()) {
    const join = `button.join[data-match="${matchId}"]`;
    await page.waitForSelector(join);
    await page.locator(join).scrollIntoViewIfNeeded();
    const box = await page.locator(join).boundingBox();
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.down();
    // While the button is held: another row changes on the server, and the list refreshes.
    if (i < decoys.length) await callApi(server, "CancelMatch", { matchId: decoys[i].matchId }, decoys[i].creatorToken);
    await refreshNow(page);
    await page.mouse.up();
    await page.waitForURL(new RegExp(`#/match/${matchId}$`), { timeout: 10_000 });
    const ticket = await page.evaluate((id) => JSON.parse(localStorage.getItem("ziggurat.seats") ?? "{}")[id], matchId);
    assert.equal(ticket?.name, "Bea", `click ${i + 1}: this browser holds Bea's seat in ${matchId}`);
    joined += 1;
    await page.evaluate(() => { window.location.hash = "#/"; });
    await page.waitForSelector("section.matches[data-refreshes]");
  }
  assert.equal(joined, 40);
  const listed = await callApi(server, "ListMatches", { pageSize: 100 });
  for (const id of targets) {
    const m = listed.matches.find((x) => x.matchId === id);
    assert.deepEqual(m.seats.map((s) => s.playerName).sort(), ["Ada", "Bea"], `${id}: Bea is seated`);
  }
  assert.deepEqual(errors, []);
  await context.close();
});

test("settings and clock before joining; the name in the page; deserted and finished matches", { timeout: 120_000 }, async () => {
  const advanced = await callApi(server, "CreateMatch", {
    config: { game: "GAME_PYLOS", seats: 2, pylos: { variant: "PYLOS_VARIANT_ADVANCED" } },
    timeControl: { baseMs: 300000, incrementMs: 3000 },
  });
  const kabaleo = await callApi(server, "CreateMatch", {
    config: { game: "GAME_KABALEO", seats: 3, kabaleo: { deal: "KABALEO_DEAL_EQUAL", lastStack: true } },
  });
  const perMove = await callApi(server, "CreateMatch", { config: { game: "GAME_PYLOS", seats: 2 }, timeControl: { perMoveMs: 30000 } });
  // Playing, both seats taken through the API and neither connected: nobody is there.
  const deserted = await waitingMatch();
  await callApi(server, "JoinMatch", { matchId: deserted.matchId, playerName: "Cy" });
  // Finished (Ada resigned): no presence words left in its row.
  const over = (await callApi(server, "CreateMatch", { config: { game: "GAME_PYLOS", seats: 2 }, seatAssignment: "SEAT_ASSIGNMENT_CHOSEN" })).match;
  await callApi(server, "JoinMatch", { matchId: over.matchId, playerName: "Ada", seat: 1 });
  const cy = await callApi(server, "JoinMatch", { matchId: over.matchId, playerName: "Cy", seat: 2 });
  await callApi(server, "Resign", { matchId: over.matchId }, cy.token);

  const context = await chrome.browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(server.url);
  const row = (id) => `tr[data-match="${id}"]`;
  await page.waitForSelector(row(advanced.match.matchId));
  assert.equal(await page.textContent(`${row(advanced.match.matchId)} td.options`), "advanced (lines too) · 5 min + 3 s per move");
  assert.equal(await page.textContent(`${row(kabaleo.match.matchId)} td.options`), "3 players, equal deal, last-stack rule · untimed (60 min per move at most)");
  assert.equal(await page.textContent(`${row(perMove.match.matchId)} td.options`), "standard · 30 s per move");
  assert.equal(await page.textContent(`${row(deserted.matchId)} td.match-status`), "playing · everyone away");
  assert.match(await page.getAttribute(row(deserted.matchId), "class"), /deserted/);
  assert.equal(await page.textContent(`${row(over.matchId)} td.match-status`), "finished");
  const overSeats = await page.textContent(`${row(over.matchId)} td.seats`);
  assert.equal(overSeats, "1. Ada (Light) · 2. Cy (Dark) – resigned");
  // The finished match's own page says nothing of presence either.
  await page.click(`${row(over.matchId)} button.replay`);
  await page.waitForSelector("#replay-moves");
  await page.evaluate((id) => { window.location.hash = `#/match/${id}`; }, over.matchId);
  await page.waitForSelector(".end .result");
  assert.deepEqual(await page.$$eval(".seats li .state", (s) => s.map((x) => x.textContent)), ["", "resigned"]);
  await page.evaluate(() => { window.location.hash = "#/"; });
  await page.waitForSelector(row(advanced.match.matchId));
  await shot(page, "lobby-desktop");

  // No name: the page says so and sends nothing.
  const joins = [];
  page.on("request", (r) => { if (r.url().includes("/JoinMatch")) joins.push(r.url()); });
  await page.fill("#name", "   ");
  await page.click(`button.join[data-match="${perMove.match.matchId}"]`);
  assert.equal(await page.textContent("#name-problem"), "Type your name first: the other players see it.");
  assert.equal(await page.evaluate(() => document.activeElement?.id), "name");
  await page.fill("#name", "Eve (bot)");
  assert.match(await page.textContent("#name-problem"), /cannot end in “\(bot\)”/);
  await page.click(`button.join[data-match="${perMove.match.matchId}"]`);
  assert.deepEqual(joins, [], "no JoinMatch sent for a name the server would refuse");
  await shot(page, "lobby-name-refused-in-page");
  // A look-alike only the server sees: its BAD_NAME in words beside the field, no raw text.
  await page.fill("#name", "Eve(B0T)");
  assert.equal(await page.textContent("#name-problem"), "");
  await page.click(`button.join[data-match="${perMove.match.matchId}"]`);
  await page.waitForFunction(() => document.querySelector("#name-problem")?.textContent !== "");
  assert.equal(await page.textContent("#name-problem"), "That name cannot be used: it is empty, too long, or reads like a built-in bot's.");
  assert.doesNotMatch(await page.textContent("body"), /player_name|invalid_argument|\[/i);
  assert.equal(joins.length, 1);
  // A good name is remembered: after a reload it is there, and Join takes it.
  await page.fill("#name", "  Eve  ");
  await page.reload();
  await page.waitForSelector(row(perMove.match.matchId));
  assert.equal(await page.inputValue("#name"), "Eve");
  await page.click(`button.join[data-match="${perMove.match.matchId}"]`);
  await page.waitForURL(new RegExp(`#/match/${perMove.match.matchId}$`));
  const m = (await callApi(server, "GetMatch", { matchId: perMove.match.matchId })).match;
  assert.ok(m.seats.some((s) => s.playerName === "Eve"), "Eve is seated");
  assert.deepEqual(errors, []);
  await context.close();
});

test("the lobby fits a 390 px phone, with touch targets of 44 px", { timeout: 120_000 }, async () => {
  const context = await chrome.browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
  const page = await context.newPage();
  await page.goto(server.url);
  await page.waitForSelector("button.join, button.watch, button.replay");
  await page.waitForSelector("#create");
  assert.deepEqual(await overflowing(page), []);
  assert.deepEqual(await smallTargets(page), []);
  // Kabaleo's options (players, deal, last-stack) too.
  await page.selectOption("#game", "kabaleo");
  assert.deepEqual(await overflowing(page), []);
  assert.deepEqual(await smallTargets(page), []);
  await shot(page, "lobby-phone");
  await context.close();
});
