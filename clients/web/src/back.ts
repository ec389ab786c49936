// The back button of a match or replay page. It goes where the game was opened from (the
// router remembers a tournament page per game in this tab); when nothing is remembered (the
// game was opened in a new tab, from a bookmark or a shared address), a game of the tournament
// this server runs still goes back to that tournament, and a game of its arena to the ladder:
// the server is asked, and the button follows.
import { arena, tournaments } from "./api.js";
import { h } from "./dom.js";
import { backOf, navigate, rememberBack } from "./router.js";

export function backButton(matchId: string): HTMLButtonElement {
  let back = backOf(matchId);
  const button = h("button", { class: "back", onclick: () => navigate(back.path) }, back.label);
  if (back.path === "/") {
    const follow = (path: string): void => {
      rememberBack(matchId, path);
      back = backOf(matchId);
      button.textContent = back.label;
    };
    void tournamentOf(matchId).then((tournamentId) => {
      if (tournamentId) follow(`/tournament/${tournamentId}`);
    }).catch(() => undefined); // a plain server (no tournament) or none reachable: the lobby it is
    void isArenaGame(matchId).then((yes) => {
      if (yes) follow("/arena");
    }).catch(() => undefined); // no arena here
  }
  return button;
}

/** Whether `matchId` is one of the games of the arena this server runs (live, or among its last 500). */
async function isArenaGame(matchId: string): Promise<boolean> {
  const live = (await arena.getArena({})).arena?.liveGames ?? [];
  if (live.some((g) => g.matchId === matchId)) return true;
  const listed = await arena.listArenaGames({ limit: 500 });
  return listed.games.some((g) => g.matchId === matchId);
}

/** The tournament (of those this server runs) that has `matchId` among its games, if any. */
async function tournamentOf(matchId: string): Promise<string> {
  const listed = await tournaments.listTournaments({});
  for (const t of listed.tournaments) {
    const full = (await tournaments.getTournament({ tournamentId: t.tournamentId })).tournament;
    if (full?.games.some((g) => g.matchId === matchId)) return t.tournamentId;
  }
  return "";
}
