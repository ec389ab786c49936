// The generic board (src/generic.ts): the position in notation and the legal moves as buttons,
// what a game with no drawing of its own gets, and the "Notation view" a reader may choose for
// Pylos and Kabaleo. A whole Pylos game against the `random` built-in bot on a real
// `ziggurat serve`, played through the notation view with the keyboard only (Space turns the
// view on, Tab and Enter play): the position text is the server's on every turn, the focus stays on
// the moves between turns, the end screen comes; the choice is remembered after a reload; axe
// checks the game, the end screen and the replay (stepped in the notation view too). A spectator
// sees the same text and no moves; on a 390 px phone nothing is wider than the screen and every
// move is a 44 px touch target. Without a browser: a game this build does not know is named by
// its number and has no drawing (so it gets the generic board).
import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, test } from "node:test";
import { assertAccessible, assertFitsWidth, assertTouchTargets, focused, tabTo } from "./a11y.mjs";
import { callApi, launchBrowser, pageWithSeat, shot, startServer } from "./harness.mjs";

const here = dirname(fileURLToPath(import.meta.url));

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

const position = (page) => page.textContent(".generic pre.position");
const plies = (page) => page.$$eval("ol.moves li", (items) => items.length);

/** The position text on the page is the one the server writes for the match (within 10 s:
 * the page draws what its stream brings, a moment after the server). */
async function shownIsServers(page, matchId) {
  let shown = "", servers = "";
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await new Promise((r) => setTimeout(r, 100))) {
    shown = await position(page);
    servers = (await callApi(server, "GetMatch", { matchId })).match.view.position;
    if (shown === servers) return;
  }
  assert.equal(shown, servers, "the position shown is the server's");
}

async function pylosMatch() {
  const created = await callApi(server, "CreateMatch", { config: { game: "GAME_PYLOS", seats: 2 }, seatAssignment: "SEAT_ASSIGNMENT_CHOSEN" });
  const matchId = created.match.matchId;
  const ada = await callApi(server, "JoinMatch", { matchId, playerName: "Ada", seat: 1 });
  return { matchId, ticket: { matchId, seat: 1, token: ada.token, name: "Ada" } };
}

test("a whole Pylos game played through the notation view with Tab and Enter only", { timeout: 400_000 }, async () => {
  const { matchId, ticket } = await pylosMatch();
  const page = await pageWithSeat(chrome, { width: 1200, height: 900 }, ticket);
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${server.url}#/match/${matchId}`);
  await page.waitForSelector(".add-bots button[data-bot=random]");
  await callApi(server, "AddBot", { matchId, bot: "random" });
  await page.waitForSelector("svg.pyramid .place.target");
  // Off by default: the drawn board, and the switch unticked.
  assert.equal(await page.isChecked("#notation-view"), false);
  assert.equal(await page.$(".generic"), null);

  await tabTo(page, "#notation-view");
  await page.keyboard.press("Space");
  await page.waitForSelector(".generic button.legal-move");
  assert.equal(await page.$("svg.pyramid"), null, "the notation view replaces the drawing");
  assert.equal(await page.textContent(".generic-title"), "Pylos: the position in notation");
  const start = await position(page);
  assert.match(start, /^\.{16}\/\.{9}\/\.{4}\/\. L$/, "the position as the server writes it");
  assert.match(await page.textContent(".generic-turn"), /^Your move/);
  assert.equal(await page.textContent(".generic-moves-title"), "16 legal moves");
  assert.equal(await page.$$eval("button.legal-move", (b) => b.length), 16);

  // Remembered in this browser: a reload shows the notation view again.
  await page.reload();
  await page.waitForSelector(".generic button.legal-move");
  assert.equal(await page.isChecked("#notation-view"), true);
  await tabTo(page, "button.legal-move");
  await shot(page, "generic-pylos-start");
  await assertAccessible(page, "the notation view of a Pylos game");

  let played = 0;
  for (let step = 0; step < 200; step++) {
    await page.waitForSelector(".end .result, .generic button.legal-move", { timeout: 60_000 });
    if (await page.$(".end .result")) break;
    const before = await plies(page);
    // The position shown on our turn is the server's (the bot waits for us, so the server's
    // stands still). Not "it changed since our last turn": a square's take-back on each side
    // brings the same position back, as random play sometimes does.
    await shownIsServers(page, matchId);
    if (played) assert.match(await focused(page), /^button\[move=/, "the focus is back on the moves when the turn comes");
    // Now and then a move further along the row: Tab walks the buttons.
    const count = await page.$$eval("button.legal-move", (b) => b.length);
    for (let i = 0; i < step % Math.min(3, count); i++) await page.keyboard.press("Tab");
    const move = await page.evaluate(() => document.activeElement?.getAttribute("data-move"));
    assert.ok(move, `a legal move has the focus (not ${await focused(page)})`);
    await page.keyboard.press("Enter");
    await page.waitForFunction((n) => document.querySelectorAll("ol.moves li").length > n || document.querySelector(".end .result"), before, { timeout: 60_000 });
    played++;
    assert.match(await page.$eval("ol.moves li:nth-child(" + (before + 1) + ")", (li) => li.textContent), new RegExp(`^Light: ${move.replace(/[-]/g, "\\-")}`));
    if (played === 6) {
      await page.waitForSelector(".end .result, .generic button.legal-move", { timeout: 60_000 });
      await shot(page, "generic-pylos-in-progress");
      await assertAccessible(page, "a Pylos game in progress, notation view");
    }
  }
  await page.waitForSelector(".end .result");
  assert.ok(played >= 5, `a whole game: ${played} moves of ours`);
  await shownIsServers(page, matchId);
  assert.equal(await page.textContent(".generic-turn"), "The game is over.");
  assert.equal(await page.$$eval("button.legal-move", (b) => b.length), 0);
  assert.notEqual(await position(page), start);
  await shot(page, "generic-pylos-end");
  await assertAccessible(page, "the Pylos end screen, notation view");

  // The replay, in the notation view as chosen: the position text steps with the arrow keys.
  await tabTo(page, "a.to-replay");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => /move 0 of \d+/.test(document.querySelector("#replay-ply")?.textContent ?? ""));
  await page.waitForSelector(".generic pre.position");
  assert.equal(await position(page), start);
  await page.keyboard.press("ArrowRight");
  await page.waitForFunction(() => /move 1 of/.test(document.querySelector("#replay-ply")?.textContent ?? ""));
  assert.notEqual(await position(page), start);
  assert.match(await page.textContent(".generic-last"), /^Last move: /);
  await page.keyboard.press("End");
  assert.equal(await page.textContent(".generic-turn"), "The game is over.");
  await shot(page, "generic-pylos-replay");
  await assertAccessible(page, "the replay, notation view");
  assert.deepEqual(errors, []);
});

test("on a 390 px phone: the moves are 44 px buttons, nothing scrolls sideways; a spectator sees the text", { timeout: 120_000 }, async () => {
  const { matchId, ticket } = await pylosMatch();
  await callApi(server, "AddBot", { matchId, bot: "random" });
  const context = await chrome.browser.newContext({ viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true, deviceScaleFactor: 1 });
  await context.addInitScript((t) => {
    localStorage.setItem("ziggurat.seats", JSON.stringify({ [t.matchId]: t }));
    localStorage.setItem("ziggurat.notation", "1");
  }, ticket);
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${server.url}#/match/${matchId}`);
  for (let i = 0; i < 4; i++) {
    await page.waitForSelector(".generic button.legal-move");
    const before = await plies(page);
    await page.tap(".generic button.legal-move");
    await page.waitForFunction((n) => document.querySelectorAll("ol.moves li").length > n + 1, before);
  }
  await page.waitForSelector(".generic button.legal-move");
  await assertFitsWidth(page, "the notation view on a phone");
  await assertTouchTargets(page, ".generic button.legal-move, .main button, .main input:not([type=checkbox]), .side button, .top button, .notation-toggle", "the notation view on a phone");
  await shot(page, "generic-pylos-phone");
  await assertAccessible(page, "the notation view on a phone");

  // A spectator (no seat) with the notation view: the same position, no moves to press.
  const watcher = await pageWithSeat(chrome, { width: 1000, height: 800 }, null);
  await watcher.addInitScript(() => localStorage.setItem("ziggurat.notation", "1"));
  await watcher.goto(`${server.url}#/match/${matchId}`);
  await watcher.waitForSelector(".generic pre.position");
  await watcher.waitForFunction((p) => document.querySelector(".generic pre.position")?.textContent === p, await position(page));
  assert.equal(await watcher.$$eval("button.legal-move", (b) => b.length), 0);
  assert.match(await watcher.textContent(".generic-turn"), /^(Ada|Light|random)|to move\.$/);
  await callApi(server, "Resign", { matchId }, ticket.token);
  await page.waitForSelector(".end .result");
  await assertFitsWidth(page, "the end screen in the notation view on a phone");
  await shot(page, "generic-pylos-phone-end");
  assert.deepEqual(errors, []);
});

test("a game this build does not know: named by its number, no drawing (the generic board)", async () => {
  const { build } = await import("esbuild");
  const entry = "export { hasDrawing } from './src/generic.ts'; export { gameName, optionsText } from './src/text.ts'; export { rulesGameOf } from './src/rules.ts'; export { readMove } from './src/moveentry.ts';";
  const out = await build({ stdin: { contents: entry, resolveDir: join(here, ".."), loader: "ts" }, bundle: true, write: false, format: "esm", platform: "node", logLevel: "warning", preserveSymlinks: true });
  const m = await import(`data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString("base64")}`);
  assert.equal(m.gameName(1), "Pylos");
  assert.equal(m.gameName(99), "game 99");
  assert.equal(m.rulesGameOf(99), null);
  assert.equal(m.optionsText({ game: 99, seats: 2, options: { case: undefined } }), "2 players", "the lobby says what it knows");
  assert.equal(m.hasDrawing({ game: 99, detail: { case: undefined } }), false);
  assert.equal(m.hasDrawing({ game: 1, detail: { case: undefined } }), false, "a Pylos view without its detail has nothing to draw from");
  assert.equal(m.hasDrawing({ game: 1, detail: { case: "pylos" } }), true);
  assert.equal(m.hasDrawing({ game: 2, detail: { case: "kabaleo" } }), true);
  // A typed move in a game with no known notation: one of the legal moves, as written.
  assert.deepEqual(m.readMove("generic", " B2 ", ["a1", "b2"]), { move: "b2" });
  assert.ok("error" in m.readMove("generic", "c3", ["a1", "b2"]));
});
