// The words of the match page: a Pylos draw by repetition reads as a draw (not a shared win with
// two first places), every ending is a sentence, a timed-out player's clock reads 0.0, a waiting
// timed match shows each seat's whole time, and three `mcts` bots at one table are told apart.
// Moves are made through the API (as any program may); the page watches as one of the players.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { callApi, launchBrowser, pageWithSeat, shot, startServer } from "./harness.mjs";

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

/** A Pylos match with Ada (Light, seat 1) and Bea (Dark, seat 2) seated; their tokens. */
async function pylosMatch(timeControl = {}) {
  const created = await callApi(server, "CreateMatch", {
    config: { game: "GAME_PYLOS", seats: 2 }, seatAssignment: "SEAT_ASSIGNMENT_CHOSEN", timeControl,
  });
  const matchId = created.match.matchId;
  const ada = await callApi(server, "JoinMatch", { matchId, playerName: "Ada", seat: 1 });
  const bea = await callApi(server, "JoinMatch", { matchId, playerName: "Bea", seat: 2 });
  return { matchId, tokens: [ada.token, bea.token] };
}

// Each side fills three places of a 2x2 block of its own, then places its fourth ball and
// takes it straight back (a square lets a player recover it): the position after the six
// placements, Light to move, comes back after every two such moves, a third time at move 10.
const REPETITION = ["1a1", "1d4", "1b1", "1c4", "1a2", "1d3", "1b2x1b2", "1c3x1c3", "1b2x1b2", "1c3x1c3"];

test("a Pylos draw by repetition reads as a draw, in a sentence", { timeout: 120_000 }, async () => {
  const { matchId, tokens } = await pylosMatch();
  const page = await pageWithSeat(chrome, { width: 1000, height: 800 }, { matchId, seat: 1, token: tokens[0], name: "Ada" });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${server.url}#/match/${matchId}`);
  await page.waitForSelector("svg.pyramid");
  for (const [ply, move] of REPETITION.entries()) {
    await callApi(server, "SubmitMove", { matchId, move, ply }, tokens[ply % 2]);
  }
  await page.waitForSelector(".end .result");
  assert.equal(await page.textContent(".end .result"), "Draw");
  assert.equal(await page.textContent(".end .why"), "The game ended in a draw when the same position occurred for the third time.");
  assert.deepEqual(await page.$$eval("table.ranks th", (ths) => ths.map((th) => th.textContent)), ["Result", "Player"]);
  assert.deepEqual(await page.$$eval("table.ranks td.rank", (tds) => tds.map((td) => td.textContent)), ["draw", "draw"]);
  assert.equal(await page.$$eval("ol.moves li", (items) => items.length), 10);
  await shot(page, "words-pylos-draw-by-repetition");
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, "words-pylos-draw-by-repetition-phone");
  // The replay's last step says the same.
  await page.click("a.to-replay");
  // (the replay's buttons are drawn before its record arrives: wait for the tenth move's step)
  await page.waitForSelector("#replay-moves button.ply[data-ply='10']");
  await page.click("#replay-last");
  assert.equal(await page.textContent("#replay-caption"),
    "Dark played 1c3x1c3. Game over: Draw. The game ended in a draw when the same position occurred for the third time.");
  assert.deepEqual(errors, []);
});

test("a timed-out player's clock reads 0.0, and the ending names her", { timeout: 120_000 }, async () => {
  const { matchId, tokens } = await pylosMatch({ baseMs: 4000, incrementMs: 0, onTimeout: "TIMEOUT_POLICY_FORFEIT" });
  const page = await pageWithSeat(chrome, { width: 1000, height: 800 }, { matchId, seat: 2, token: tokens[1], name: "Bea" });
  await page.goto(`${server.url}#/match/${matchId}`);
  await page.waitForSelector(".end .result", { timeout: 30_000 });
  assert.equal(await page.textContent(".end .result"), "Dark (Bea) wins");
  assert.equal(await page.textContent(".end .why"), "The game ended when Light (Ada) ran out of time.");
  assert.equal(await page.textContent('.seats li[data-seat="1"] .clock'), "0.0 s");
  assert.equal(await page.textContent('.seats li[data-seat="2"] .clock'), "4.0 s");
  await shot(page, "words-timed-out");
  // A page opened after the end reads the same clocks from the match itself.
  await page.reload();
  await page.waitForSelector(".end .result");
  assert.equal(await page.textContent('.seats li[data-seat="1"] .clock'), "0.0 s");
});

test("a waiting timed match shows each seat's whole time, and three mcts bots are told apart", { timeout: 120_000 }, async () => {
  const created = await callApi(server, "CreateMatch", {
    config: { game: "GAME_KABALEO", seats: 4 }, timeControl: { baseMs: 300000, incrementMs: 3000, onTimeout: "TIMEOUT_POLICY_FORFEIT" },
  });
  const matchId = created.match.matchId;
  for (let i = 0; i < 3; i++) await callApi(server, "AddBot", { matchId, bot: "mcts" });
  const page = await chrome.browser.newPage({ viewport: { width: 1000, height: 800 } });
  await page.goto(`${server.url}#/match/${matchId}`);
  await page.waitForSelector(".seats li .clock");
  const seats = await page.$$eval(".seats li", (lis) => lis.map((li) => [li.querySelector(".name").textContent, li.querySelector(".clock")?.textContent]));
  const bots = seats.filter(([name]) => name.startsWith("mcts"));
  assert.equal(bots.length, 3);
  assert.equal(new Set(bots.map(([name]) => name)).size, 3, `told apart: ${bots}`);
  for (const [name] of bots) assert.match(name, /^mcts \(bot, seat [1-4]\)$/);
  assert.deepEqual(seats.map(([, clock]) => clock), ["5:00", "5:00", "5:00", "5:00"]);
  // The add-bot buttons explain each bot in plain words (no docstring markup).
  const tip = await page.getAttribute('button.add-bot[data-bot="random"]', "title");
  assert.equal(tip, "Picks uniformly among turn.legal_moves; seedable so games are reproducible.");
  await shot(page, "words-waiting-timed-three-mcts");
});
