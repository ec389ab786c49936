// A seat survives a server restart in the browser: the `ziggurat serve` subprocess is stopped
// (SIGTERM) and started again on the same database and the same ports, mid-game.
// * A person against a built-in bot: the page is left as it is (no reload: it reconnects by
//   itself and resumes its stream after the last event it saw), the server re-seats its bot,
//   and the game is played on to the end.
// * Two people (two browser contexts, each with its own localStorage): one page is left as it
//   is, the other is reloaded once the server is back (it finds its seat token in
//   localStorage); both play on to the end.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { freePort, launchBrowser, shot, sleep, startServer } from "./harness.mjs";
import { clickOneMove } from "./pylos-clicks.mjs";

let server;
let chrome;
before(async () => {
  server = await startServer({ port: await freePort(), httpPort: await freePort() });
  chrome = await launchBrowser();
});
after(async () => {
  await chrome?.close();
  await server?.stop();
});

const OUR_TURN = "svg.pyramid .place.target, svg.pyramid .place.source, svg.pyramid .place.recoverable";

/** Clicks for whichever page has the turn until the move list holds `total` moves or the game
 * is over (a click that makes a square is followed by the recovery clicks). */
async function playUntil(pages, total) {
  for (;;) {
    if (await pages[0].$(".end .result")) return;
    if ((await movesShown(pages[0])).length >= total) return;
    for (const page of pages) {
      if (await page.$(OUR_TURN)) await clickOneMove(page);
    }
    await sleep(50);
  }
}

async function movesShown(page) {
  return page.$$eval("ol.moves li", (items) => items.map((i) => i.textContent));
}

test("a person's seat against a built-in bot survives a server restart, and the bot plays on", { timeout: 300_000 }, async () => {
  const page = await (await chrome.browser.newContext({ viewport: { width: 1200, height: 860 } })).newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(server.url);
  await page.fill("#name", "Ada");
  await page.selectOption("#game", "pylos");
  await page.selectOption("select.opponent", "random");
  await page.click("#create");
  await page.waitForSelector("svg.pyramid");
  const matchId = page.url().split("/").pop();
  await playUntil([page], 8);
  // Stop the server while it is the person's turn (the bot has answered).
  await page.waitForSelector(OUR_TURN);
  const before = await movesShown(page);
  await server.restart(); // same database, same ports; the page is not reloaded
  await page.waitForFunction((n) => document.querySelectorAll("ol.moves li").length >= n, before.length);
  await page.waitForFunction(() => document.querySelector(".connection")?.hidden, null, { timeout: 60_000 });
  assert.deepEqual((await movesShown(page)).slice(0, before.length), before);
  await shot(page, "restart-bot-resumed");
  // The person moves, and the restored bot answers: two moves of each side after the restart.
  await playUntil([page], before.length + 4);
  const sides = (await movesShown(page)).slice(before.length).map((m) => m.split(":")[0]);
  assert.equal(new Set(sides).size, 2, `both sides moved after the restart: ${sides}`);
  await playUntil([page], Infinity);
  await page.waitForSelector(".end .result", { timeout: 60_000 });
  await shot(page, "restart-bot-end-screen");
  assert.match(await page.textContent(".end .seed"), /matches the commitment/);
  const record = await (await fetch(`${server.url}ziggurat.v1.MatchService/GetMatchRecord`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ matchId }),
  })).json();
  assert.notEqual(record.record.outcome.termination, "TERMINATION_TIMEOUT");
  assert.deepEqual(errors, []);
});

test("both seats of a Pylos match survive a server restart, with and without a reload", { timeout: 300_000 }, async () => {
  const ada = await (await chrome.browser.newContext({ viewport: { width: 1200, height: 860 } })).newPage();
  const bob = await (await chrome.browser.newContext({ viewport: { width: 1200, height: 860 } })).newPage();
  const errors = [];
  for (const page of [ada, bob]) page.on("pageerror", (e) => errors.push(e.message));
  await ada.goto(server.url);
  await ada.fill("#name", "Ada");
  await ada.selectOption("#game", "pylos");
  await ada.click("#create");
  await ada.waitForURL(/#\/match\//);
  const matchId = ada.url().split("/").pop();
  await bob.goto(server.url);
  await bob.fill("#name", "Bob");
  await bob.click(`button.join[data-match="${matchId}"]`);
  await bob.waitForURL(new RegExp(`#/match/${matchId}`));
  for (const page of [ada, bob]) await page.waitForSelector("svg.pyramid");
  await playUntil([ada, bob], 6);
  const before = await movesShown(ada);
  assert.ok(before.length >= 6);

  await server.halt();
  // Both pages notice and keep trying.
  for (const page of [ada, bob]) {
    await page.waitForFunction(() => /Connection lost|restarting/.test(document.querySelector(".connection")?.textContent ?? ""), null, { timeout: 30_000 });
  }
  await shot(ada, "restart-server-down");
  await server.launch(); // same database, same ports
  await bob.reload(); // the page is served by the server too: reloaded once it is back
  await bob.waitForSelector("svg.pyramid", { timeout: 60_000 });

  // Both pages are back on their seats, with every move made before the restart.
  for (const [page, name] of [[ada, "Ada"], [bob, "Bob"]]) {
    await page.waitForFunction((n) => document.querySelectorAll("ol.moves li").length >= n, before.length, { timeout: 60_000 });
    await page.waitForFunction(() => document.querySelector(".connection")?.hidden, null, { timeout: 60_000 });
    assert.deepEqual((await movesShown(page)).slice(0, before.length), before);
    assert.ok((await page.$$eval(".seats li.me .name", (els) => els.map((e) => e.textContent))).includes(`${name} (you)`), `${name} still holds the seat`);
    assert.equal(await page.$(".spectating"), null, `${name} is not a spectator`);
  }
  await shot(ada, "restart-resumed-without-reload");
  await shot(bob, "restart-resumed-after-reload");

  // And play on to the end.
  await playUntil([ada, bob], Infinity);
  for (const page of [ada, bob]) await page.waitForSelector(".end .result", { timeout: 60_000 });
  await shot(ada, "restart-end-screen");
  const after = await movesShown(ada);
  assert.ok(after.length > before.length);
  assert.deepEqual(await movesShown(bob), after, "both pages saw the same game");
  assert.match(await ada.textContent(".end .seed"), /matches the commitment/);
  const record = await (await fetch(`${server.url}ziggurat.v1.MatchService/GetMatchRecord`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ matchId }),
  })).json();
  // The server's record is the game both pages showed, and no move was played for a seat.
  assert.deepEqual(record.record.moves.map((m) => m.move), after.map((text) => text.split(": ")[1].split(" ")[0]));
  assert.equal(record.record.outcome.termination === "TERMINATION_TIMEOUT", false);
  assert.deepEqual(errors, []);
});
