// A person whose opponent never came (or left) claims the game from the page: a note counts the
// time the opponent has been away, then, after the server's --claim-after, a button ends the
// game (ClaimAbandoned) and the end screen says why. Real server, real browser.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertAccessible } from "./a11y.mjs";
import { callApi, launchBrowser, pageWithSeat, shot, startServer } from "./harness.mjs";

let server;
let chrome;
before(async () => {
  server = await startServer({ extra: ["--claim-after", "8"] });
  chrome = await launchBrowser();
});
after(async () => {
  await chrome?.close();
  await server?.stop();
});

test("an opponent who never came is claimed from the page after --claim-after", { timeout: 120_000 }, async () => {
  const created = await callApi(server, "CreateMatch", {
    config: { game: "GAME_PYLOS", seats: 2 }, seatAssignment: "SEAT_ASSIGNMENT_CHOSEN",
  });
  const matchId = created.match.matchId;
  assert.equal(created.match.claimAfterMs, 8000);
  const ada = await callApi(server, "JoinMatch", { matchId, playerName: "Ada", seat: 1 });
  await callApi(server, "JoinMatch", { matchId, playerName: "Bea", seat: 2 }); // Bea never opens a stream
  const page = await pageWithSeat(chrome, { width: 1000, height: 800 }, { matchId, seat: 1, token: ada.token, name: "Ada" });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${server.url}#/match/${matchId}`);
  await page.waitForSelector("svg.pyramid");
  // First the note, counting; no button yet.
  await page.waitForSelector(".away-note:not([hidden])");
  assert.match(await page.textContent(".away-note"), /^Bea is away \(\d+\.\d s\); the game can be claimed after 8\.0 s\.$/);
  assert.equal(await page.isHidden("button.claim"), true);
  await shot(page, "claim-waiting");
  // Then the button, which the keyboard reaches too.
  await page.waitForSelector("button.claim:not([hidden])", { timeout: 30_000 });
  assert.equal(await page.textContent("button.claim"), "Claim the game: Bea left");
  assert.equal(await page.isHidden(".away-note"), true);
  await assertAccessible(page, "claim button");
  await shot(page, "claim-due");
  await page.focus("button.claim");
  await page.keyboard.press("Enter");
  await page.waitForSelector(".end .result");
  assert.equal(await page.textContent(".end .result"), "Light (Ada) wins");
  assert.equal(await page.textContent(".end .why"), "The game ended when Dark (Bea) left and the game was claimed.");
  await shot(page, "claim-ended");
  const record = await callApi(server, "GetMatchRecord", { matchId });
  assert.equal(record.record.outcome.termination, "TERMINATION_ABANDONED");
  assert.deepEqual(errors, []);
});

test("a spectator is offered no claim", { timeout: 60_000 }, async () => {
  const created = await callApi(server, "CreateMatch", { config: { game: "GAME_PYLOS", seats: 2 } });
  const matchId = created.match.matchId;
  await callApi(server, "JoinMatch", { matchId, playerName: "Ada" });
  await callApi(server, "JoinMatch", { matchId, playerName: "Bea" });
  const page = await pageWithSeat(chrome, { width: 1000, height: 800 }, null);
  await page.goto(`${server.url}#/match/${matchId}`);
  await page.waitForSelector("svg.pyramid");
  await new Promise((resolve) => setTimeout(resolve, 8500));
  assert.equal(await page.isHidden("button.claim"), true);
  assert.equal(await page.isHidden(".away-note"), true);
  await page.close();
});
