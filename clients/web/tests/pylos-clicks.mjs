// Playing Pylos by clicking, as a person does, for tests that need a game played to its end but
// do not test the board itself (pylos.test.mjs does): on each turn of ours, the first highlighted
// place; when only raises are left, a free ball then its first target; after a square, one ball
// taken back, then Done when a second may come back. A move counts once the move list has it.

const MOVE_OR_END = ".end .result, svg.pyramid .place.target, svg.pyramid .place.recoverable, svg.pyramid .place.source";

async function movesShown(page) {
  return page.$$eval("ol.moves li", (items) => items.length);
}

async function movedOrEnded(page, before) {
  await page.waitForFunction((n) => document.querySelectorAll("ol.moves li").length > n || document.querySelector(".end .result"), before, { timeout: 60_000 });
}

/** One move of ours (or none when the game is over); returns false once the end screen shows. */
export async function clickOneMove(page) {
  await page.waitForSelector(MOVE_OR_END, { timeout: 60_000 });
  if (await page.$(".end .result")) return false;
  const before = await movesShown(page);
  if (await page.$("svg.pyramid .place.recoverable")) {
    await page.click("svg.pyramid .place.recoverable");
    if (await page.$("svg.pyramid .place.recoverable")) await page.click("button.done");
  } else if (await page.$("svg.pyramid .place.target")) {
    await page.click("svg.pyramid .place.target");
    if (await page.$("svg.pyramid .place.recoverable")) return true; // a square: recover next
  } else {
    await page.click("svg.pyramid .place.source");
    await page.click("svg.pyramid .place.target");
    if (await page.$("svg.pyramid .place.recoverable")) return true;
  }
  await movedOrEnded(page, before);
  return true;
}

/** Clicks moves until the end screen shows (at most `limit` of ours). */
export async function clickToTheEnd(page, limit = 200) {
  for (let i = 0; i < limit; i++) {
    if (!(await clickOneMove(page))) return;
  }
  throw new Error(`no end after ${limit} moves`);
}
