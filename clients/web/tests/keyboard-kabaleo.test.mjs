// A whole two-seat Kabaleo game played with the keyboard only against the `random` built-in bot
// on a real `ziggurat serve`: Tab to your hand (one tab stop), arrows to a colour, Enter picks it
// and takes the focus to the highlighted stacks (never to the page), arrows to a stack, Enter
// plays; Escape drops a picked chip; a typed move that is not legal is answered in words.
// axe-core checks the lobby and the game in progress.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertAccessible, focused, tabTo } from "./a11y.mjs";
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

const plies = (page) => page.$$eval("ol.moves li", (items) => items.length);
const active = (page, key) => page.evaluate((k) => document.activeElement?.dataset?.[k] ?? "", key);

/** Presses `next`/`previous` until the focused element's data-`key` is `value` (in `order`). */
async function roveTo(page, key, value, order) {
  for (let i = 0; i < 20; i++) {
    const at = await active(page, key);
    if (at === value) return;
    assert.ok(order.includes(at), `the focus left the group (on ${await focused(page)})`);
    await page.keyboard.press(order.indexOf(at) < order.indexOf(value) ? "ArrowRight" : "ArrowLeft");
  }
  throw new Error(`the arrows did not reach ${key} ${value}`);
}

test("the lobby passes axe, and a whole Kabaleo game is played with the keyboard only", { timeout: 300_000 }, async () => {
  const lobby = await chrome.browser.newPage({ viewport: { width: 1200, height: 900 } });
  await lobby.goto(server.url);
  await lobby.waitForSelector("#create");
  await assertAccessible(lobby, "the lobby");
  await lobby.close();

  const created = await callApi(server, "CreateMatch", { config: { game: "GAME_KABALEO", seats: 2 }, seatAssignment: "SEAT_ASSIGNMENT_CHOSEN" });
  const matchId = created.match.matchId;
  const ada = await callApi(server, "JoinMatch", { matchId, playerName: "Ada", seat: 1 });
  await callApi(server, "AddBot", { matchId, bot: "random" });
  const page = await pageWithSeat(chrome, { width: 1200, height: 900 }, { matchId, seat: 1, token: ada.token, name: "Ada" });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${server.url}#/match/${matchId}`);
  await page.waitForSelector(".kabaleo .stacks");
  // The stacks are one tab stop, named for a screen reader.
  assert.equal(await page.$$eval(".stack[tabindex='0']", (e) => e.length), 1);
  assert.match(await page.textContent(".stack[data-stack='1'] .sr-only"), /^stack 1: (red|yellow|green|blue|orange|pink) base/);

  let moved = 0;
  let checked = false;
  for (let round = 0; round < 100; round++) {
    await page.waitForSelector(".end .result, .hand.mine .chip:not([disabled])", { timeout: 60_000 });
    if (await page.$(".end .result")) break;
    const before = await plies(page);
    const colours = await page.$$eval(".hand.mine .chip:not([disabled])", (chips) => chips.map((c) => c.dataset.colour));
    assert.equal(await page.$$eval(".hand.mine .chip[tabindex='0']", (e) => e.length), 1, "the hand is one tab stop");
    await tabTo(page, ".hand.mine .chip[tabindex='0']", { back: moved > 0 });
    const colour = colours[moved % colours.length];
    await roveTo(page, "colour", colour, colours);
    await page.keyboard.press("Enter");
    assert.match(await focused(page), /^div\[stack=\d+\]/, "after Enter on a chip the focus is on a stack");
    assert.ok(await page.$(`.hand.mine .chip.selected[data-colour='${colour}'][aria-pressed='true']`));
    if (!checked) {
      await shot(page, "keyboard-kabaleo-chip-picked");
      // Escape drops the chip and gives the focus back to it; Enter picks it again.
      await page.keyboard.press("Escape");
      assert.equal(await page.$(".stack.target"), null);
      assert.equal(await active(page, "colour"), colour);
      await page.keyboard.press("Enter");
      // A typed move that cannot be played is refused in words, and nothing is sent.
      await tabTo(page, "#move-input");
      await page.keyboard.type("Q77");
      await page.keyboard.press("Enter");
      assert.match(await page.textContent("#move-error"), /^“Q77” is not a Kabaleo move|^Q77 is not a legal move now\.$/);
      await page.keyboard.press("Control+A");
      await page.keyboard.type("b99");
      await page.keyboard.press("Enter");
      assert.equal(await page.textContent("#move-error"), "B99 is not a legal move now.");
      await assertAccessible(page, "a Kabaleo game in progress");
      await shot(page, "keyboard-kabaleo-typed-error");
      assert.equal(await plies(page), before);
      await tabTo(page, ".stack[tabindex='0']", { back: true });
      checked = true;
    }
    const targets = await page.$$eval(".stack.target", (els) => els.map((e) => e.dataset.stack));
    const all = await page.$$eval(".stack", (els) => els.map((e) => e.dataset.stack));
    const stack = targets[moved % targets.length];
    await roveTo(page, "stack", stack, all);
    await page.keyboard.press("Enter");
    await page.waitForFunction((n) => document.querySelectorAll("ol.moves li").length > n || document.querySelector(".end .result"), before);
    assert.notEqual(await focused(page), "BODY", "the focus stays in the board after a move");
    moved++;
  }
  await page.waitForSelector(".end .result");
  assert.equal(moved, 12, "two seats: 12 pieces each, all placed by keyboard");
  assert.ok(checked);
  await shot(page, "keyboard-kabaleo-end");
  await assertAccessible(page, "the Kabaleo end screen");
  assert.deepEqual(errors, []);
});
