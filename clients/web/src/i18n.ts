// The page's words in four languages: English, and the languages of the games' original rule
// texts (Romanian and Hungarian for Kabaleo, Basque for Pylos). One catalogue per language
// (src/locales/*.ts), every message by key: `t("lobby.matches")`, with named placeholders
// (`t("move.refused", { move, why })`) and plural forms chosen by Intl.PluralRules from the
// `count` placeholder. The language: the one chosen with the header's switch (remembered in
// localStorage), else the first of the browser's languages that we have, else English.
import { en, type Catalogue, type Key, type Message } from "./locales/en.js";
import { eu } from "./locales/eu.js";
import { hu } from "./locales/hu.js";
import { ro } from "./locales/ro.js";

export type { Catalogue, Key, Message };
export type Lang = "en" | "ro" | "hu" | "eu";

/** Each language named in itself, in the order the switch lists them. */
export const LANGUAGES: { code: Lang; name: string }[] = [
  { code: "en", name: "English" },
  { code: "ro", name: "Română" },
  { code: "hu", name: "Magyar" },
  { code: "eu", name: "Euskara" },
];

export const CATALOGUES: Record<Lang, Catalogue> = { en, ro, hu, eu };
const LANG_KEY = "ziggurat.lang";

function isLang(code: string | null | undefined): code is Lang {
  return !!code && code in CATALOGUES;
}

/** The first of `preferred` (BCP 47 tags, as navigator.languages) that we have: "ro-RO" is ro. */
export function pickLanguage(preferred: readonly string[]): Lang {
  for (const tag of preferred) {
    const base = tag.toLowerCase().split("-")[0];
    if (isLang(base)) return base;
  }
  return "en";
}

function initial(): Lang {
  try {
    const stored = localStorage.getItem(LANG_KEY);
    if (isLang(stored)) return stored;
  } catch {
    // storage refused (a locked-down browser): the browser's languages decide
  }
  return pickLanguage(navigator.languages?.length ? navigator.languages : [navigator.language]);
}

let current: Lang = typeof navigator === "undefined" ? "en" : initial();
let plurals = new Intl.PluralRules(current);

export function language(): Lang {
  return current;
}

/** Switch the page's language, remember it, and set <html lang>; the caller re-renders. */
export function setLanguage(code: Lang): void {
  current = code;
  plurals = new Intl.PluralRules(code);
  try {
    localStorage.setItem(LANG_KEY, code);
  } catch {
    // not remembered: this page still shows it
  }
  document.documentElement.lang = code;
}

export type Params = Record<string, string | number>;

/** Fills a message's `{name}` placeholders; a plural message picks its form from `count`. */
export function format(message: Message, params: Params, rules: Intl.PluralRules): string {
  let text: string;
  if (typeof message === "string") {
    text = message;
  } else {
    const form = rules.select(Number(params.count ?? 0));
    text = message[form] ?? message.other;
  }
  return text.replace(/\{(\w+)\}/g, (whole, name: string) => (name in params ? String(params[name]) : whole));
}

/** The message `key` in the page's language, its placeholders filled from `params`. */
export function t(key: Key, params: Params = {}): string {
  return format(CATALOGUES[current][key] ?? en[key], params, plurals);
}

/** "Ann, Bea and Cy" in the page's language. */
export function listAnd(items: string[]): string {
  return new Intl.ListFormat(current, { type: "conjunction" }).format(items);
}
