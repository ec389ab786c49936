// Entry point: one page, four screens chosen by the address's #route.
import { showLobby } from "./lobby.js";
import { showMatch } from "./match.js";
import { showReplay } from "./replay.js";
import { currentRoute, noteArrival, type Route } from "./router.js";
import { showTournament, showTournaments } from "./tournament.js";

const root = document.getElementById("app")!;
let leave: (() => void) | null = null;
let previous: Route | null = null;

function route(): void {
  leave?.();
  const current = currentRoute();
  noteArrival(previous, current);
  previous = current;
  if (current.name === "match") leave = showMatch(root, current.id);
  else if (current.name === "replay") leave = showReplay(root, current.id);
  else if (current.name === "tournament") leave = current.id ? showTournament(root, current.id) : showTournaments(root);
  else leave = showLobby(root);
  window.scrollTo(0, 0);
}

window.addEventListener("hashchange", route);
route();
