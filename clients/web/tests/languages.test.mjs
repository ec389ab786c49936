// The client in each of its languages, switched with the header's selector: the lobby, a Pylos
// game, a Kabaleo game and an end screen show the language's words and none of the English
// catalogue's (names, notation and numbers aside); the seat survives a switch; the browser's
// language is the default; the rules open in the reader's language (or English with a note).
// Screenshots: test-output/NN-lang-LANG-SCREEN.png.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertAccessible } from "./a11y.mjs";
import { callApi, launchBrowser, loadCatalogues, pageWithSeat, shot, startServer } from "./harness.mjs";

const catalogues = await loadCatalogues();
const { en } = catalogues;
const LANGS = ["ro", "hu", "eu"];

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

/** A message's text with its placeholders filled, for a check of what the page shows. */
function say(lang, key, params = {}) {
  return catalogues.format(catalogues[lang][key], params, new Intl.PluralRules(lang));
}

/** English words the page must not show in `lang`: each English message's literal parts (split
 * at its placeholders) of 4 letters or more, unless the language writes the same. */
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

async function visibleText(page) {
  return page.evaluate(() => {
    // Bot descriptions (titles of the bot choices) are the server's words, not the page's.
    const labels = [...document.querySelectorAll("[aria-label],[title],[placeholder]")].filter((e) => !e.matches("option, [data-bot]"))
      .flatMap((e) => [e.getAttribute("aria-label"), e.getAttribute("title"), e.getAttribute("placeholder")]).filter(Boolean);
    return `${document.body.innerText}\n${labels.join("\n")}`;
  });
}

async function assertNoEnglish(page, lang, where) {
  const text = await visibleText(page);
  const lines = text.split("\n");
  const english = englishFragments(lang).flatMap((f) => {
    const pattern = new RegExp(`(^|[^\\p{L}])${f.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}($|[^\\p{L}])`, "u");
    return lines.filter((line) => pattern.test(line)).map((line) => `${f}: ${line}`);
  });
  assert.deepEqual(english, [], `English words on the ${where} in ${lang}`);
}

async function switchTo(page, lang) {
  await page.selectOption("#language", lang);
  await page.waitForFunction((l) => document.documentElement.lang === l && document.querySelector("#language")?.value === l, lang);
}

async function newGame(game, seat = 1) {
  const created = await callApi(server, "CreateMatch", { config: { game, seats: 2 }, seatAssignment: "SEAT_ASSIGNMENT_CHOSEN" });
  const matchId = created.match.matchId;
  const ada = await callApi(server, "JoinMatch", { matchId, playerName: "Ada", seat });
  await callApi(server, "AddBot", { matchId, bot: "random" });
  return { matchId, ticket: { matchId, seat, token: ada.token, name: "Ada" } };
}

test("the lobby, a Pylos game, a Kabaleo game and the end screen in each language", { timeout: 300_000 }, async () => {
  const pylos = await newGame("GAME_PYLOS");
  const kabaleo = await newGame("GAME_KABALEO");
  const over = await newGame("GAME_PYLOS");
  await callApi(server, "Resign", { matchId: over.matchId }, over.ticket.token);
  const page = await pageWithSeat(chrome, { width: 1200, height: 900 }, pylos.ticket);
  await page.context().addInitScript((tickets) => {
    const seats = JSON.parse(localStorage.getItem("ziggurat.seats") ?? "{}");
    for (const t of tickets) seats[t.matchId] = t;
    localStorage.setItem("ziggurat.seats", JSON.stringify(seats));
  }, [kabaleo.ticket, over.ticket]);
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));

  // The test browser's language is English (Playwright's en-US): the default.
  await page.goto(server.url);
  await page.waitForSelector("table.list tr[data-match]");
  assert.equal(await page.evaluate(() => document.documentElement.lang), "en");
  assert.match(await page.textContent("body"), /New match/);
  assert.deepEqual(await page.$$eval("#language option", (o) => o.map((e) => e.textContent)), ["English", "Română", "Magyar", "Euskara"]);

  for (const lang of LANGS) {
    await page.goto(`${server.url}#/`);
    await page.waitForSelector("table.list tr[data-match]");
    await switchTo(page, lang);
    // The seats' section is drawn once the seats' matches are read: wait for every heading.
    const headings = ["form.title", "lobby.matches", "lobby.yourName", "form.create", "lobby.yourSeats"].map((key) => say(lang, key));
    await page.waitForFunction((words) => words.every((w) => document.body.innerText.includes(w)), headings);
    const lobby = await page.textContent("body");
    for (const key of ["lobby.matches", "lobby.yourName", "form.create", "lobby.yourSeats"]) assert.ok(lobby.includes(say(lang, key)), `${lang} lobby: ${key}`);
    await page.waitForSelector("td.match-status");
    await assertNoEnglish(page, lang, "lobby");
    await shot(page, `lang-${lang}-lobby`);

    await page.goto(`${server.url}#/match/${pylos.matchId}`);
    await page.waitForSelector("svg.pyramid circle[data-place]");
    await switchTo(page, lang); // the same language again: drawn again, nothing lost
    await page.waitForSelector("svg.pyramid circle[data-place]");
    assert.equal(await page.$$eval(".seat.me", (e) => e.length), 1, "the seat survives a switch");
    const game = await page.textContent("body");
    for (const key of ["pylos.keys", "match.players", "match.moves"]) assert.ok(game.includes(say(lang, key)), `${lang} Pylos: ${key}`);
    assert.equal(await page.textContent("a.rules-link"), say(lang, "rules.link"));
    await assertNoEnglish(page, lang, "Pylos game");
    await shot(page, `lang-${lang}-pylos`);

    await page.goto(`${server.url}#/match/${kabaleo.matchId}`);
    await page.waitForSelector(".kabaleo .stack");
    const table = await page.textContent("body");
    for (const key of ["kabaleo.secret", "match.players"]) assert.ok(table.includes(say(lang, key)), `${lang} Kabaleo: ${key}`);
    await assertNoEnglish(page, lang, "Kabaleo game");
    if (lang === "ro") await assertAccessible(page, "a Kabaleo game in Romanian");
    await shot(page, `lang-${lang}-kabaleo`);

    await page.goto(`${server.url}#/match/${over.matchId}`);
    await page.waitForSelector(".end .result");
    await page.waitForSelector(".seed.ok");
    const end = await page.textContent(".end");
    assert.ok(end.includes(say(lang, "match.replayLink")), `${lang} end: replay link`);
    assert.ok(end.includes(say(lang, "end.resignation", { who: `${say(lang, "side.light")} (Ada)` })), `${lang} end: why`);
    await assertNoEnglish(page, lang, "end screen");
    await shot(page, `lang-${lang}-end`);
  }
  // Back to English with the same selector.
  await switchTo(page, "en");
  await page.waitForFunction(() => document.querySelector(".end")?.textContent.includes("Replay this match"));
  assert.deepEqual(errors, []);
  await page.context().close();
});

test("the browser's language is the default, and the choice is remembered", { timeout: 60_000 }, async () => {
  const context = await chrome.browser.newContext({ locale: "hu-HU", viewport: { width: 1000, height: 800 } });
  const page = await context.newPage();
  await page.goto(server.url);
  await page.waitForFunction((words) => document.body.innerText.includes(words), say("hu", "form.title"));
  assert.equal(await page.evaluate(() => document.documentElement.lang), "hu");
  assert.equal(await page.inputValue("#language"), "hu");
  await switchTo(page, "eu");
  await page.reload();
  await page.waitForFunction((words) => document.body.innerText.includes(words), say("eu", "form.title"));
  assert.equal(await page.evaluate(() => document.documentElement.lang), "eu");
  await context.close();
});

test("the rules in the reader's language, or in English with a note", { timeout: 60_000 }, async () => {
  const context = await chrome.browser.newContext({ viewport: { width: 1000, height: 800 } });
  const page = await context.newPage();
  await page.goto(`${server.url}#/rules/kabaleo`);
  await page.waitForSelector(".rules-text h2");
  assert.match(await page.textContent(".rules-text"), /Kabaleo/);
  assert.equal(await page.$$eval(".rules-note", (e) => e.length), 0);
  await switchTo(page, "ro");
  await page.waitForFunction(() => document.querySelector(".rules-text")?.textContent.includes("CONŢINUT"));
  assert.doesNotMatch(await page.textContent(".rules-text"), /Å|Ä‚/);
  await shot(page, "lang-ro-rules-kabaleo");
  await switchTo(page, "hu");
  await page.waitForFunction(() => document.querySelector(".rules-text")?.textContent.includes("célgúla"));
  await page.goto(`${server.url}#/rules/pylos`);
  await page.waitForSelector(".rules-note");
  assert.equal(await page.textContent(".rules-note"), say("hu", "rules.inEnglish", { game: "Pylos" }));
  assert.equal(await page.getAttribute(".rules-text", "lang"), "en");
  await switchTo(page, "eu");
  await page.waitForFunction(() => document.querySelector(".rules-text")?.textContent.includes("gordekin"));
  assert.equal(await page.$$eval(".rules-note", (e) => e.length), 0);
  await shot(page, "lang-eu-rules-pylos");
  await context.close();
});
