// The back button of a match or replay page. It goes where the game was opened from (the
// router remembers a tournament page per game in this tab); when nothing is remembered (the
// game was opened in a new tab, from a bookmark or a shared address), a game of the tournament
// this server runs still goes back to that tournament: it is asked, and the button follows.
import { tournaments } from "./api.js";
import { h } from "./dom.js";
import { backOf, navigate, rememberBack } from "./router.js";

export function backButton(matchId: string): HTMLButtonElement {
  let back = backOf(matchId);
  const button = h("button", { class: "back", onclick: () => navigate(back.path) }, back.label);
  if (back.path === "/") {
    void tournamentOf(matchId).then((tournamentId) => {
      if (!tournamentId) return;
      rememberBack(matchId, `/tournament/${tournamentId}`);
      back = backOf(matchId);
      button.textContent = back.label;
    }).catch(() => undefined); // a plain server (no tournament) or none reachable: the lobby it is
  }
  return button;
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
