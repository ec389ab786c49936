// The games' rules, in the reader's language where a text exists: #/rules/pylos, #/rules/kabaleo.
// The texts are static files beside the bundle (public/rules-GAME-LANG.txt): English from
// docs/rules/*.md, and the original rule texts the games came with, repaired where their
// accented letters were garbled (Kabaleo in Romanian and Hungarian, Pylos in Basque). A game
// with no text in the reader's language shows the English one, with a line saying so.
import { clear, h } from "./dom.js";
import { Game } from "./gen/ziggurat/v1/game_pb.js";
import { language, LANGUAGES, t, type Lang } from "./i18n.js";

export type RulesGame = "pylos" | "kabaleo";

/** Which languages each game's rules are written in (the files public/rules-GAME-LANG.txt). */
export const RULES_TEXTS: Record<RulesGame, Lang[]> = {
  pylos: ["en", "eu"],
  kabaleo: ["en", "ro", "hu"],
};

const GAME_NAMES: Record<RulesGame, string> = { pylos: "Pylos", kabaleo: "Kabaleo" };

/** The rules text of a game, if this client has one (a game added later has none: no link). */
export function rulesGameOf(game: Game | undefined): RulesGame | null {
  return game === Game.PYLOS ? "pylos" : game === Game.KABALEO ? "kabaleo" : null;
}

/** A link to a game's rules, opened in a new tab so that a game in progress stays in view. */
export function rulesLink(game: RulesGame, words = t("rules.link")): HTMLAnchorElement {
  return h("a", { class: "rules-link", href: `#/rules/${game}`, target: "_blank", rel: "noopener", "data-rules": game }, words);
}

/** The lobby's links: "Rules: Pylos · Kabaleo". */
export function rulesLinks(): HTMLElement {
  return h("span", { class: "rules-links" }, `${t("rules.link")}: `, rulesLink("pylos", "Pylos"), " · ", rulesLink("kabaleo", "Kabaleo"));
}

/** Which file to show for `game` to a reader of `lang`, and whether it is the English fallback. */
export function rulesFile(game: RulesGame, lang: Lang): { file: string; fallback: boolean } {
  const has = RULES_TEXTS[game].includes(lang);
  return { file: `/rules-${game}-${has ? lang : "en"}.txt`, fallback: !has };
}

export function showRules(root: HTMLElement, game: RulesGame): () => void {
  clear(root);
  const lang = language();
  const { file, fallback } = rulesFile(game, lang);
  const text = h("article", { class: "rules-text", lang: fallback ? "en" : lang });
  const back = h("button", { class: "back", onclick: () => (history.length > 1 ? history.back() : (window.location.hash = "#/")) }, t("rules.back"));
  root.append(h("header", { class: "top" }, back, h("h1", {}, t("rules.title", { game: GAME_NAMES[game] }))));
  if (fallback) root.append(h("p", { class: "rules-note" }, t("rules.inEnglish", { game: GAME_NAMES[game], language: LANGUAGES.find((l) => l.code === lang)?.name ?? lang })));
  root.append(text);
  const abort = new AbortController();
  void fetch(file, { signal: abort.signal }).then(async (response) => {
    if (!response.ok) throw new Error(String(response.status));
    render(text, await response.text());
  }).catch(() => {
    if (!abort.signal.aborted) text.append(h("p", { class: "message" }, t("rules.notFound")));
  });
  return () => abort.abort();
}

/** A little Markdown, enough for docs/rules (headings, lists, paragraphs, **bold**, `code`,
 * links shown as their words); a plain text shows one paragraph per line. Built as elements and
 * text nodes: nothing in a file becomes markup. */
export function render(into: HTMLElement, source: string): void {
  let list: HTMLElement | null = null;
  const listOf = (tag: "ul" | "ol"): HTMLElement => {
    if (list?.tagName.toLowerCase() !== tag) list = into.appendChild(h(tag, {}));
    return list;
  };
  for (const raw of source.replace(/\r\n?/g, "\n").split("\n")) {
    const line = raw.trimEnd();
    const heading = /^(#{1,4})\s+(.*)$/.exec(line);
    const item = /^\s*(?:[-*]|\d+\.)\s+(.*)$/.exec(line);
    if (item && !/^\s*\d+\.\s/.test(line)) {
      listOf("ul").append(h("li", {}, ...inline(item[1])));
      continue;
    }
    if (item) {
      listOf("ol").append(h("li", {}, ...inline(item[1])));
      continue;
    }
    const open = list as HTMLElement | null;
    if (open && /^\s+\S/.test(line)) {
      open.lastElementChild?.append(" ", ...inline(line.trim())); // a list item's next line
      continue;
    }
    list = null;
    if (!line.trim()) continue;
    if (heading) {
      const level = Math.min(4, heading[1].length + 1);
      into.append(h(`h${level}` as "h2", {}, ...inline(heading[2])));
    } else {
      const last = into.lastElementChild;
      // A Markdown paragraph runs on over its lines; a plain text's lines are paragraphs.
      if (last?.tagName === "P" && last.getAttribute("data-open") === "1" && /^[a-z(`*]/.test(line)) last.append(" ", ...inline(line));
      else into.append(h("p", { "data-open": "1" }, ...inline(line)));
    }
  }
  for (const p of into.querySelectorAll("p[data-open]")) p.removeAttribute("data-open");
}

function inline(text: string): (string | HTMLElement)[] {
  const out: (string | HTMLElement)[] = [];
  const pattern = /\*\*([^*]+)\*\*|`([^`]+)`|\[([^\]]+)\]\([^)]*\)|\*([^*]+)\*/g;
  let at = 0;
  for (let m = pattern.exec(text); m; m = pattern.exec(text)) {
    if (m.index > at) out.push(text.slice(at, m.index));
    if (m[1] !== undefined) out.push(h("strong", {}, m[1]));
    else if (m[2] !== undefined) out.push(h("code", {}, m[2]));
    else if (m[3] !== undefined) out.push(m[3]);
    else out.push(h("em", {}, m[4]));
    at = m.index + m[0].length;
  }
  if (at < text.length) out.push(text.slice(at));
  return out;
}
