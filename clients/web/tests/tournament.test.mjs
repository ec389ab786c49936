// The live tournament page: `ziggurat tournament run` with an HTTP port serves the web client and
// TournamentService; a browser opens the page it prints, sees the standings fill in while games
// are played, a game in progress (and spectates it through the ordinary match page), then the
// final standings, which agree with `ziggurat tournament standings`. The field is the random bot
// against alphabeta limited to 0.25 s a move (so that a game lasts long enough to be seen in
// progress) and greedy.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, test } from "node:test";
import { assertAccessible } from "./a11y.mjs";
import { overflowing, smallTargets } from "./fit.mjs";
import { ZIGGURAT, launchBrowser, shot } from "./harness.mjs";

const CONFIG = `
name = "LAN night"
seed = "web-live-page"
game = "pylos"
concurrency = 1

[server]
listen = "127.0.0.1:0"
http_port = 0

[[participants]]
name = "random"
builtin = "random"

[[participants]]
name = "alphabeta"
builtin = "alphabeta"
options = { max_seconds = 0.25 }

[[participants]]
name = "greedy"
builtin = "greedy"
`;

let chrome;
let dir;
let run;
let stderr = "";
before(async () => {
  chrome = await launchBrowser();
  dir = mkdtempSync(join(tmpdir(), "ziggurat-web-tournament-"));
  writeFileSync(join(dir, "t.toml"), CONFIG);
});
after(async () => {
  if (run && run.exitCode === null) {
    run.kill("SIGINT");
    await new Promise((resolve) => run.once("exit", resolve));
  }
  await chrome?.close();
  rmSync(dir, { recursive: true, force: true });
});

test("the live tournament page shows standings filling in, a game in progress, then the final standings", { timeout: 300_000 }, async () => {
  run = spawn(ZIGGURAT, ["tournament", "run", join(dir, "t.toml"), "--db", join(dir, "t.db"), "--quiet", "--page-linger", "120"],
    { stdio: ["ignore", "pipe", "pipe"] });
  run.stdout.on("data", () => undefined);
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no live page line: ${stderr}`)), 60_000);
    run.stderr.on("data", (chunk) => {
      stderr += chunk;
      const found = /live page (http:\/\/\S+)/.exec(stderr);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
    run.on("exit", (code) => reject(new Error(`tournament exited (${code}): ${stderr}`)));
  });
  const tournamentId = url.split("/").pop();
  const page = await chrome.browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(url);
  await page.waitForSelector("table.standings-table tbody tr");
  assert.match(await page.textContent("h1"), /LAN night — Pylos round robin/);
  // A game in progress, with a link to spectate it; results arrive while we watch.
  await page.waitForSelector("li.game-live a.spectate", { timeout: 60_000 });
  await page.waitForFunction(() => /Running: [1-5] of 6 games played/.test(document.querySelector("#t-progress")?.textContent ?? ""), null, { timeout: 120_000 });
  await page.waitForSelector("li.game-live a.spectate", { timeout: 60_000 });
  const played = await page.$$eval("table.standings-table td.points", (cells) => cells.reduce((sum, c) => sum + Number(c.textContent), 0));
  assert.ok(played >= 1, "some points are in the standings while the tournament runs");
  await shot(page, "tournament-live-standings");
  await assertAccessible(page, "the live tournament page");
  // Spectate the game in progress: the ordinary match page, as a watcher.
  await page.click("li.game-live a.spectate");
  await page.waitForSelector("svg.pyramid");
  await page.waitForSelector(".spectating, .end .result"); // watching (or the game just ended)
  assert.equal(await page.$("button.resign"), null, "a spectator cannot resign");
  await shot(page, "tournament-spectating-a-game");
  // Its back button goes back to the tournament it was opened from, not to the lobby.
  assert.equal(await page.textContent("header.top button.back"), "← Tournament");
  // So does it in a new tab (the link opened there, or sent to someone): the game is the tournament's.
  const gameUrl = page.url();
  const tab = await chrome.browser.newPage({ viewport: { width: 390, height: 844 } });
  await tab.goto(gameUrl);
  await tab.waitForFunction(() => document.querySelector("header.top button.back")?.textContent === "← Tournament");
  await tab.click("header.top button.back");
  await tab.waitForURL(new RegExp(`#/tournament/${tournamentId}$`));
  await tab.waitForSelector("table.standings-table tbody tr");
  await tab.close();
  await page.click("header.top button.back");
  await page.waitForURL(new RegExp(`#/tournament/${tournamentId}$`));
  await page.waitForSelector("table.standings-table tbody tr");
  // The end: final standings, every game finished.
  await page.waitForSelector('#t-progress[data-status="finished"]', { timeout: 240_000 });
  assert.match(await page.textContent("#t-progress"), /Finished \(completed\): 6 games played/);
  assert.equal(await page.textContent("section.standings h2"), "Final standings");
  assert.equal(await page.$$eval("li.game-done", (items) => items.length), 6);
  assert.equal(await page.$("li.game-live"), null);
  await shot(page, "tournament-final-standings");
  // On a phone: one column, nothing wider than the screen, touch targets of 44 px.
  const phone = await chrome.browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
  const small = await phone.newPage();
  await small.goto(url);
  await small.waitForSelector('#t-progress[data-status="finished"]');
  assert.deepEqual(await overflowing(small), []);
  assert.deepEqual(await smallTargets(small), []);
  await shot(small, "tournament-final-standings-phone");
  await phone.close();
  const rows = await page.$$eval("table.standings-table tbody tr", (trs) => trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent)));
  assert.equal(rows.length, 3);
  assert.equal(rows.reduce((sum, r) => sum + Number(r[3]), 0), 6, "one point per game");
  assert.deepEqual(rows.map((r) => r[2]), ["4", "4", "4"]);
  // The crosstable: two games per pairing, points of a against b and b against a add up to 2.
  const cross = await page.$$eval("table.cross td[data-opponent]", (tds) => tds.map((td) => td.textContent));
  assert.equal(cross.length, 6);
  for (const cell of cross) assert.match(cell, /^[0-9.]+ \/ 2$/);
  // The page agrees with the command line's standings.
  run.kill("SIGINT");
  const code = await new Promise((resolve) => run.once("exit", resolve));
  assert.equal(code, 0, stderr);
  const { stdout } = await promisify(execFile)(ZIGGURAT, ["tournament", "standings", tournamentId, "--db", join(dir, "t.db")]);
  for (const [rank, name, games, pts] of rows) {
    assert.match(stdout, new RegExp(`\\b${rank}\\s+${name.split(" ")[0]}\\s+${games}\\s+${Number(pts).toFixed(1)}`), stdout);
  }
  assert.deepEqual(errors, []);
});
