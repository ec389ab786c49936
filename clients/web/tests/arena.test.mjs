// The standing arena's pages: `ziggurat arena run` with a web port serves the web client and
// ArenaService; a browser opens the ladder page it prints and sees the standings move while
// games finish, watches a live game through the ordinary match page, opens an entrant's profile
// (its rating chart, drawn from the same figures as the table under it) and replays one of its
// games; the page keeps a keyboard reader's place across refreshes, says the connection is lost
// while the server is frozen, fits a phone, passes axe, and speaks every language. A plain
// `ziggurat serve` runs no arena, and the page says so. The field: random, two greedy bots, and
// alphabeta limited to 0.1 s a move (its games last long enough to be watched).
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, test } from "node:test";
import { assertAccessible, tabTo } from "./a11y.mjs";
import { overflowing, smallTargets } from "./fit.mjs";
import { SHOTS, ZIGGURAT, launchBrowser, loadCatalogues, shot, sleep, startServer } from "./harness.mjs";

const CONFIG = `
name = "Ziggurat 42"
database = "arena.db"

[server]
listen = "127.0.0.1:0"
http_port = 0

[time_control]
base_ms = 20000
increment_ms = 100

[pairing]
max_games = 3
games_per_entrant = 2
interval_seconds = 0.2
stop_grace_seconds = 2

[[ladder]]
game = "pylos"

[[entrant]]
name = "random"
builtin = "random"

[[entrant]]
name = "greedy"
builtin = "greedy"

[[entrant]]
name = "greedy2"
builtin = "greedy"

[[entrant]]
name = "thinker"
builtin = "alphabeta"
options = { max_seconds = 0.1 }
`;

const catalogues = await loadCatalogues();
const { en } = catalogues;

/** English words the page must not show in `lang` (as tests/languages.test.mjs reads them). */
function englishFragments(lang) {
  const fragments = new Set();
  for (const [key, message] of Object.entries(en)) {
    const theirs = JSON.stringify(catalogues[lang][key]);
    for (const form of typeof message === "string" ? [message] : Object.values(message)) {
      for (const part of form.split(/\{\w+\}/)) {
        const text = part.trim().replace(/^[-–—:,.()«»←▶◀ ]+|[-–—:,.()«»←▶◀ ]+$/g, "");
        if (text.length >= 4 && /[a-z]{3}/i.test(text) && !theirs.includes(text)) fragments.add(text);
      }
    }
  }
  return [...fragments];
}

async function assertNoEnglish(page, lang, where) {
  const text = await page.evaluate(() => {
    const labels = [...document.querySelectorAll("[aria-label],[title],[placeholder]")].flatMap((e) => [e.getAttribute("aria-label"), e.getAttribute("title"), e.getAttribute("placeholder")]).filter(Boolean);
    const svgWords = [...document.querySelectorAll("svg title, svg desc")].map((e) => e.textContent);
    return `${document.body.innerText}\n${labels.join("\n")}\n${svgWords.join("\n")}`;
  });
  const lines = text.split("\n");
  const english = englishFragments(lang).flatMap((f) => {
    const pattern = new RegExp(`(^|[^\\p{L}])${f.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}($|[^\\p{L}])`, "u");
    return lines.filter((line) => pattern.test(line)).map((line) => `${f}: ${line}`);
  });
  assert.deepEqual(english, [], `English words on the ${where} in ${lang}`);
}

function say(lang, key, params = {}) {
  return catalogues.format(catalogues[lang][key], params, new Intl.PluralRules(lang));
}

/** The ladder's rows as the page shows them: line, rank, rating, games, wins. */
function ladderRows(page) {
  return page.$$eval("table.ladder-table tbody tr", (trs) => trs.map((tr) => ({
    line: tr.dataset.line,
    rank: tr.querySelector("td.rank").textContent,
    rating: Number(tr.querySelector("td.rating").textContent),
    games: Number(tr.querySelector("td.games").textContent),
    wins: Number(tr.querySelector("td.wins").textContent),
  })));
}

let chrome;
let dir;
let run;
let stderr = "";
before(async () => {
  chrome = await launchBrowser();
  dir = mkdtempSync(join(tmpdir(), "ziggurat-web-arena-"));
  writeFileSync(join(dir, "arena.toml"), CONFIG);
});
after(async () => {
  if (run && run.exitCode === null) {
    run.kill("SIGCONT");
    run.kill("SIGTERM");
    await new Promise((resolve) => run.once("exit", resolve));
  }
  await chrome?.close();
  rmSync(dir, { recursive: true, force: true });
});

test("the arena's ladder moves while games finish; a live game, a profile with its rating chart, a replay", { timeout: 300_000 }, async () => {
  run = spawn(ZIGGURAT, ["arena", "run", join(dir, "arena.toml")], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  run.stdout.on("data", () => undefined);
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ladder page line: ${stderr}`)), 60_000);
    run.stderr.on("data", (chunk) => {
      stderr += chunk;
      const found = /ladder page (http:\/\/\S+)/.exec(stderr);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]);
      }
    });
    run.on("exit", (code) => reject(new Error(`arena exited (${code}): ${stderr}`)));
  });
  assert.match(url, /\/#\/arena$/);
  const page = await chrome.browser.newPage({ viewport: { width: 1280, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  // The lobby of the arena's server points at its ladder; the link leads there.
  await page.goto(url.replace(/#\/arena$/, ""));
  await page.waitForSelector(".arena-banner a.to-arena");
  assert.match(await page.textContent(".arena-banner"), /Standing arena “Ziggurat 42” runs on this server/);
  await page.click(".arena-banner a.to-arena");
  await page.waitForFunction(() => location.hash === "#/arena");
  await page.goto(url);

  // The ladder: every entrant, ranked; the standings move between two reads as games finish.
  await page.waitForFunction(() => document.querySelectorAll("table.ladder-table tbody tr").length === 4);
  assert.equal(await page.textContent("h1"), "Arena: Ziggurat 42");
  assert.equal(await page.getAttribute("#a-status", "data-status"), "running");
  assert.match(await page.textContent("#a-status"), /^Running: \d+ games? rated so far\.$/);
  assert.equal(await page.textContent("section.ladder h2"), "Pylos ladder");
  const first = await ladderRows(page);
  assert.deepEqual(first.map((r) => r.line).sort(), ["greedy", "greedy2", "random", "thinker"]);
  assert.deepEqual(first.map((r) => r.rank), ["1", "2", "3", "4"]);
  for (let i = 1; i < first.length; i++) assert.ok(first[i - 1].rating >= first[i].rating, "best first");
  const total = (rows) => rows.reduce((sum, r) => sum + r.games, 0);
  await page.waitForFunction((before) => [...document.querySelectorAll("table.ladder-table td.games")].reduce((s, td) => s + Number(td.textContent), 0) >= before + 4,
    total(first), { timeout: 60_000 });
  const second = await ladderRows(page);
  assert.ok(total(second) > total(first), `games played: ${total(first)} then ${total(second)}`);
  const ratingOf = (rows) => Object.fromEntries(rows.map((r) => [r.line, r.rating]));
  assert.notDeepEqual(ratingOf(second), ratingOf(first), "the ratings moved");
  assert.ok(second.some((r) => r.wins > 0));
  // Every built-in entrant connects (alphabeta a little later than the others) and plays.
  await page.waitForFunction(() => document.querySelectorAll("table.ladder-table .mark.online, table.ladder-table .mark.playing").length === 4, null, { timeout: 30_000 });
  // Recent games: ranks and rating changes, each with a link to replay it.
  await page.waitForSelector("section.recent-games li.status-rated a.replay");
  assert.match(await page.textContent("section.recent-games li.status-rated .result"), /^1\. \S+ \+\d+\.\d · 2\. \S+ [−-]\d+\.\d$/);

  // A live game: watched through the ordinary match page, whose back button returns to the ladder.
  await page.waitForSelector("li.game-live a.spectate", { timeout: 60_000 });
  assert.match(await page.textContent("li.game-live"), /^Game \d+, Pylos: \S+ vs \S+ Watch$/);
  await shot(page, "arena-ladder");
  await assertAccessible(page, "the arena's ladder");
  await page.click("li.game-live a.spectate");
  await page.waitForURL(/#\/match\/[0-9a-f]+$/);
  await page.waitForSelector("svg.pyramid");
  await page.waitForSelector(".spectating, .end .result");
  assert.equal(await page.$("button.resign"), null, "a spectator cannot resign");
  await shot(page, "arena-watching-a-game");
  assert.equal(await page.textContent("header.top button.back"), "← Arena");
  // Opened in a new tab (a shared address), a game of the arena still goes back to its ladder.
  const tab = await chrome.browser.newPage({ viewport: { width: 1000, height: 800 } });
  await tab.goto(page.url());
  await tab.waitForFunction(() => document.querySelector("header.top button.back")?.textContent === "← Arena");
  await tab.close();
  await page.click("header.top button.back");
  await page.waitForURL(/#\/arena$/);
  await page.waitForSelector("table.ladder-table tbody tr");

  // Keyboard: the entrants' links are reachable with Tab, and a refresh keeps the focus where it is.
  await tabTo(page, 'a.entrant[href="#/arena/entrant/greedy"]');
  const gamesBefore = total(await ladderRows(page));
  await page.waitForFunction((n) => [...document.querySelectorAll("table.ladder-table td.games")].reduce((s, td) => s + Number(td.textContent), 0) > n, gamesBefore, { timeout: 30_000 });
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute("href")), "#/arena/entrant/greedy", "the focus survives a refresh");
  await page.keyboard.press("Enter");

  // The profile: its line, its rating after each game as a chart and as a table, its games.
  await page.waitForURL(/#\/arena\/entrant\/greedy$/);
  await page.waitForFunction(() => document.querySelectorAll("svg.rating-chart circle.point").length >= 2);
  assert.equal(await page.textContent("h1"), "Entrant greedy");
  assert.equal(await page.$$eval("table.lines-table tbody tr", (trs) => trs.length), 1);
  assert.equal(await page.getAttribute("table.lines-table tbody tr", "data-line"), "Pylos:greedy");
  assert.match(await page.textContent("table.lines-table tbody tr"), /\(active\)/);
  assert.equal(await page.textContent("svg.rating-chart > title"), "Rating of greedy, game by game");
  assert.match(await page.textContent("svg.rating-chart > desc"), /^Pylos: \d+ rated games, rating from \d+ to \d+\.$/);
  assert.equal(await page.getAttribute("svg.rating-chart", "role"), "img");
  assert.equal(await page.$$eval("svg.rating-chart polyline", (e) => e.length), 1, "one series: one game, one version");
  // The table under the chart has the chart's points: open it from the keyboard.
  await tabTo(page, "details.history-table summary");
  await page.keyboard.press("Enter");
  await page.waitForSelector("details.history-table[open] tbody tr");
  const { points, rows, games } = await page.evaluate(() => ({
    points: document.querySelectorAll("svg.rating-chart circle.point").length,
    rows: document.querySelectorAll("details.history-table tbody tr").length,
    games: Number(document.querySelector("table.lines-table td.games").textContent),
  }));
  assert.equal(points, rows, "a table row per point");
  assert.ok(Math.abs(points - games) <= 2, `a point per rated game (${points} points, ${games} games: both read while games end)`);
  await sleep(2_500); // a refresh or two: the table stays open
  assert.equal(await page.$$eval("details.history-table[open]", (e) => e.length), 1);
  await page.waitForSelector("section.recent-games li a.replay");
  await shot(page, "arena-entrant-profile");
  await assertAccessible(page, "an arena entrant's profile");
  // Replay one of its games; back to the profile.
  await page.click("section.recent-games li.status-rated a.replay");
  await page.waitForURL(/#\/replay\/[0-9a-f]+$/);
  await page.waitForSelector("ol.replay-moves button.ply");
  assert.equal(await page.textContent("header.top button.back"), "← Arena");
  await shot(page, "arena-replay");
  await page.click("header.top button.back");
  await page.waitForURL(/#\/arena\/entrant\/greedy$/);
  await page.waitForSelector("svg.rating-chart circle.point");

  // A name the arena does not know: said in words.
  await page.goto(`${url}/entrant/nobody`);
  await page.waitForFunction(() => document.querySelector("p.status")?.textContent === "This arena has no entrant of that name.");

  // Every language: the arena's words and none of the English ones.
  for (const lang of ["ro", "hu", "eu"]) {
    await page.goto(url);
    await page.waitForSelector("table.ladder-table tbody tr");
    await page.selectOption("#language", lang);
    await page.waitForFunction((words) => document.body.innerText.includes(words), say(lang, "arena.ladder", { game: "Pylos" }));
    await page.waitForSelector("section.recent-games li");
    await assertNoEnglish(page, lang, "arena's ladder");
    await shot(page, `arena-ladder-${lang}`);
    await page.goto(`${url}/entrant/thinker`);
    await page.waitForSelector("svg.rating-chart circle.point");
    assert.equal(await page.textContent("h1"), say(lang, "arena.entrantTitle", { name: "thinker" }));
    await assertNoEnglish(page, lang, "entrant's profile");
    if (lang === "eu") await shot(page, `arena-entrant-${lang}`);
  }
  await page.selectOption("#language", "en");

  // The operator pauses pairing, then retires an entrant: the status says so, and the retired
  // line goes below the active ones, without a rank, its state in words.
  const arenaCommand = (...args) => promisify(execFile)(ZIGGURAT, ["arena", ...args], { cwd: dir });
  await page.goto(url);
  await page.waitForSelector("table.ladder-table tbody tr");
  await arenaCommand("pause", join(dir, "arena.toml"));
  await page.waitForSelector('#a-status[data-status="paused"]', { timeout: 15_000 });
  assert.match(await page.textContent("#a-status"), /^Paused by the operator: no new games for now \(\d+ games rated so far\)\.$/);
  await arenaCommand("resume", join(dir, "arena.toml"));
  await page.waitForSelector('#a-status[data-status="running"]', { timeout: 15_000 });
  await arenaCommand("retire", join(dir, "arena.toml"), "random");
  await page.waitForSelector('tr.state-retired[data-line="random"]', { timeout: 15_000 });
  const retired = await page.$$eval("table.ladder-table tbody tr", (trs) => trs.map((tr) => [tr.dataset.line, tr.querySelector("td.rank").textContent, tr.querySelector("td.who").textContent]));
  assert.deepEqual(retired[3], ["random", "–", "random (retired)"], JSON.stringify(retired));
  assert.deepEqual(retired.slice(0, 3).map((r) => r[1]), ["1", "2", "3"]);
  await shot(page, "arena-ladder-retired");
  await assertAccessible(page, "the arena's ladder with a retired line");

  // On a phone: one column, nothing wider than the screen, touch targets of 44 px.
  const phone = await chrome.browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true, deviceScaleFactor: 2 });
  const small = await phone.newPage();
  await small.goto(url);
  await small.waitForSelector("table.ladder-table tbody tr");
  await small.waitForSelector("section.recent-games li");
  assert.deepEqual(await overflowing(small), []);
  assert.deepEqual(await smallTargets(small), []);
  await shot(small, "arena-ladder-phone");
  await small.screenshot({ path: join(SHOTS, "arena-ladder-phone-top.png") });
  await small.goto(`${url}/entrant/random`);
  await small.waitForSelector("svg.rating-chart circle.point");
  await small.screenshot({ path: join(SHOTS, "arena-entrant-phone-top.png") }); // the first screen, to look at
  await small.click("details.history-table summary");
  await small.waitForSelector("details.history-table[open] tbody tr");
  assert.deepEqual(await overflowing(small), []);
  assert.deepEqual(await smallTargets(small), []);
  await shot(small, "arena-entrant-phone");
  await phone.close();

  // A frozen server (SIGSTOP): the page says the connection is lost within a few seconds, and
  // stops saying so once the server answers again.
  await page.goto(url);
  await page.waitForSelector("table.ladder-table tbody tr");
  assert.equal(await page.isHidden(".connection"), true);
  run.kill("SIGSTOP");
  try {
    await page.waitForSelector(".connection:not([hidden])", { timeout: 10_000 });
    assert.equal(await page.textContent(".connection"), "Connection lost — waiting for the server…");
    await shot(page, "arena-connection-lost");
  } finally {
    run.kill("SIGCONT");
  }
  await page.waitForSelector(".connection", { state: "hidden", timeout: 15_000 });

  // SIGTERM: pairing stops, the games in progress get stop_grace_seconds, and the arena exits 0.
  run.kill("SIGTERM");
  const code = await new Promise((resolve) => run.once("exit", resolve));
  assert.equal(code, 0, stderr);
  assert.deepEqual(errors, []);
});

test("a server that runs no arena says so", { timeout: 60_000 }, async () => {
  const server = await startServer();
  try {
    const page = await chrome.browser.newPage({ viewport: { width: 1000, height: 800 } });
    await page.goto(`${server.url}#/arena`);
    await page.waitForFunction(() => document.querySelector("p.status")?.textContent === "This server runs no arena.");
    assert.equal(await page.$("table.ladder-table"), null);
    assert.equal(await page.isHidden(".connection"), true);
    await page.goto(`${server.url}#/arena/entrant/greedy`);
    await page.waitForFunction(() => document.querySelector("p.status")?.textContent === "This server runs no arena.");
    await shot(page, "arena-none");
    await page.close();
  } finally {
    await server.stop();
  }
});
