// Accessibility helpers for the browser tests: axe-core (pinned in package.json) run inside the
// page, keyboard moves on the boards, and the checks a phone-sized page must pass.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

/** Runs axe-core on the page as it is now and fails on any "serious" or "critical" violation,
 * naming each rule, its help text and the elements it found. Returns the violations of lesser
 * impact (for a test that wants to look at them). */
export async function assertAccessible(page, where) {
  // page.evaluate is not subject to the page's Content-Security-Policy, as a <script> tag would be.
  await page.evaluate(AXE);
  const violations = await page.evaluate(async () => {
    const result = await window.axe.run(document, { resultTypes: ["violations"] });
    return result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.slice(0, 5).map((n) => `${n.target.join(" ")}: ${n.failureSummary?.split("\n").slice(1, 2).join("")}`) }));
  });
  const grave = violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(grave, [], `axe found serious or critical violations on ${where}:\n${JSON.stringify(grave, null, 2)}`);
  return violations;
}

/** What has the focus: a short description ("circle[data-place=1a1]", "BODY", ...). */
export async function focused(page) {
  return page.evaluate(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return "BODY";
    const data = Object.entries(el.dataset ?? {}).map(([k, v]) => `[${k}=${v}]`).join("");
    return `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""}${data}`;
  });
}

/** Presses Tab (or Shift+Tab) until the focused element matches `selector`. */
export async function tabTo(page, selector, { back = false, most = 60 } = {}) {
  for (let i = 0; i < most; i++) {
    if (await page.evaluate((s) => document.activeElement?.matches(s) ?? false, selector)) return;
    await page.keyboard.press(back ? "Shift+Tab" : "Tab");
  }
  throw new Error(`${most} presses of ${back ? "Shift+Tab" : "Tab"} did not reach ${selector}; the focus is on ${await focused(page)}`);
}

/** Moves the Pylos board's roving focus to place `p` with the keys the board documents: Page
 * Up/Down between levels, then Left/Right through the level's places in reading order. */
export async function focusPlace(page, p) {
  for (let i = 0; i < 40; i++) {
    const at = await page.evaluate(() => document.activeElement?.getAttribute("data-place") ?? "");
    assert.ok(at, `the focus left the Pylos board (on ${await focused(page)})`);
    if (at === p) return;
    const index = (q) => { const n = 5 - Number(q[0]); return (Number(q[2]) - 1) * n + "abcd".indexOf(q[1]); };
    if (at[0] !== p[0]) await page.keyboard.press(at[0] < p[0] ? "PageUp" : "PageDown");
    else await page.keyboard.press(index(at) < index(p) ? "ArrowRight" : "ArrowLeft");
  }
  throw new Error(`the keys did not reach ${p}`);
}

/** Every element's box lies within the viewport's width (no sideways scrolling on a phone). */
export async function assertFitsWidth(page, where) {
  const wide = await page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const out = [];
    for (const el of document.querySelectorAll("body *")) {
      const box = el.getBoundingClientRect();
      if (!box.width || !box.height) continue;
      if (box.left < -0.5 || box.right > width + 0.5) {
        out.push(`${el.tagName.toLowerCase()}.${[...el.classList].join(".")} ${Math.round(box.left)}..${Math.round(box.right)}`);
      }
    }
    return { width, scrollWidth: document.documentElement.scrollWidth, out: out.slice(0, 12) };
  });
  assert.deepEqual(wide.out, [], `elements wider than the ${wide.width} px viewport on ${where}`);
  assert.ok(wide.scrollWidth <= wide.width, `${where} scrolls sideways: ${wide.scrollWidth} > ${wide.width}`);
}

/** Every visible control matching `selector` is at least 44 x 44 px (a finger's touch target). */
export async function assertTouchTargets(page, selector, where) {
  const small = await page.$$eval(selector, (els) => els.flatMap((el) => {
    const box = el.getBoundingClientRect();
    if (!box.width || !box.height) return [];
    return box.width < 43.5 || box.height < 43.5
      ? [`${el.tagName.toLowerCase()}.${[...el.classList].join(".")}${el.dataset.place ?? el.dataset.colour ?? ""} ${box.width.toFixed(0)}x${box.height.toFixed(0)}`] : [];
  }));
  assert.deepEqual(small, [], `touch targets under 44 px on ${where}`);
}
