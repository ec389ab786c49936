// Layout checks for phones: every element's box inside the viewport's width, and every control
// a finger can tap at least 44 x 44 CSS pixels (a checkbox counts by its label).

/** The visible elements whose box reaches outside [0, innerWidth] (tag, class, id, left, right). */
export async function overflowing(page) {
  return page.evaluate(() => {
    const width = window.innerWidth;
    const out = [];
    for (const el of document.body.querySelectorAll("*")) {
      const box = el.getBoundingClientRect();
      if (!box.width || !box.height) continue;
      if (box.left < -0.5 || box.right > width + 0.5) {
        out.push(`${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""}${el.className && typeof el.className === "string" ? `.${el.className.trim().split(/\s+/).join(".")}` : ""} [${Math.round(box.left)}, ${Math.round(box.right)}]`);
      }
    }
    if (document.documentElement.scrollWidth > width) out.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} px`);
    return out;
  });
}

/** The visible buttons, links, fields and lists smaller than 44 x 44 px to tap. */
export async function smallTargets(page, min = 44) {
  return page.evaluate((min) => {
    const out = [];
    for (const el of document.body.querySelectorAll("button, a[href], select, input, textarea")) {
      const target = el.matches('input[type="checkbox"], input[type="radio"]') ? el.closest("label") ?? el : el;
      const box = target.getBoundingClientRect();
      if (!box.width || !box.height) continue; // not shown
      if (box.width < min - 0.5 || box.height < min - 0.5) {
        out.push(`${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ""}${el.className ? `.${String(el.className).trim().split(/\s+/).join(".")}` : ""} "${(el.textContent ?? "").trim().slice(0, 30)}" ${Math.round(box.width)}x${Math.round(box.height)}`);
      }
    }
    return out;
  }, min);
}
