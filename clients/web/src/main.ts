// Entry point: one page, seven screens chosen by the address's #route, and the language switch
// in every screen's header (switching draws the current screen again: nothing is reloaded, and
// the seats this browser holds stay in localStorage).
import { language, LANGUAGES, setLanguage, t, type Lang } from "./i18n.js";
import { showArena, showEntrant } from "./arena.js";
import { h } from "./dom.js";
import { showLobby } from "./lobby.js";
import { showMatch } from "./match.js";
import { showReplay } from "./replay.js";
import { currentRoute, noteArrival, type Route } from "./router.js";
import { showRules } from "./rules.js";
import { showTournament, showTournaments } from "./tournament.js";

const root = document.getElementById("app")!;
let leave: (() => void) | null = null;
let previous: Route | null = null;

function languageSwitch(): HTMLElement {
  const select = h("select", { id: "language", "aria-label": t("lang.label") },
    LANGUAGES.map((l) => h("option", { value: l.code, lang: l.code, selected: l.code === language() }, l.name)));
  select.addEventListener("change", () => {
    setLanguage(select.value as Lang);
    show(currentRoute());
    document.getElementById("language")?.focus();
  });
  return h("span", { class: "language" }, select);
}

function show(current: Route): void {
  leave?.();
  if (current.name === "match") leave = showMatch(root, current.id);
  else if (current.name === "replay") leave = showReplay(root, current.id);
  else if (current.name === "tournament") leave = current.id ? showTournament(root, current.id) : showTournaments(root);
  else if (current.name === "arena") leave = current.id ? showEntrant(root, current.id) : showArena(root);
  else if (current.name === "rules") leave = showRules(root, current.id as "pylos" | "kabaleo");
  else leave = showLobby(root);
  root.querySelector("header.top")?.append(languageSwitch());
}

function route(): void {
  const current = currentRoute();
  noteArrival(previous, current);
  previous = current;
  show(current);
  window.scrollTo(0, 0);
}

document.documentElement.lang = language();
window.addEventListener("hashchange", route);
route();
