// Two people in two browser contexts play a 3-seat Kabaleo match with a built-in bot while a
// third context spectates; one player reloads mid-game and keeps the seat. Every byte the seat
// page and the spectator page receive from the API is recorded and decoded: no other seat's
// objective, no unheld colour, no seed before the end. Then the replay viewer steps through it.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { RECORD_BYTES, launchBrowser, loadSecrecy, shot, startServer } from "./harness.mjs";

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

async function newPage(record) {
  const context = await chrome.browser.newContext({ viewport: { width: 1200, height: 900 } });
  if (record) await context.addInitScript(RECORD_BYTES);
  const page = await context.newPage();
  page.errors = [];
  page.on("pageerror", (e) => page.errors.push(e.message));
  return page;
}

async function moveCount(page) {
  return page.$$eval("ol.moves li", (items) => items.length);
}

/** Plays one move if it is this page's turn; prefers a move that cancels (same colour on top). */
async function playIfMyTurn(page) {
  const colours = await page.$$eval(".hand.mine .chip:not([disabled])", (chips) => chips.map((c) => c.dataset.colour));
  if (!colours.length) return null;
  let choice = null;
  for (const colour of colours) {
    await page.click(`.hand.mine .chip[data-colour="${colour}"]`);
    const stacks = await page.$$eval(".stack.target", (els) => els.map((e) => ({ n: e.dataset.stack, content: e.dataset.content })));
    const cancelling = stacks.find((s) => s.content.length > 1 && s.content.endsWith(colour));
    if (cancelling) { choice = { colour, stack: cancelling.n, cancels: true }; break; }
    if (!choice && stacks.length) choice = { colour, stack: stacks[0].n, cancels: false };
  }
  const before = await moveCount(page);
  await page.click(`.hand.mine .chip[data-colour="${choice.colour}"]`);
  await page.click(`.stack[data-stack="${choice.stack}"]`);
  await page.waitForFunction((n) => document.querySelectorAll("ol.moves li").length > n, before);
  return choice;
}

async function api(method, body) {
  const response = await fetch(`${server.url}ziggurat.v1.MatchService/${method}`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
  });
  return response.json();
}

test("two browsers and a bot play Kabaleo while a third browser watches", { timeout: 240_000 }, async () => {
  const ada = await newPage(true);
  const bea = await newPage(false);
  const eve = await newPage(true);

  await ada.goto(server.url);
  await ada.fill("#name", "Ada");
  await ada.selectOption("#game", "kabaleo");
  await ada.selectOption("#seats", "3");
  await ada.selectOption("select.opponent[data-index='2']", "random");
  await ada.selectOption("#clock", "move30");
  await ada.click("#create");
  await ada.waitForURL(/#\/match\//);
  const matchId = ada.url().split("/").pop();
  await ada.waitForSelector(".add-bots");
  await shot(ada, "kabaleo-waiting-for-players");

  await bea.goto(server.url);
  await bea.fill("#name", "Bea");
  await bea.click(`button.join[data-match="${matchId}"]`);
  await bea.waitForSelector(".kabaleo .stacks");
  await ada.waitForSelector(".kabaleo .stacks");
  await eve.goto(`${server.url}#/match/${matchId}`);
  await eve.waitForSelector(".kabaleo .stacks");
  assert.ok(await eve.$(".spectating"), "the third browser is a spectator");
  assert.equal(await eve.$(".secret"), null, "a spectator has no secret colour");

  // Each player sees their own secret colour and its live score.
  for (const page of [ada, bea]) {
    const secret = await page.getAttribute(".secret", "data-secret");
    assert.match(secret, /^[RYGBOP]$/);
    const stacks = await page.$$eval(".stack", (els) => els.map((e) => e.dataset.content));
    const mine = stacks.filter((s) => s.endsWith(secret));
    const covered = mine.filter((s) => s.length > 1);
    const expected = `${mine.length}/${covered.length}/${Math.max(0, ...covered.map((s) => s.length))}`;
    assert.equal(await page.getAttribute(".secret .score", "data-score"), expected);
  }
  await shot(ada, "kabaleo-player-view");

  let played = 0;
  let cancelled = false;
  let reloaded = false;
  let clockChecked = false;
  for (let round = 0; round < 400; round++) {
    if (await ada.$(".end .result") && await bea.$(".end .result")) break;
    let progressed = false;
    for (const page of [ada, bea]) {
      if (await page.$(".end .result")) continue;
      const choice = await playIfMyTurn(page);
      if (!choice) continue;
      progressed = true;
      played++;
      if (choice.cancels && !cancelled) {
        cancelled = true;
        const move = `${choice.colour}${choice.stack}`;
        const items = await page.$$eval("ol.moves li", (lis) => lis.map((li) => ({ cls: li.className, text: li.textContent })));
        // The whole move, not a prefix: "R1" must not find a later "random (bot): R12".
        const mine = items.filter((i) => new RegExp(`: ${move}( |$)`).test(i.text)).pop();
        assert.equal(mine.cls, "cancelled", JSON.stringify(items));
        assert.match(mine.text, /cancelled/);
        await shot(page, "kabaleo-cancellation");
      }
      if (choice.cancels) {
        const move = `${choice.colour}${choice.stack}`;
        const items = await page.$$eval("ol.moves li", (lis) => lis.map((li) => li.className + li.textContent));
        assert.ok(items.some((i) => i.startsWith("cancelled") && i.includes(`: ${move}`)));
      }
      if (played === 5 && !reloaded) {
        // A reload mid-game keeps the seat (the token is in localStorage).
        const seat = await bea.getAttribute("li.seat.me", "data-seat");
        await bea.reload();
        await bea.waitForSelector(".kabaleo .stacks");
        await bea.waitForSelector("li.seat.me");
        assert.equal(await bea.getAttribute("li.seat.me", "data-seat"), seat);
        assert.ok(await bea.$(".hand.mine"));
        assert.equal(await bea.$(".spectating"), null);
        await shot(bea, "kabaleo-after-reload");
        reloaded = true;
      }
    }
    if (!clockChecked) {
      // The spectator's clock for the seat to move agrees with the player's (within 2 s).
      const spectator = await eve.$eval(".seats li.to-move .clock", (e) => e.textContent).catch(() => null);
      const player = await ada.$eval(".seats li.to-move .clock", (e) => e.textContent).catch(() => null);
      if (spectator && player) {
        const s = parseFloat(spectator);
        const p = parseFloat(player);
        assert.ok(s <= 30 && Math.abs(s - p) < 2, `spectator clock ${s} vs player ${p}`);
        await shot(eve, "kabaleo-spectator");
        clockChecked = true;
      }
    }
    if (!progressed) await ada.waitForTimeout(100);
  }
  for (const page of [ada, bea, eve]) await page.waitForSelector(".end .result");
  assert.ok(reloaded && clockChecked);
  assert.ok(played >= 20, `the two people played their 20 moves (${played})`);
  assert.ok(cancelled, "a cancellation happened and was shown");
  await shot(ada, "kabaleo-end-screen");
  await shot(eve, "kabaleo-end-screen-spectator");
  for (const page of [ada, bea, eve]) {
    assert.equal(await page.$$eval("table.ranks tbody tr .swatch", (s) => s.length), 3, "every objective is revealed");
    assert.match(await page.textContent(".end .seed"), /matches the commitment/);
    assert.match(await page.textContent(".end .why"), /every piece was placed/);
    assert.deepEqual(page.errors, []);
  }

  // Secrecy on the web path: decode every byte the seat and the spectator received.
  const { check } = await loadSecrecy();
  const seed = (await api("GetMatch", { matchId })).match.revealedSeed;
  assert.match(seed, /^[0-9a-f]{64}$/);
  const adaSeat = await ada.evaluate((id) => JSON.parse(localStorage.getItem("ziggurat.seats"))[id].seat, matchId);
  for (const [page, seat] of [[ada, adaSeat], [eve, 0]]) {
    const chunks = await page.evaluate(() => window.__zigChunks);
    const report = check(chunks, seat, matchId, seed);
    assert.deepEqual(report.violations, []);
    assert.ok(report.viewsChecked >= 30, `views checked: ${report.viewsChecked}`);
    assert.ok(report.bytesBeforeEnd > 1000);
    if (seat) assert.ok(report.ownObjectiveSeen >= 30, "the check sees the seat's own objective, so it can see one");
  }

  // The replay viewer steps through the finished match, revealing the objectives at the end.
  await eve.click("a.to-replay");
  await eve.waitForFunction(() => /move 0 of 30/.test(document.querySelector("#replay-ply")?.textContent ?? ""));
  const start = await eve.$$eval(".stack", (els) => els.map((e) => e.dataset.content));
  assert.ok(start.every((s) => s.length === 1), "the start shows bare bases");
  await eve.click("#replay-next");
  await eve.click("#replay-next");
  assert.match(await eve.textContent("#replay-ply"), /move 2 of 30/);
  await shot(eve, "kabaleo-replay-move-2");
  await eve.click("#replay-last");
  assert.equal(await eve.$$eval(".hand .objective", (o) => o.length), 3, "the last step reveals the objectives");
  await shot(eve, "kabaleo-replay-end");
});
