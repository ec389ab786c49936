// Honest about the network: the server process is frozen (SIGSTOP) for 15 s while it is the
// person's turn. Within 5 s the page says the connection is lost and stops (greys) the clock it
// can no longer vouch for; a move clicked meanwhile is shown as on its way. Once the server runs
// again (SIGCONT) the page says nothing any more, the move is played (or refused, in words),
// and the clocks count with the server's clock again. With the server gone, the lobby says so
// in words, never with the browser's raw error text.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { callApi, launchBrowser, pageWithSeat, shot, sleep, startServer } from "./harness.mjs";

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

const PER_MOVE_MS = 45_000;
const clockOf = (page, seat) => page.$eval(`.seats li[data-seat="${seat}"] .clock`, (e) => ({ text: e.textContent, stale: e.classList.contains("stale") }));

test("a frozen server: the page says so within 5 s, stops the clock, shows a clicked move as pending, and recovers", { timeout: 180_000 }, async () => {
  const created = await callApi(server, "CreateMatch", {
    config: { game: "GAME_PYLOS", seats: 2 }, seatAssignment: "SEAT_ASSIGNMENT_CHOSEN",
    timeControl: { perMoveMs: PER_MOVE_MS, onTimeout: "TIMEOUT_POLICY_FORFEIT" },
  });
  const matchId = created.match.matchId;
  const ada = await callApi(server, "JoinMatch", { matchId, playerName: "Ada", seat: 1 }); // Light: moves first
  const page = await pageWithSeat(chrome, { width: 1000, height: 800 }, { matchId, seat: 1, token: ada.token, name: "Ada" });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${server.url}#/match/${matchId}`);
  await callApi(server, "JoinMatch", { matchId, playerName: "Bea", seat: 2 });
  const turnStarted = Date.now(); // no earlier than the turn's start on the server's clock
  await page.waitForSelector(".seats li.to-move.me .clock");
  await page.waitForSelector("svg.pyramid .place.target");
  assert.equal(await page.isHidden(".connection"), true, "all is well: no banner");

  server.pause();
  const stopped = Date.now();
  await page.waitForFunction(() => /Connection lost/.test(document.querySelector(".connection")?.textContent ?? ""), null, { timeout: 5_000 });
  const noticed = Date.now() - stopped;
  assert.ok(noticed <= 5_000, `noticed after ${noticed} ms`);
  assert.equal(await page.isVisible(".connection"), true);
  // The person's clock is stopped and greyed: it no longer counts down.
  const frozen = await clockOf(page, 1);
  assert.equal(frozen.stale, true, "the clock is greyed");
  await sleep(1_500);
  assert.deepEqual(await clockOf(page, 1), frozen, "the clock stopped");
  await shot(page, "network-lost");

  // A move clicked meanwhile: shown as on its way, not as played, and the board takes no other.
  const target = await page.$eval("svg.pyramid .place.target", (e) => e.dataset.place);
  await page.click(`svg.pyramid .place.target[data-place="${target}"]`);
  await page.waitForSelector(".pending-move:not([hidden])");
  assert.match(await page.textContent(".pending-move"), new RegExp(`Your move ${target} is on its way`));
  assert.equal(await page.$$eval(`svg.pyramid .place.sending[data-place="${target}"]`, (els) => els.length), 1);
  assert.equal(await page.$("svg.pyramid .place.target"), null, "nothing else to click while it is on its way");
  assert.equal(await page.$$eval("ol.moves li", (items) => items.length), 0, "not shown as played");
  await shot(page, "network-lost-move-pending");
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, "network-lost-move-pending-phone");
  await page.setViewportSize({ width: 1000, height: 800 });

  await sleep(Math.max(0, 15_000 - (Date.now() - stopped)));
  server.resume();
  const resumed = Date.now();
  await page.waitForFunction(() => document.querySelector(".connection")?.hidden, null, { timeout: 10_000 });
  await page.waitForFunction(() => document.querySelector(".pending-move")?.hidden, null, { timeout: 10_000 });
  const moves = await page.$$eval("ol.moves li", (items) => items.map((i) => i.textContent));
  const refusal = await page.textContent(".message");
  // Played (the server had 45 s of turn, 15 of them frozen) — or refused, in words.
  assert.ok(moves[0] === `Light: ${target}` || /^Your move \S+ was refused: [A-Z]/.test(refusal), `${moves} / ${refusal}`);
  await page.waitForSelector(".seats li.to-move .clock:not(.stale)");
  // The clock to move counts with the server's clock: Dark's turn began when the move was played
  // (at the resume), else Light's turn goes on from where the server has it (frozen time included).
  const moving = await page.$eval(".seats li.to-move", (li) => Number(li.dataset.seat));
  await page.waitForFunction((seat) => !document.querySelector(`.seats li[data-seat="${seat}"] .clock`).classList.contains("stale"), moving);
  const shown = parseFloat((await clockOf(page, moving)).text);
  const since = moves.length ? resumed : turnStarted;
  const expected = (PER_MOVE_MS - (Date.now() - since)) / 1000;
  assert.ok(Math.abs(shown - expected) < 3, `${moving === 1 ? "Light" : "Dark"} shows ${shown} s, the server ${expected.toFixed(1)} s`);
  await shot(page, "network-recovered");
  assert.deepEqual(errors, []);
});

test("with the server gone the lobby says so in words, not with the browser's error text", { timeout: 120_000 }, async () => {
  const page = await chrome.browser.newPage({ viewport: { width: 1000, height: 800 } });
  await page.goto(server.url);
  await page.waitForSelector("#create");
  await server.halt(); // the list is asked for every 2 s: now refused by a closed port
  await page.waitForFunction(() => /Connection lost/.test(document.querySelector(".connection:not([hidden])")?.textContent ?? ""), null, { timeout: 20_000 });
  assert.equal(await page.getAttribute("section.matches", "class"), "matches stale", "the last list, greyed");
  assert.equal(await page.textContent(".status"), "", "no raw error text");
  await page.fill("#name", "Ada");
  await page.click("#create"); // creating a match: refused in words too
  await page.waitForFunction(() => /cannot be reached/.test(document.querySelector(".status")?.textContent ?? ""), null, { timeout: 10_000 });
  assert.equal(await page.textContent(".status"), "The match was not created. The server cannot be reached.");
  await shot(page, "network-server-down-lobby");
});
