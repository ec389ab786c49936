// Hash routes: #/ (lobby), #/match/ID (play or watch), #/replay/ID (step through a finished match),
// #/tournament[/ID] (the live tournament page of a `ziggurat tournament run` server), #/arena (the
// ladder of a `ziggurat arena run` server) and #/arena/entrant/NAME (one entrant's profile).
import { t } from "./i18n.js";

export type Route =
  | { name: "lobby" }
  | { name: "match"; id: string }
  | { name: "replay"; id: string }
  | { name: "tournament"; id: string }
  | { name: "rules"; id: string }
  /** id: the entrant's name on its profile, "" on the ladder. */
  | { name: "arena"; id: string };

export function currentRoute(): Route {
  const path = window.location.hash.replace(/^#/, "") || "/";
  const match = /^\/(match|replay|tournament)\/([A-Za-z0-9_-]{1,64})$/.exec(path);
  if (match) return { name: match[1] as "match" | "replay" | "tournament", id: match[2] };
  if (path === "/tournament") return { name: "tournament", id: "" };
  if (path === "/arena") return { name: "arena", id: "" };
  const entrant = /^\/arena\/entrant\/([^/]{1,200})$/.exec(path);
  if (entrant) {
    try {
      return { name: "arena", id: decodeURIComponent(entrant[1]) };
    } catch {
      return { name: "arena", id: "" }; // a garbled address: the ladder
    }
  }
  const rules = /^\/rules\/(pylos|kabaleo)$/.exec(path);
  if (rules) return { name: "rules", id: rules[1] };
  return { name: "lobby" };
}

export function navigate(path: string): void {
  window.location.hash = `#${path}`;
}

const BACK_KEY = "ziggurat.back";

/**
 * Remember where a match or replay page was opened from, so that its back button goes there:
 * a game opened from the tournament page goes back to the tournament, not to the lobby. Kept per
 * game in sessionStorage (this tab only), so a reload keeps it too.
 */
export function noteArrival(from: Route | null, to: Route): void {
  if (to.name !== "match" && to.name !== "replay") return;
  const back = readBack();
  if (from?.name === "tournament" && from.id) back[to.id] = `/tournament/${from.id}`;
  else if (from?.name === "arena") back[to.id] = arenaPath(from.id);
  else if (from && from.name !== "match" && from.name !== "replay") delete back[to.id];
  sessionStorage.setItem(BACK_KEY, JSON.stringify(back));
}

/** The address of the arena's ladder (`entrant` "") or of one entrant's profile. */
export function arenaPath(entrant: string): string {
  return entrant ? `/arena/entrant/${encodeURIComponent(entrant)}` : "/arena";
}

/** Game `id`'s back button goes to `path` (a tournament or arena page) from now on, in this tab. */
export function rememberBack(id: string, path: string): void {
  const back = readBack();
  back[id] = path;
  sessionStorage.setItem(BACK_KEY, JSON.stringify(back));
}

/** Where the back button of game `id` goes, and its words. */
export function backOf(id: string): { path: string; label: string } {
  const path = readBack()[id];
  if (!path) return { path: "/", label: t("back.lobby") };
  return { path, label: path.startsWith("/arena") ? t("back.arena") : t("back.tournament") };
}

function readBack(): Record<string, string> {
  try {
    return JSON.parse(sessionStorage.getItem(BACK_KEY) ?? "{}") as Record<string, string>;
  } catch {
    return {};
  }
}
