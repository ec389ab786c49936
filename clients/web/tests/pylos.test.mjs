// A person creates a Pylos match against a built-in bot in the lobby and plays it to the end by
// clicking: building a square of their own colour on the bottom level, then the guided recovery
// (the square outlined, the recoverable balls highlighted, one clicked, then a second or Done).
// The opponent is the `random` built-in bot: the test keeps building in a 2x2 block the bot has
// not touched, switching blocks when it interferes, so a square is reached in practice every game
// (the test fails loudly if the game ends without one). Afterwards the replay viewer steps
// through the finished match.
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

const COLS = "abcd";

/** The board as the page draws it: place -> "L" | "D" | "." for the places drawn. */
async function board(page) {
  return page.$$eval("svg.pyramid circle[data-place]", (circles) =>
    Object.fromEntries(circles.map((c) => [c.dataset.place, c.classList.contains("light") ? "L" : c.classList.contains("dark") ? "D" : "."])));
}

function blocks() {
  const out = [];
  for (let c = 0; c < 3; c++) for (let r = 1; r <= 3; r++) {
    out.push([`1${COLS[c]}${r}`, `1${COLS[c + 1]}${r}`, `1${COLS[c]}${r + 1}`, `1${COLS[c + 1]}${r + 1}`]);
  }
  return out;
}

/** The place to click: the emptiest-for-them block with the most of ours, else any target. */
function choose(cells, me, targets) {
  const them = me === "L" ? "D" : "L";
  const ranked = blocks()
    .filter((block) => block.every((p) => cells[p] !== them))
    .map((block) => ({ block, ours: block.filter((p) => cells[p] === me).length }))
    .sort((a, b) => b.ours - a.ours);
  for (const { block } of ranked) {
    const free = block.find((p) => cells[p] === "." && targets.includes(p));
    if (free) return free;
  }
  return targets[0];
}

test("a person plays Pylos against a built-in bot to the end, with a square and a recovery", { timeout: 240_000 }, async () => {
  const page = await chrome.browser.newPage({ viewport: { width: 1200, height: 860 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  let recovered = 0;
  let squareShot = false;
  // The bot plays at random: it can block every square and win first. A game that ends without
  // a square and a recovery is played again (at most three games).
  for (let game = 0; game < 3 && recovered === 0; game++) {
    await page.goto(server.url);
    await page.fill("#name", "Ada");
    await page.selectOption("#game", "pylos");
    await page.selectOption("select.opponent", "random");
    if (game === 0) await shot(page, "pylos-lobby-create");
    await page.click("#create");
    await page.waitForSelector("svg.pyramid");
    const me = await page.getAttribute(".pylos", "data-me");
    assert.ok(me === "L" || me === "D");
    for (let step = 0; step < 600; step++) {
      const state = await page.waitForSelector(".end .result, svg.pyramid .place.target, svg.pyramid .place.recoverable, svg.pyramid .place.source", { timeout: 30_000 });
      if (await page.$(".end .result")) break;
      if (await page.$("svg.pyramid .place.recoverable")) {
        // The square is outlined and the balls that may come back are highlighted.
        assert.ok(await page.$("svg.pyramid rect.square"), "the completed square is outlined");
        assert.match(await page.textContent(".hint-line"), /Square!/);
        if (!squareShot) {
          await shot(page, "pylos-square-recovery");
          squareShot = true;
        }
        const played = await page.$$eval("ol.moves li", (items) => items.length);
        await page.click("svg.pyramid .place.recoverable");
        if (await page.$("svg.pyramid .place.recoverable")) {
          if (recovered === 0) await shot(page, "pylos-recovery-second-choice");
          await page.click("button.done");
        }
        // The move is in once the move list has it (the server's event, not the click).
        await page.waitForFunction((n) => document.querySelectorAll("ol.moves li").length > n, played);
        recovered += 1;
        continue;
      }
      const targets = await page.$$eval("svg.pyramid .place.target", (els) => els.map((e) => e.dataset.place));
      if (!targets.length) {
        // Only raises are left: pick a free ball, then a highlighted target.
        const played = await page.$$eval("ol.moves li", (items) => items.length);
        await page.click("svg.pyramid .place.source");
        await page.click("svg.pyramid .place.target");
        if (!(await page.$("svg.pyramid .place.recoverable"))) {
          await page.waitForFunction((n) => document.querySelectorAll("ol.moves li").length > n || document.querySelector(".end .result"), played);
        }
        continue;
      }
      const cells = await board(page);
      // Build towards a square until one was made; then just finish the game.
      const place = recovered ? targets[0] : choose(cells, me, targets);
      const ply = await page.$$eval("ol.moves li", (items) => items.length);
      await page.click(`svg.pyramid circle[data-place="${place}"]`);
      if (await page.$("svg.pyramid .place.recoverable")) continue;
      await page.waitForFunction((n) => document.querySelectorAll("ol.moves li").length > n || document.querySelector(".end .result"), ply);
      if (step === 2 && game === 0) await shot(page, "pylos-early-game");
      void state;
    }
    await page.waitForSelector(".end .result", { state: "attached", timeout: 60_000 });
  }
  // The end is there (attached: on a loaded machine the step budget may run out first, and a
  // shot of the page says where it stood).
  await shot(page, "pylos-after-the-loop");
  await page.waitForSelector(".end .result", { state: "attached", timeout: 60_000 });
  await page.locator(".end .result").scrollIntoViewIfNeeded();
  await shot(page, "pylos-end-screen");
  assert.ok(recovered >= 1, "the game included at least one square and recovery");
  assert.match(await page.textContent(".end .result"), /wins|No winner|Shared|Draw/);
  assert.match(await page.textContent(".end .why"), /^The game ended /);
  assert.match(await page.textContent(".end .seed"), /matches the commitment/);
  const moves = await page.$$eval("ol.moves li", (items) => items.map((i) => i.textContent));
  assert.ok(moves.some((m) => /x[1-4][a-d][1-4]/.test(m)), "a recovery is in the move list");

  // The replay viewer steps through the finished match.
  await page.click("a.to-replay");
  await page.waitForSelector("#replay-ply");
  await page.waitForFunction(() => /move 0 of \d+/.test(document.querySelector("#replay-ply")?.textContent ?? ""));
  const total = Number((await page.textContent("#replay-ply")).match(/of (\d+)/)[1]);
  assert.equal(total, moves.length);
  assert.equal(await page.$$eval("svg.pyramid .ball", (b) => b.length), 0, "the start is an empty board");
  await page.click("#replay-next");
  assert.match(await page.textContent("#replay-ply"), /move 1 of/);
  assert.equal(await page.$$eval("svg.pyramid .ball", (b) => b.length), 1);
  await shot(page, "pylos-replay-move-1");
  await page.click("#replay-last");
  assert.match(await page.textContent("#replay-caption"), /Game over/);
  await shot(page, "pylos-replay-end");
  await page.click("#replay-prev");
  assert.match(await page.textContent("#replay-ply"), new RegExp(`move ${total - 1} of`));
  assert.deepEqual(errors, []);
});
