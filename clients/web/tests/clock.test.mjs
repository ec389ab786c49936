// A spectator whose computer's clock is an hour ahead or behind the server's still sees the
// turn's time counting down to the right instant: the page moves the turn's deadline by the
// difference between its clock and the server's (WatchMatchResponse.serverTimeMs), and never
// shows more than the turn's own time.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { launchBrowser, shot, startServer } from "./harness.mjs";

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

async function api(method, body) {
  const response = await fetch(`${server.url}ziggurat.v1.MatchService/${method}`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
  });
  const json = await response.json();
  assert.equal(response.status, 200, JSON.stringify(json));
  return json;
}

/** A spectator page whose Date.now() is off from the real clock by skewMs. */
async function skewedSpectator(skewMs, matchId) {
  const context = await chrome.browser.newContext({ viewport: { width: 1000, height: 800 } });
  await context.addInitScript(`{ const real = Date.now.bind(Date); Date.now = () => real() + ${skewMs}; }`);
  const page = await context.newPage();
  await page.goto(`${server.url}#/match/${matchId}`);
  await page.waitForSelector(".seats li.to-move .clock");
  return page;
}

test("a spectator's clock counts the turn down right whatever its computer's clock says", { timeout: 90_000 }, async () => {
  const created = await api("CreateMatch", {
    config: { game: "GAME_PYLOS", seats: 2 },
    timeControl: { perMoveMs: 30000, onTimeout: "TIMEOUT_POLICY_FORFEIT" },
  });
  const matchId = created.match.matchId;
  await api("JoinMatch", { matchId, playerName: "Ada" });
  await api("JoinMatch", { matchId, playerName: "Bea" });
  const started = Date.now(); // the turn started no later than this (the second join started it)
  await new Promise((resolve) => setTimeout(resolve, 4000)); // let the turn run: a late spectator

  const hour = 3600 * 1000;
  const pages = { ahead: await skewedSpectator(hour, matchId), behind: await skewedSpectator(-hour, matchId), right: await skewedSpectator(0, matchId) };
  const shown = {};
  for (const [name, page] of Object.entries(pages)) {
    // A page in the background may have its timers slowed down by the browser: bring it to
    // the front and read the clock just after it ticks, so that it shows what it thinks now.
    await page.bringToFront();
    const before = await page.$eval(".seats li.to-move .clock", (e) => e.textContent);
    await page.waitForFunction((old) => document.querySelector(".seats li.to-move .clock").textContent !== old, before);
    const expected = (30000 - (Date.now() - started)) / 1000;
    const text = await page.$eval(".seats li.to-move .clock", (e) => e.textContent);
    shown[name] = parseFloat(text);
    // The turn has run at least 4 s; the page may show up to 1.5 s less (the join's
    // round trip, the ticker's 250 ms, rounding) but never more than what is left.
    assert.ok(shown[name] <= expected + 0.6 && shown[name] >= expected - 1.5,
      `${name}: shows ${text} s, expected about ${expected.toFixed(1)} s`);
  }
  await shot(pages.ahead, "clock-spectator-an-hour-ahead");
  // And it keeps counting down.
  await pages.behind.waitForTimeout(1500);
  const later = parseFloat(await pages.behind.$eval(".seats li.to-move .clock", (e) => e.textContent));
  assert.ok(later < shown.behind, `the clock counts down (${shown.behind} then ${later})`);
});
