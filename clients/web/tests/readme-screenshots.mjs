// Makes the docs' screenshots (docs/web-pylos.png, docs/web-kabaleo.png and, at a phone's
// 390x844, docs/web-lobby-phone.png and docs/web-kabaleo-phone.png in the README, and
// docs/web-tournament.png in docs/tournaments.md): a Pylos game against a built-in bot and a
// 3-seat Kabaleo table, each in the middle of the game, the lobby and a Kabaleo game on a phone,
// and the live page of the shipped Kabaleo duplicate-deal example tournament while it runs.
// Run by hand after a visible change: `node tests/readme-screenshots.mjs [pylos|kabaleo|tournament]…`
// (default all; not a test).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { ZIGGURAT, launchBrowser, startServer } from "./harness.mjs";

const docs = join(dirname(fileURLToPath(import.meta.url)), "../../../docs");
const wanted = process.argv.slice(2);
const make = (name) => !wanted.length || wanted.includes(name);
const server = await startServer();
const chrome = await launchBrowser();
try {
  if (make("pylos")) await pylosPicture();
  if (make("kabaleo")) await kabaleoPicture();
  if (make("tournament")) await tournamentPicture();
  if (make("phone")) await phonePictures();
} finally {
  await chrome.close();
  await server.stop();
}

async function pylosPicture() {
  const pylos = await chrome.browser.newPage({ viewport: { width: 1100, height: 720 } });
  await pylos.goto(server.url);
  await pylos.fill("#name", "Ada");
  await pylos.selectOption("select.opponent", "greedy");
  await pylos.selectOption("#clock", "fischer5");
  await pylos.click("#create");
  await pylos.waitForSelector("svg.pyramid");
  for (let i = 0; i < 9; i++) {
    await pylos.waitForSelector("svg.pyramid .place.target");
    const targets = await pylos.$$eval("svg.pyramid .place.target", (els) => els.map((e) => e.dataset.place));
    const n = await pylos.$$eval("ol.moves li", (l) => l.length);
    await pylos.click(`svg.pyramid circle[data-place="${targets[(i * 5) % targets.length]}"]`);
    if (await pylos.$("svg.pyramid .place.recoverable")) {
      await pylos.click("svg.pyramid .place.recoverable");
      if (await pylos.$("button.done")) await pylos.click("button.done");
    }
    await pylos.waitForFunction((k) => document.querySelectorAll("ol.moves li").length > k + 1, n);
  }
  await pylos.waitForSelector("svg.pyramid .place.source, svg.pyramid .place.target");
  const source = await pylos.$("svg.pyramid .place.source");
  if (source) await source.click(); // show a raise in progress: a free ball and its targets
  await pylos.screenshot({ path: join(docs, "web-pylos.png") });
  console.log("wrote docs/web-pylos.png");
}

async function kabaleoPicture() {
  const kabaleo = await chrome.browser.newPage({ viewport: { width: 1100, height: 860 } });
  await kabaleo.goto(server.url);
  await kabaleo.fill("#name", "Ada");
  await kabaleo.selectOption("#game", "kabaleo");
  await kabaleo.selectOption("#seats", "3");
  await kabaleo.selectOption("select.opponent[data-index='1']", "greedy");
  await kabaleo.selectOption("select.opponent[data-index='2']", "mcts");
  await kabaleo.selectOption("#clock", "fischer5");
  await kabaleo.click("#create");
  await kabaleo.waitForSelector(".kabaleo .stacks");
  for (let i = 0; i < 5; i++) {
    await kabaleo.waitForSelector(".hand.mine .chip:not([disabled])", { timeout: 60000 });
    const colours = await kabaleo.$$eval(".hand.mine .chip:not([disabled])", (c) => c.map((x) => x.dataset.colour));
    await kabaleo.click(`.hand.mine .chip[data-colour="${colours[i % colours.length]}"]`);
    const stacks = await kabaleo.$$eval(".stack.target", (els) => els.map((e) => e.dataset.stack));
    const n = await kabaleo.$$eval("ol.moves li", (l) => l.length);
    await kabaleo.click(`.stack[data-stack="${stacks[(i * 7) % stacks.length]}"]`);
    await kabaleo.waitForFunction((k) => document.querySelectorAll("ol.moves li").length > k, n);
  }
  await kabaleo.waitForSelector(".hand.mine .chip:not([disabled])", { timeout: 60000 });
  await kabaleo.click(".hand.mine .chip:not([disabled])");
  await kabaleo.screenshot({ path: join(docs, "web-kabaleo.png") });
  console.log("wrote docs/web-kabaleo.png");
}

async function tournamentPicture() {
  const dir = mkdtempSync(join(tmpdir(), "ziggurat-shots-"));
  const example = join(docs, "../examples/tournaments/kabaleo-duplicate.toml");
  const run = spawn(ZIGGURAT, ["tournament", "run", example, "--db", join(dir, "t.db"), "--quiet", "--http-port", "0", "--page-linger", "0"],
    { stdio: ["ignore", "ignore", "pipe"] });
  try {
    let stderr = "";
    const url = await new Promise((resolve, reject) => {
      run.stderr.on("data", (chunk) => {
        stderr += chunk;
        const found = /live page (http:\/\/\S+)/.exec(stderr);
        if (found) resolve(found[1]);
      });
      run.on("exit", (code) => reject(new Error(`tournament exited (${code}): ${stderr}`)));
    });
    const page = await chrome.browser.newPage({ viewport: { width: 1280, height: 640 } });
    await page.goto(url);
    await page.waitForFunction(() => document.querySelectorAll("li.game-done").length >= 3 && document.querySelector("li.game-live"), null, { timeout: 240000 });
    await page.screenshot({ path: join(docs, "web-tournament.png") });
    console.log("wrote docs/web-tournament.png");
  } finally {
    run.kill("SIGINT");
    rmSync(dir, { recursive: true, force: true });
  }
}

async function phonePictures() {
  const phone = { width: 390, height: 844 };
  const kabaleo = await chrome.browser.newPage({ viewport: phone, isMobile: true, hasTouch: true });
  await kabaleo.goto(server.url);
  await kabaleo.fill("#name", "Ada");
  await kabaleo.selectOption("#game", "kabaleo");
  await kabaleo.selectOption("#seats", "3");
  await kabaleo.selectOption("select.opponent[data-index='1']", "greedy");
  await kabaleo.selectOption("select.opponent[data-index='2']", "random");
  await kabaleo.click("#create");
  await kabaleo.waitForSelector(".kabaleo .stacks");
  for (let i = 0; i < 3; i++) {
    await kabaleo.waitForSelector(".hand.mine .chip:not([disabled])", { timeout: 60000 });
    const n = await kabaleo.$$eval("ol.moves li", (l) => l.length);
    await kabaleo.tap(".hand.mine .chip:not([disabled])");
    const stacks = await kabaleo.$$eval(".stack.target", (els) => els.map((e) => e.dataset.stack));
    await kabaleo.tap(`.stack[data-stack="${stacks[(i * 5) % stacks.length]}"]`);
    await kabaleo.waitForFunction((k) => document.querySelectorAll("ol.moves li").length > k, n);
  }
  await kabaleo.waitForSelector(".hand.mine .chip:not([disabled])", { timeout: 60000 });
  await kabaleo.tap(".hand.mine .chip:not([disabled])");
  await kabaleo.screenshot({ path: join(docs, "web-kabaleo-phone.png") });
  console.log("wrote docs/web-kabaleo-phone.png");
  const lobby = await chrome.browser.newPage({ viewport: phone, isMobile: true, hasTouch: true });
  await lobby.goto(server.url);
  await lobby.waitForSelector("#name");
  await lobby.fill("#name", "Bea");
  await lobby.waitForTimeout(2500); // the list of matches has come in
  await lobby.screenshot({ path: join(docs, "web-lobby-phone.png") });
  console.log("wrote docs/web-lobby-phone.png");
}
