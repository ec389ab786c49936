// The game pages on a phone (390 x 844, touch): the Pylos page, the Kabaleo page and the end
// screen fit the width (every element's box inside the viewport), the controls are 44 px touch
// targets, and a Kabaleo move (tap a chip, tap a stack) needs no scrolling: your hand stays at
// the bottom of the screen, so the chip and a stack it can go on are in view at once.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { assertAccessible, assertFitsWidth, assertTouchTargets } from "./a11y.mjs";
import { callApi, launchBrowser, shot, startServer } from "./harness.mjs";

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

const PHONE = { viewport: { width: 390, height: 844 }, hasTouch: true, isMobile: true, deviceScaleFactor: 1 };
// A checkbox's touch target is its label (the notation view's switch: the box and its words).
const CONTROLS = ".main button, .main input:not([type=checkbox]), .main label:has(input[type=checkbox]), .side button, .top button, svg.pyramid circle[data-place], .stack, .hand.mine .chip";

async function phonePage(matchId, seat, token) {
  const context = await chrome.browser.newContext(PHONE);
  await context.addInitScript((t) => {
    localStorage.setItem("ziggurat.seats", JSON.stringify({ [t.matchId]: t }));
  }, { matchId, seat, token, name: "Ada" });
  const page = await context.newPage();
  page.errors = [];
  page.on("pageerror", (e) => page.errors.push(e.message));
  await page.goto(`${server.url}#/match/${matchId}`);
  return page;
}

function inView(box) {
  return box && box.y >= 0 && box.y + box.height <= 844 && box.x >= 0 && box.x + box.width <= 390;
}

test("Pylos on a phone: the page and its end screen fit 390 px, with 44 px targets", { timeout: 120_000 }, async () => {
  const created = await callApi(server, "CreateMatch", { config: { game: "GAME_PYLOS", seats: 2 }, seatAssignment: "SEAT_ASSIGNMENT_CHOSEN" });
  const matchId = created.match.matchId;
  const ada = await callApi(server, "JoinMatch", { matchId, playerName: "Ada", seat: 1 });
  await callApi(server, "AddBot", { matchId, bot: "random" });
  const page = await phonePage(matchId, 1, ada.token);
  await page.waitForSelector("svg.pyramid .place.target");
  // A few moves by taps, so balls and a second level can show.
  for (let i = 0; i < 4; i++) {
    const before = await page.$$eval("ol.moves li", (items) => items.length);
    await page.tap("svg.pyramid .place.target");
    await page.waitForFunction((n) => document.querySelectorAll("ol.moves li").length > n + 1, before);
  }
  await page.waitForSelector("svg.pyramid .place.target");
  await assertFitsWidth(page, "the Pylos page");
  await assertTouchTargets(page, CONTROLS, "the Pylos page");
  await shot(page, "phone-pylos");
  await callApi(server, "Resign", { matchId }, ada.token);
  await page.waitForSelector(".end .result");
  await assertFitsWidth(page, "the Pylos end screen");
  await assertAccessible(page, "the Pylos end screen on a phone");
  await shot(page, "phone-pylos-end");
  assert.deepEqual(page.errors, []);
});

test("Kabaleo on a phone: fits 390 px, and a move (tap a chip, tap a stack) needs no scrolling", { timeout: 120_000 }, async () => {
  const created = await callApi(server, "CreateMatch", { config: { game: "GAME_KABALEO", seats: 3 }, seatAssignment: "SEAT_ASSIGNMENT_CHOSEN" });
  const matchId = created.match.matchId;
  const ada = await callApi(server, "JoinMatch", { matchId, playerName: "Ada", seat: 1 });
  await callApi(server, "AddBot", { matchId, bot: "random" });
  await callApi(server, "AddBot", { matchId, bot: "random" });
  const page = await phonePage(matchId, 1, ada.token);
  let moves = 0;
  for (let round = 0; round < 10 && moves < 4; round++) {
    const chip = await page.waitForSelector(".end .result, .hand.mine .chip:not([disabled])", { timeout: 60_000 });
    if (await page.$(".end .result")) break;
    await assertFitsWidth(page, "the Kabaleo page");
    await assertTouchTargets(page, CONTROLS, "the Kabaleo page");
    // Taps at the elements' places on the screen as they are: nothing scrolls them into view.
    const scrolled = await page.evaluate(() => window.scrollY);
    const chipBox = await chip.boundingBox();
    assert.ok(inView(chipBox), `the chip is on the screen without scrolling: ${JSON.stringify(chipBox)}`);
    await page.touchscreen.tap(chipBox.x + chipBox.width / 2, chipBox.y + chipBox.height / 2);
    await page.waitForSelector(".stack.target");
    const boxes = await Promise.all((await page.$$(".stack.target")).map((s) => s.boundingBox()));
    const visible = boxes.find(inView);
    assert.ok(visible, `a highlighted stack is on the screen with the chip: ${JSON.stringify(boxes.slice(0, 3))}`);
    if (moves === 0) await shot(page, "phone-kabaleo-chip-picked");
    const before = await page.$$eval("ol.moves li", (items) => items.length);
    await page.touchscreen.tap(visible.x + visible.width / 2, visible.y + visible.height / 2);
    await page.waitForFunction((n) => document.querySelectorAll("ol.moves li").length > n, before);
    assert.equal(await page.evaluate(() => window.scrollY), scrolled, "the move needed no scrolling");
    moves++;
  }
  assert.equal(moves, 4);
  await assertAccessible(page, "a Kabaleo game in progress on a phone");
  await callApi(server, "Resign", { matchId }, ada.token);
  await page.waitForSelector(".end .result");
  await assertFitsWidth(page, "the Kabaleo end screen");
  await shot(page, "phone-kabaleo-end");
  assert.deepEqual(page.errors, []);
});
