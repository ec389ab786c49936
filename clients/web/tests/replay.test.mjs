// The replay: the players' names, a numbered move list (each move's notation and who played
// it) where a click jumps to that move, the arrow keys one move per press (also with the slider
// focused, whose own key handling would add a second), Home and End; it fits a 390 px phone.
// The game is a Pylos draw by repetition played through the API, as any program may.
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

const MOVES = ["1a1", "1d4", "1b1", "1c4", "1a2", "1d3", "1b2x1b2", "1c3x1c3", "1b2x1b2", "1c3x1c3"];

async function finishedGame() {
  const created = await callApi(server, "CreateMatch", { config: { game: "GAME_PYLOS", seats: 2 }, seatAssignment: "SEAT_ASSIGNMENT_CHOSEN" });
  const matchId = created.match.matchId;
  const ada = await callApi(server, "JoinMatch", { matchId, playerName: "Ada", seat: 1 });
  const bea = await callApi(server, "JoinMatch", { matchId, playerName: "Bea", seat: 2 });
  for (const [ply, move] of MOVES.entries()) await callApi(server, "SubmitMove", { matchId, move, ply }, [ada.token, bea.token][ply % 2]);
  return matchId;
}

const ply = async (page) => Number((await page.textContent("#replay-ply")).match(/move (\d+) of/)[1]);

test("the replay's move list, names, clicks and keys (one move per key press)", { timeout: 120_000 }, async () => {
  const matchId = await finishedGame();
  const page = await chrome.browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${server.url}#/replay/${matchId}`);
  await page.waitForSelector("#replay-moves button.ply[data-ply='10']");
  assert.equal(await page.textContent("#replay-players"), "Players: Light Ada · Dark Bea");
  const items = await page.$$eval("#replay-moves button.ply", (bs) => bs.map((b) => b.textContent));
  assert.equal(items.length, 11);
  assert.equal(items[0], "start");
  assert.equal(items[1], "1. 1a1 Light (Ada)");
  assert.equal(items[8], "8. 1c3x1c3 Dark (Bea)");
  // A click on a move jumps there.
  await page.click("#replay-moves button.ply[data-ply='7']");
  assert.equal(await ply(page), 7);
  assert.equal(await page.getAttribute("#replay-moves button.ply[data-ply='7']", "aria-current"), "step");
  assert.equal(await page.textContent("#replay-caption"), "Light played 1b2x1b2.");
  // The arrow keys: one move per press, whatever has the focus.
  await page.keyboard.press("ArrowRight");
  assert.equal(await ply(page), 8);
  await page.focus("#replay-slider");
  await page.keyboard.press("ArrowRight");
  assert.equal(await ply(page), 9, "→ with the slider focused moves one move, not two");
  await page.keyboard.press("ArrowLeft");
  await page.keyboard.press("ArrowLeft");
  assert.equal(await ply(page), 7);
  assert.equal(await page.inputValue("#replay-slider"), "7");
  await page.keyboard.press("Home");
  assert.equal(await ply(page), 0);
  await page.keyboard.press("ArrowLeft");
  assert.equal(await ply(page), 0, "no move before the start");
  await page.keyboard.press("End");
  assert.equal(await ply(page), 10);
  assert.match(await page.textContent("#replay-caption"), /Game over: Draw/);
  await page.focus("#replay-moves button.ply[data-ply='3']");
  await page.keyboard.press("ArrowLeft");
  assert.equal(await ply(page), 9, "a focused move button does not add a move either");
  await shot(page, "replay-desktop");
  assert.deepEqual(errors, []);
});

test("the replay fits a 390 px phone, with touch targets of 44 px", { timeout: 120_000 }, async () => {
  const matchId = await finishedGame();
  const context = await chrome.browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
  const page = await context.newPage();
  await page.goto(`${server.url}#/replay/${matchId}`);
  await page.waitForSelector("#replay-moves button.ply[data-ply='10']");
  await page.keyboard.press("End");
  assert.deepEqual(await overflowing(page), []);
  assert.deepEqual(await smallTargets(page), []);
  await shot(page, "replay-phone");
  await context.close();
});

test("while the record is on its way the replay's controls are disabled and the page says it is loading", { timeout: 120_000 }, async () => {
  const matchId = await finishedGame();
  const page = await chrome.browser.newPage({ viewport: { width: 1280, height: 900 } });
  // The server stalls the record: the WatchMatch call is held until the test lets it through.
  let release;
  const released = new Promise((resolve) => { release = resolve; });
  let held = 0;
  await page.route("**/ziggurat.v1.MatchService/WatchMatch", async (route) => {
    held += 1;
    await released;
    await route.continue();
  });
  await page.goto(`${server.url}#/replay/${matchId}`);
  await page.waitForFunction(() => document.querySelector("#replay-players")?.textContent.startsWith("Players:"));
  assert.equal(held, 1, "the record was asked for and is held");
  const controls = ["#replay-first", "#replay-prev", "#replay-next", "#replay-last", "#replay-slider"];
  for (const control of controls) assert.equal(await page.isDisabled(control), true, `${control} before the record`);
  assert.equal(await page.textContent("#replay-caption"), "Loading the game's record…");
  await page.keyboard.press("End");
  assert.equal(await page.textContent("#replay-ply"), "", "a key does nothing before the record");
  await shot(page, "replay-loading");
  release();
  await page.waitForSelector("#replay-moves button.ply[data-ply='10']");
  for (const control of controls) assert.equal(await page.isDisabled(control), false, `${control} with the record`);
  assert.equal(await page.textContent("#replay-caption"), "The start.");
  await page.click("#replay-last");
  assert.match(await page.textContent("#replay-ply"), /^move 10 of 10$/);
  await page.close();
});

test("the replay of a match still running says so, with its controls disabled and no loading words", { timeout: 60_000 }, async () => {
  const created = await callApi(server, "CreateMatch", { config: { game: "GAME_PYLOS", seats: 2 } });
  const page = await chrome.browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(`${server.url}#/replay/${created.match.matchId}`);
  await page.waitForFunction(() => document.querySelector("p.message")?.textContent.startsWith("This match is still running"));
  assert.equal(await page.textContent("#replay-caption"), "");
  for (const control of ["#replay-first", "#replay-next", "#replay-slider"]) assert.equal(await page.isDisabled(control), true, control);
  await page.close();
});
