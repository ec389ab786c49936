// The message catalogues, checked without a browser: every language has exactly the English
// keys, each message keeps the English placeholders (in every plural form), plural messages
// stay plural, and the English rules texts served are docs/rules/*.md as they are.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import test from "node:test";
import { fileURLToPath } from "node:url";
import { loadCatalogues } from "./harness.mjs";

const here = dirname(fileURLToPath(import.meta.url));

const { en, ro, hu, eu, format, pickLanguage } = await loadCatalogues();
const OTHERS = { ro, hu, eu };

function forms(message) {
  return typeof message === "string" ? [message] : Object.values(message);
}

function placeholders(text) {
  return [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
}

for (const [lang, catalogue] of Object.entries(OTHERS)) {
  test(`${lang} has every English key and no other`, () => {
    const missing = Object.keys(en).filter((k) => !Object.hasOwn(catalogue, k));
    const extra = Object.keys(catalogue).filter((k) => !Object.hasOwn(en, k));
    assert.deepEqual({ missing, extra }, { missing: [], extra: [] });
  });

  test(`${lang} keeps each message's placeholders`, () => {
    const wrong = [];
    for (const [key, message] of Object.entries(en)) {
      const want = [...new Set(forms(message).flatMap(placeholders))].sort().join(",");
      for (const text of forms(catalogue[key] ?? "")) {
        const got = [...new Set(placeholders(text))].sort().join(",");
        // A plural form may leave {count} out ("one stack" in words), nothing else.
        const gotWithCount = typeof message === "string" ? got : [...new Set([...placeholders(text), "count"])].sort().join(",");
        if (got !== want && gotWithCount !== want) wrong.push(`${key}: ${JSON.stringify(text)} has {${got}}, English {${want}}`);
      }
      if (typeof message !== "string" && (typeof catalogue[key] === "string" || !catalogue[key]?.other)) wrong.push(`${key}: not plural`);
    }
    assert.deepEqual(wrong, []);
  });

  test(`${lang} is translated (not the English words)`, () => {
    // Words the same in every language: names, notation, symbols.
    const same = Object.entries(en).filter(([key, message]) => JSON.stringify(catalogue[key]) === JSON.stringify(message)).map(([key]) => key);
    const allowed = new Set(["duration.min", "duration.s", "replay.title", "names.seat", "form.bot", "tournament.game", "variant.standard", "tournament.participant"]);
    assert.deepEqual(same.filter((key) => !allowed.has(key)), []);
  });
}

test("plural forms are picked by the language's rules", () => {
  const message = ro["options.players"];
  assert.match(format(message, { count: 1 }, new Intl.PluralRules("ro")), /^1 /);
  assert.equal(format(en["options.players"], { count: 3 }, new Intl.PluralRules("en")), "3 players");
  assert.equal(format(en["options.players"], { count: 1 }, new Intl.PluralRules("en")), "1 player");
  assert.equal(format(en["match.seat"], { seat: 2 }, new Intl.PluralRules("en")), "seat 2");
});

test("the browser's first language we have is the default", () => {
  assert.equal(pickLanguage(["de-DE", "hu-HU", "en"]), "hu");
  assert.equal(pickLanguage(["ro"]), "ro");
  assert.equal(pickLanguage(["eu-ES", "es"]), "eu");
  assert.equal(pickLanguage(["fr", "de"]), "en");
  assert.equal(pickLanguage([]), "en");
});

test("the English rules served are docs/rules as written", () => {
  for (const game of ["pylos", "kabaleo"]) {
    const served = readFileSync(join(here, `../public/rules-${game}-en.txt`));
    assert.ok(served.equals(readFileSync(join(here, `../../../docs/rules/${game}.md`))), `${game}: run scripts/rules-texts.py`);
  }
});

test("the repaired Romanian rules have no garbled letters left", () => {
  const text = readFileSync(join(here, "../public/rules-kabaleo-ro.txt"), "utf8");
  assert.doesNotMatch(text, /[ÃÅÄ][\u0080-\u00bf\u0152-\u2122]/);
  assert.match(text, /CONŢINUT/);
  assert.match(text, /SFÂRŞITUL JOCULUI/);
});
