// Playing Pylos by clicking, as a person does, for tests that need a game played to its end but
// do not test the board itself (pylos.test.mjs does): on each turn of ours, the first highlighted
// place; when only raises are left, a free ball then its first target; after a square, one ball
// taken back, then Done when a second may come back. A move counts once the move list has it.

const MOVE_OR_END = ".end .result, svg.pyramid .place.target, svg.pyramid .place.recoverable, svg.pyramid .place.source";

/** The most plies a `beginner` Pylos game can last (docs/rules/pylos.md, "Variants"). Count
 * each ball on the board at its level: a place adds the level it puts a ball on (at least 1), a
 * raise adds the levels it climbs (at least 1), and with no recovery nothing ever takes a ball
 * off, so every ply adds at least 1 to a sum that is at most the full pyramid's,
 * 16·1 + 9·2 + 4·3 + 1·4 = 50. (10,000 such games of this helper's clicks against random moves,
 * played with the server's rules engine, lasted 30 to 37 plies.)
 * In `standard` and `advanced`, recovered balls go back to the reserve and positions can come
 * again, so the only bound the rules give is the draw on a position's third occurrence: under
 * twice the number of positions (board and side to move), and level 1 alone can hold balls in
 * nearly 3^16 ways, so some 10^8 plies, no bound for a test. And a random opponent does make
 * long games there: of 10,000 against this helper's clicks, 1 in 10 passed 150 plies, 1 in 100
 * passed 270, the longest 514. */
export const BEGINNER_MAX_PLIES = 50;

async function movesShown(page) {
  return page.$$eval("ol.moves li", (items) => items.length);
}

async function movedOrEnded(page, before) {
  await page.waitForFunction((n) => document.querySelectorAll("ol.moves li").length > n || document.querySelector(".end .result"), before, { timeout: 60_000 });
}

/** One move of ours, with the recovery when it makes a square (or none when the game is
 * over); returns false once the end screen shows. */
export async function clickOneMove(page) {
  await page.waitForSelector(MOVE_OR_END, { timeout: 60_000 });
  if (await page.$(".end .result")) return false;
  const before = await movesShown(page);
  if (!(await page.$("svg.pyramid .place.recoverable"))) {
    if (!(await page.$("svg.pyramid .place.target"))) await page.click("svg.pyramid .place.source");
    await page.click("svg.pyramid .place.target");
  }
  if (await page.$("svg.pyramid .place.recoverable")) {
    await page.click("svg.pyramid .place.recoverable");
    if (await page.$("svg.pyramid .place.recoverable")) await page.click("button.done");
  }
  await movedOrEnded(page, before);
  return true;
}

/** What the match page shows, for a failure message: whose turn, how many plies, the last move. */
export async function describePage(page) {
  return page.evaluate(() => {
    const text = (selector) => document.querySelector(selector)?.textContent?.trim() ?? "";
    const moves = [...document.querySelectorAll("ol.moves li")].map((li) => li.textContent);
    return `title "${text("h1")}", ${moves.length} plies in the move list, last "${moves.at(-1) ?? ""}"` +
      `, message "${text(".message")}", hint "${text(".hint-line")}"`;
  });
}

/** Clicks our moves until the end screen shows, in a game that cannot last more than
 * `maxPlies` plies (e.g. BEGINNER_MAX_PLIES): we have at most half of them, rounded up, so a
 * turn of ours after that many moves means the game broke the rules' bound. Returns our moves. */
export async function clickToTheEnd(page, maxPlies) {
  if (!Number.isInteger(maxPlies) || maxPlies < 1) throw new Error(`clickToTheEnd needs the game's most plies, not ${maxPlies}`);
  const ours = Math.ceil(maxPlies / 2);
  for (let moved = 0; ; moved++) {
    await page.waitForSelector(MOVE_OR_END, { timeout: 60_000 });
    if (await page.$(".end .result")) return moved;
    if (moved === ours) {
      throw new Error(`no end after ${moved} moves of ours, the most a game of at most ${maxPlies} plies gives us; the page shows: ${await describePage(page)}`);
    }
    await clickOneMove(page);
  }
}
