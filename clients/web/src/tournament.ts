// The live tournament page (#/tournament/ID, served by `ziggurat tournament run` with an HTTP
// port): progress, standings, crosstable, the games in progress (each links to the ordinary
// match page to spectate it) and the finished ones, polled every REFRESH_MS from the read-only
// TournamentService. The server shows a game's result only once the tournament has recorded it
// (a duplicate deal: after its reveal), so the page cannot show anything earlier either.
import { explain, tournaments, unreachable } from "./api.js";
import { clear, h } from "./dom.js";
import {
  TournamentGameStatus, TournamentStatus, type Tournament, type TournamentGame,
} from "./gen/ziggurat/v1/tournament_service_pb.js";
import { navigate } from "./router.js";
import { gameName, terminationText } from "./text.js";

const REFRESH_MS = 1500;

/** #/tournament with no id: the tournament this server runs (the first listed). */
export function showTournaments(root: HTMLElement): () => void {
  clear(root);
  const status = h("p", { class: "status", role: "status" }, "Looking for the tournament…");
  root.append(h("header", { class: "top" }, h("button", { class: "back", onclick: () => navigate("/") }, "← Lobby"), h("h1", {}, "Tournament")), status);
  void tournaments.listTournaments({}).then((r) => {
    const first = r.tournaments[0];
    if (first) navigate(`/tournament/${first.tournamentId}`);
    else status.textContent = "This server runs no tournament.";
  }).catch((e: unknown) => { status.textContent = explain(e); });
  return () => undefined;
}

export function showTournament(root: HTMLElement, tournamentId: string): () => void {
  clear(root);
  const title = h("h1", {}, "Tournament");
  const progress = h("p", { class: "progress", id: "t-progress" });
  const status = h("p", { class: "status", role: "status" });
  const standingsBox = h("section", { class: "standings" });
  const crossBox = h("section", { class: "crosstable" });
  const liveBox = h("section", { class: "live-games" });
  const doneBox = h("section", { class: "done-games" });
  root.append(
    h("header", { class: "top" }, h("button", { class: "back", onclick: () => navigate("/") }, "← Lobby"), title),
    progress,
    h("div", { class: "tournament" },
      h("div", { class: "col wide" }, standingsBox, crossBox),
      h("div", { class: "col" }, liveBox, doneBox)),
    status,
  );
  let stopped = false;
  let timer = 0;

  async function refresh(): Promise<void> {
    try {
      const t = (await tournaments.getTournament({ tournamentId })).tournament;
      if (stopped || !t) return;
      render(t);
      status.textContent = "";
      if (t.status === TournamentStatus.FINISHED) return; // final: nothing changes any more
    } catch (error) {
      if (stopped) return;
      status.textContent = unreachable(error) ? "Connection lost — waiting for the server…" : explain(error);
    }
    timer = window.setTimeout(() => void refresh(), REFRESH_MS);
  }

  function render(t: Tournament): void {
    const finished = t.status === TournamentStatus.FINISHED;
    title.textContent = `${t.name} — ${gameName(t.game)} ${t.format.replace("_", " ")}`;
    progress.textContent = finished
      ? `Finished (${t.stopReason}): ${t.gamesDone} games played.`
      : `Running: ${t.gamesDone} of ${t.gamesTotal} games played.`;
    progress.dataset.status = finished ? "finished" : "running";
    renderStandings(standingsBox, t, finished);
    renderCrosstable(crossBox, t);
    renderGames(liveBox, doneBox, t);
  }

  void refresh();
  return () => {
    stopped = true;
    window.clearTimeout(timer);
  };
}

function points(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(1).replace(/\.0$/, "");
}

function renderStandings(section: HTMLElement, t: Tournament, finished: boolean): void {
  clear(section);
  section.append(
    h("h2", {}, finished ? "Final standings" : "Standings"),
    h("table", { class: "list standings-table" },
      h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, "Participant"), h("th", {}, "Games"), h("th", {}, "Points"), h("th", {}, "Score"), h("th", {}, "Rating"))),
      h("tbody", {}, t.standings.map((s) => h("tr", { "data-participant": s.participant, class: s.disqualified ? "disqualified" : "" },
        h("td", {}, s.rank),
        h("td", {}, s.participant, s.disqualified ? " (disqualified)" : "", s.forfeits ? ` · ${s.forfeits} forfeit games` : ""),
        h("td", {}, s.games),
        h("td", { class: "points" }, points(s.points)),
        h("td", {}, s.games ? `${((100 * s.points) / s.games).toFixed(1)} %` : "–"),
        h("td", {}, s.games ? s.rating.toFixed(2) : "–"))))),
  );
}

function renderCrosstable(section: HTMLElement, t: Tournament): void {
  clear(section);
  const names = t.participants;
  section.append(
    h("h2", {}, "Crosstable"),
    h("p", { class: "hint" }, "Each cell: the row's points against the column / games they played together."),
    h("table", { class: "list cross" },
      h("thead", {}, h("tr", {}, h("th", {}, ""), names.map((n) => h("th", {}, n)))),
      h("tbody", {}, t.crosstable.map((row) => {
        const cells = new Map(row.cells.map((c) => [c.opponent, c]));
        return h("tr", { "data-participant": row.participant }, h("th", {}, row.participant), names.map((n) => {
          if (n === row.participant) return h("td", { class: "self" }, "—");
          const cell = cells.get(n);
          return h("td", { "data-opponent": n }, cell ? `${points(cell.points)} / ${cell.games}` : "");
        }));
      }))),
  );
}

/** A game by its index (0-based): the one number of a game everywhere (docs/tournaments.md, "Game numbers"). */
function gameLine(g: TournamentGame): string {
  return `Game ${g.index}${g.round > 1 ? ` (round ${g.round})` : ""}: ${g.seats.join(" vs ")}`;
}

/** Who won a finished game: "greedy won", "draw", or the order of a Kabaleo table. */
function resultText(g: TournamentGame): string {
  const winners = g.seats.filter((_, i) => g.ranks[i] === 1);
  if (winners.length === 0) return "no winner: every seat forfeited";  // ranked last together
  if (winners.length === g.seats.length) return "draw";
  if (g.seats.length === 2) return `${winners[0]} won`;
  const order = g.seats.map((name, i) => ({ name, rank: g.ranks[i] ?? 0 })).sort((a, b) => a.rank - b.rank);
  return order.map((o) => `${o.rank}. ${o.name}`).join(", ");
}

function renderGames(live: HTMLElement, done: HTMLElement, t: Tournament): void {
  clear(live);
  clear(done);
  const playing = t.games.filter((g) => g.status === TournamentGameStatus.PLAYING);
  live.append(h("h2", {}, `In progress (${playing.length})`));
  live.append(playing.length
    ? h("ul", { class: "plain games" }, playing.map((g) => h("li", { class: "game-live", "data-match": g.matchId },
        h("span", {}, gameLine(g)), " ",
        h("a", { class: "spectate", href: `#/match/${g.matchId}` }, "Watch"))))
    : h("p", { class: "hint" }, t.status === TournamentStatus.FINISHED ? "Every game is over." : "None right now."));
  const finished = t.games.filter((g) => g.status === TournamentGameStatus.FINISHED).reverse();
  done.append(h("h2", {}, `Finished (${finished.length})`));
  if (finished.length) {
    done.append(h("ul", { class: "plain games" }, finished.map((g) => h("li", { class: "game-done", "data-match": g.matchId },
      h("span", {}, gameLine(g)), h("br"),
      h("span", { class: "result" }, resultText(g)), " ",
      h("span", { class: "hint" }, `(${terminationText(g.termination)}) `),
      g.matchId ? h("a", { href: `#/replay/${g.matchId}` }, "Replay") : h("span", { class: "hint" }, "not played")))));
  }
}
