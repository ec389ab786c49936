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
import { t } from "./i18n.js";

const REFRESH_MS = 1500;

/** #/tournament with no id: the tournament this server runs (the first listed). */
export function showTournaments(root: HTMLElement): () => void {
  clear(root);
  const status = h("p", { class: "status", role: "status" }, t("tournament.looking"));
  root.append(h("header", { class: "top" }, h("button", { class: "back", onclick: () => navigate("/") }, t("back.lobby")), h("h1", {}, t("tournament.title"))), status);
  void tournaments.listTournaments({}).then((r) => {
    const first = r.tournaments[0];
    if (first) navigate(`/tournament/${first.tournamentId}`);
    else status.textContent = t("tournament.none");
  }).catch((e: unknown) => { status.textContent = explain(e); });
  return () => undefined;
}

export function showTournament(root: HTMLElement, tournamentId: string): () => void {
  clear(root);
  const title = h("h1", {}, t("tournament.title"));
  const progress = h("p", { class: "progress", id: "t-progress" });
  const status = h("p", { class: "status", role: "status" });
  const standingsBox = h("section", { class: "standings" });
  const crossBox = h("section", { class: "crosstable" });
  const liveBox = h("section", { class: "live-games" });
  const doneBox = h("section", { class: "done-games" });
  root.append(
    h("header", { class: "top" }, h("button", { class: "back", onclick: () => navigate("/") }, t("back.lobby")), title),
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
      const tour = (await tournaments.getTournament({ tournamentId })).tournament;
      if (stopped || !tour) return;
      render(tour);
      status.textContent = "";
      if (tour.status === TournamentStatus.FINISHED) return; // final: nothing changes any more
    } catch (error) {
      if (stopped) return;
      status.textContent = unreachable(error) ? t("connection.lost") : explain(error);
    }
    timer = window.setTimeout(() => void refresh(), REFRESH_MS);
  }

  function render(tour: Tournament): void {
    const finished = tour.status === TournamentStatus.FINISHED;
    title.textContent = `${tour.name} — ${gameName(tour.game)} ${tour.format.replace("_", " ")}`;
    progress.textContent = finished
      ? t("tournament.finished", { reason: tour.stopReason, count: tour.gamesDone })
      : t("tournament.running", { count: tour.gamesDone, total: tour.gamesTotal });
    progress.dataset.status = finished ? "finished" : "running";
    renderStandings(standingsBox, tour, finished);
    renderCrosstable(crossBox, tour);
    renderGames(liveBox, doneBox, tour);
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

function renderStandings(section: HTMLElement, tour: Tournament, finished: boolean): void {
  clear(section);
  section.append(
    h("h2", {}, finished ? t("tournament.finalStandings") : t("tournament.standings")),
    h("table", { class: "list standings-table" },
      h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, t("tournament.participant")), h("th", {}, t("tournament.games")), h("th", {}, t("tournament.points")), h("th", {}, t("tournament.score")), h("th", {}, t("tournament.rating")))),
      h("tbody", {}, tour.standings.map((s) => h("tr", { "data-participant": s.participant, class: s.disqualified ? "disqualified" : "" },
        h("td", {}, s.rank),
        h("td", {}, s.participant, s.disqualified ? ` ${t("tournament.disqualified")}` : "", s.forfeits ? ` · ${t("tournament.forfeits", { count: s.forfeits })}` : ""),
        h("td", {}, s.games),
        h("td", { class: "points" }, points(s.points)),
        h("td", {}, s.games ? `${((100 * s.points) / s.games).toFixed(1)} %` : "–"),
        h("td", {}, s.games ? s.rating.toFixed(2) : "–"))))),
  );
}

function renderCrosstable(section: HTMLElement, tour: Tournament): void {
  clear(section);
  const names = tour.participants;
  section.append(
    h("h2", {}, t("tournament.crosstable")),
    h("p", { class: "hint" }, t("tournament.crossHint")),
    h("table", { class: "list cross" },
      h("thead", {}, h("tr", {}, h("th", {}, ""), names.map((n) => h("th", {}, n)))),
      h("tbody", {}, tour.crosstable.map((row) => {
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
  const seats = g.seats.join(` ${t("tournament.vs")} `);
  return g.round > 1 ? t("tournament.gameRound", { index: g.index, round: g.round, seats }) : t("tournament.game", { index: g.index, seats });
}

/** Who won a finished game: "greedy won", "draw", or the order of a Kabaleo table. */
function resultText(g: TournamentGame): string {
  const winners = g.seats.filter((_, i) => g.ranks[i] === 1);
  if (winners.length === 0) return t("tournament.noWinner");  // ranked last together
  if (winners.length === g.seats.length) return t("tournament.draw");
  if (g.seats.length === 2) return t("tournament.won", { name: winners[0] });
  const order = g.seats.map((name, i) => ({ name, rank: g.ranks[i] ?? 0 })).sort((a, b) => a.rank - b.rank);
  return order.map((o) => `${o.rank}. ${o.name}`).join(", ");
}

function renderGames(live: HTMLElement, done: HTMLElement, tour: Tournament): void {
  clear(live);
  clear(done);
  const playing = tour.games.filter((g) => g.status === TournamentGameStatus.PLAYING);
  live.append(h("h2", {}, t("tournament.inProgress", { count: playing.length })));
  live.append(playing.length
    ? h("ul", { class: "plain games" }, playing.map((g) => h("li", { class: "game-live", "data-match": g.matchId },
        h("span", {}, gameLine(g)), " ",
        h("a", { class: "spectate", href: `#/match/${g.matchId}` }, t("tournament.watch")))))
    : h("p", { class: "hint" }, tour.status === TournamentStatus.FINISHED ? t("tournament.allOver") : t("tournament.noneNow")));
  const finished = tour.games.filter((g) => g.status === TournamentGameStatus.FINISHED).reverse();
  done.append(h("h2", {}, t("tournament.done", { count: finished.length })));
  if (finished.length) {
    done.append(h("ul", { class: "plain games" }, finished.map((g) => h("li", { class: "game-done", "data-match": g.matchId },
      h("span", {}, gameLine(g)), h("br"),
      h("span", { class: "result" }, resultText(g)), " ",
      h("span", { class: "hint" }, `(${terminationText(g.termination)}) `),
      g.matchId ? h("a", { href: `#/replay/${g.matchId}` }, t("tournament.replay")) : h("span", { class: "hint" }, t("tournament.notPlayed"))))));
  }
}
