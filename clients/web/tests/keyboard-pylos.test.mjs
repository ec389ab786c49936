// A whole Pylos game played with the keyboard only, against the `random` built-in bot on a real
// `ziggurat serve`: the board is one tab stop, the keys move its roving focus between places
// (Page Up/Down between levels), Enter plays; the game includes a raise (with an Escape that
// drops a picked ball first), a square and the take-back of balls (Done reached with Tab), and
// moves typed in notation (a garbled one and an illegal one answered in words, then a good one).
// The same approach as pylos.test.mjs (build in a 2x2 block the bot has not touched) makes the
// square; the test fails loudly if the game ends without a raise or a square. axe-core checks the
// game in progress, the end screen and the replay page.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertAccessible, focusPlace, focused, tabTo } from "./a11y.mjs";
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

const COLS = "abcd";

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

const places = (page, cls) => page.$$eval(`svg.pyramid .place.${cls}`, (els) => els.map((e) => e.dataset.place));
const plies = (page) => page.$$eval("ol.moves li", (items) => items.length);
const movedOrEnded = (page, n) => page.waitForFunction((k) => document.querySelectorAll("ol.moves li").length > k || document.querySelector(".end .result"), n, { timeout: 60_000 });

test("a whole Pylos game played with the keyboard only: a raise, a square, a take-back, typed moves", { timeout: 400_000 }, async () => {
  const created = await callApi(server, "CreateMatch", { config: { game: "GAME_PYLOS", seats: 2 }, seatAssignment: "SEAT_ASSIGNMENT_CHOSEN" });
  const matchId = created.match.matchId;
  const ada = await callApi(server, "JoinMatch", { matchId, playerName: "Ada", seat: 1 });
  const page = await pageWithSeat(chrome, { width: 1200, height: 900 }, { matchId, seat: 1, token: ada.token, name: "Ada" });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${server.url}#/match/${matchId}`);
  await page.waitForSelector(".add-bots button[data-bot=random]");
  await callApi(server, "AddBot", { matchId, bot: "random" });
  await page.waitForSelector("svg.pyramid .place.target");
  const me = await page.getAttribute(".pylos", "data-me");
  assert.equal(me, "L");

  // One tab stop: exactly one place has tabindex 0, and every place is named in notation.
  assert.equal(await page.$$eval("svg.pyramid [data-place][tabindex='0']", (e) => e.length), 1);
  assert.equal(await page.getAttribute("svg.pyramid circle[data-place='1c4']", "aria-label"), "level 1 c4, empty, play here");
  await tabTo(page, "svg.pyramid circle[data-place]");
  await shot(page, "keyboard-pylos-focus");

  // Typed moves: a garbled one and an illegal one are answered under the field; nothing is sent.
  await tabTo(page, "#move-input");
  await page.keyboard.type("zz9");
  await page.keyboard.press("Enter");
  assert.match(await page.textContent("#move-error"), /^“zz9” is not a Pylos move: write 1c4/);
  assert.equal(await page.getAttribute("#move-input", "aria-invalid"), "true");
  await page.keyboard.press("Control+A");
  await page.keyboard.type("2a1");
  await page.keyboard.press("Enter");
  assert.equal(await page.textContent("#move-error"), "2a1 is not a legal move now.");
  await shot(page, "keyboard-pylos-typed-error");
  assert.equal(await plies(page), 0);
  await page.keyboard.press("Control+A");
  await page.keyboard.type("1A1");
  await page.keyboard.press("Enter");
  await movedOrEnded(page, 0);
  assert.equal(await page.textContent("#move-error"), "");
  assert.match(await page.$eval("ol.moves li", (li) => li.textContent), /1a1/);
  await tabTo(page, "svg.pyramid circle[data-place]", { back: true });

  let raised = 0;
  let recovered = 0;
  let escaped = false;
  let accessible = false;
  for (let step = 0; step < 300; step++) {
    await page.waitForSelector(".end .result, svg.pyramid .place.target, svg.pyramid .place.recoverable, svg.pyramid .place.source", { timeout: 60_000 });
    if (await page.$(".end .result")) break;
    const before = await plies(page);
    assert.match(await focused(page), /^circle\[place=/, "the focus stays on the board between moves");
    const recoverable = await places(page, "recoverable");
    if (recoverable.length) {
      assert.ok(await page.$("svg.pyramid rect.square"), "the completed square is outlined");
      if (!recovered) await shot(page, "keyboard-pylos-square");
      await focusPlace(page, recoverable[0]);
      await page.keyboard.press("Enter");
      if ((await places(page, "recoverable")).length) {
        await tabTo(page, "button.done");
        await page.keyboard.press("Enter");
        await tabTo(page, "svg.pyramid circle[data-place]", { back: true });
      }
      await movedOrEnded(page, before);
      recovered++;
      continue;
    }
    const targets = await places(page, "target");
    const sources = await places(page, "source");
    if (sources.length && (!targets.length || !raised)) {
      // A raise: the free ball, then a place above. The first time, Escape drops the picked ball.
      await focusPlace(page, sources[0]);
      await page.keyboard.press("Enter");
      assert.ok(await page.$(`svg.pyramid .place.selected[data-place='${sources[0]}']`), "the ball is picked");
      assert.match(await page.getAttribute(`svg.pyramid [data-place='${sources[0]}']`, "aria-label"), /picked to raise/);
      if (!escaped) {
        await shot(page, "keyboard-pylos-raise-picked");
        await page.keyboard.press("Escape");
        assert.equal(await page.$("svg.pyramid .place.selected"), null, "Escape drops the picked ball");
        assert.ok((await places(page, "source")).includes(sources[0]));
        escaped = true;
        await page.keyboard.press("Enter");
      }
      const above = await places(page, "target");
      await focusPlace(page, above[0]);
      await page.keyboard.press("Enter");
      raised++;
      if (!(await places(page, "recoverable")).length) await movedOrEnded(page, before);
      continue;
    }
    const place = recovered ? targets[0] : choose(await board(page), me, targets);
    await focusPlace(page, place);
    await page.keyboard.press("Enter");
    if ((await places(page, "recoverable")).length) continue;
    await movedOrEnded(page, before);
    if (!accessible && before >= 6) {
      await assertAccessible(page, "a Pylos game in progress");
      await shot(page, "keyboard-pylos-in-progress");
      accessible = true;
    }
  }
  await page.waitForSelector(".end .result");
  await shot(page, "keyboard-pylos-end");
  assert.ok(raised >= 1, "the game included a raise");
  assert.ok(recovered >= 1, "the game included a square and a take-back");
  assert.ok(accessible);
  const moves = await page.$$eval("ol.moves li", (items) => items.map((i) => i.textContent));
  assert.ok(moves.some((m) => /Light: [1-4][a-d][1-4]-/.test(m)), "a raise of ours is in the move list");
  assert.ok(moves.some((m) => /Light: \S*x[1-4][a-d][1-4]/.test(m)), "a take-back of ours is in the move list");
  await assertAccessible(page, "the Pylos end screen");

  await tabTo(page, "a.to-replay");
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => /move 0 of \d+/.test(document.querySelector("#replay-ply")?.textContent ?? ""));
  await assertAccessible(page, "the replay page");
  assert.deepEqual(errors, []);
});
