// The lobby: the server's matches (refreshed every two seconds), the seats this browser holds,
// the player's name (one field, remembered, checked as the server checks it), and the form that
// creates a match of any game the server lists, seats you, and fills other seats with built-in
// bots or connected remote bots (invited with BotService.InviteBot; the form: newmatch.ts). The list is updated in place, row by row, keyed by match
// id: a refresh never replaces a button under the pointer, so a click across a refresh counts.
import { api, allTickets, asCreator, bots as botService, explain, forgetTicket, keepTicket, playerName, reasonOf, setPlayerName, ticketFor, tournaments, unreachable, arena } from "./api.js";
import { clear, h } from "./dom.js";
import { MatchStatus, SeatState, type Match } from "./gen/ziggurat/v1/match_pb.js";
import type { ConnectedBot } from "./gen/ziggurat/v1/bot_service_pb.js";
import { MAX_NAME, nameProblem } from "./name.js";
import { renderForm } from "./newmatch.js";
import { navigate } from "./router.js";
import { rulesLinks } from "./rules.js";
import { clockText, gameName, isHere, optionsText, seatLabel } from "./text.js";
import { listAnd, t } from "./i18n.js";

const REFRESH_MS = 2000;

/** The name field, shared by Join and Create: its value once valid, else "" (the problem shown). */
export interface NameField {
  section: HTMLElement;
  /** The trimmed name, remembered; or "" after showing why it cannot be used and focusing the field. */
  take(): string;
  /** Show a refusal of the name (BAD_NAME from the server) beside the field. */
  refuse(words: string): void;
}

function nameField(): NameField {
  const input = h("input", { id: "name", value: playerName(), placeholder: t("lobby.namePlaceholder"), maxlength: MAX_NAME * 2, autocomplete: "nickname" });
  const problem = h("p", { class: "name-problem", id: "name-problem", role: "alert" });
  const show = (words: string): void => {
    problem.textContent = words;
    input.setAttribute("aria-invalid", words ? "true" : "false");
  };
  input.addEventListener("input", () => {
    const trimmed = input.value.trim();
    setPlayerName(trimmed);
    // Said while typing only when it is wrong in a way typing more will not fix.
    show(trimmed ? nameProblem(trimmed) : "");
  });
  return {
    section: h("section", { class: "you" }, h("label", { for: "name" }, `${t("lobby.yourName")} `, h("span", { class: "hint" }, t("lobby.nameShown"))), input, problem),
    take: () => {
      const words = nameProblem(input.value);
      show(words);
      if (words) {
        input.focus();
        return "";
      }
      const name = input.value.trim();
      setPlayerName(name);
      return name;
    },
    refuse: (words) => {
      show(words);
      input.focus();
    },
  };
}

export function showLobby(root: HTMLElement): () => void {
  clear(root);
  const status = h("p", { class: "status", role: "status" });
  const connection = h("p", { class: "connection", role: "status", hidden: true }, t("connection.lost"));
  const you = nameField();
  const mine = h("section", { class: "my-seats" });
  const list = h("section", { class: "matches" });
  const form = h("section", { class: "create" });
  const subtitle = h("span", { class: "sub" }); // the games the server hosts, once it has said
  root.append(
    h("header", { class: "top" }, h("h1", {}, "ziggurat"), subtitle, rulesLinks()),
    connection,
    h("div", { class: "lobby" }, h("div", { class: "col" }, you.section, form, mine), h("div", { class: "col wide" }, list)),
    status,
  );
  // A tournament's server (`ziggurat tournament run` with an HTTP port): point at its live page.
  void tournaments.listTournaments({}).then((r) => {
    for (const tour of r.tournaments) {
      root.querySelector("header.top")?.after(h("p", { class: "tournament-banner" }, `${t("lobby.tournament", { name: tour.name })} `,
        h("a", { class: "to-tournament", href: `#/tournament/${tour.tournamentId}` }, t("lobby.tournamentLink"))));
    }
  }).catch(() => undefined); // an older server without TournamentService on its web port
  // A standing arena's server (`ziggurat arena run` with an HTTP port): point at its ladder.
  void arena.getArena({}).then((r) => {
    if (!r.arena) return;
    root.querySelector("header.top")?.after(h("p", { class: "tournament-banner arena-banner" }, `${t("lobby.arena", { name: r.arena.name })} `,
      h("a", { class: "to-arena", href: "#/arena" }, t("lobby.arenaLink"))));
  }).catch(() => undefined); // any other server: ArenaService is not served (unimplemented)
  let stopped = false;
  const remote = new RemoteBots();
  const rows = new MatchList(list, you);
  const seats = new MySeats(mine);
  // The form needs the games the server hosts (ListGames) and its bots: asked again with each
  // refresh of the list until both have answered.
  let formShown = false;
  let listSaid = false;
  async function showForm(): Promise<void> {
    const [games, bots] = await Promise.all([api.listGames({}), api.listBuiltinBots({})]);
    if (stopped || formShown) return;
    formShown = true;
    subtitle.textContent = t("lobby.subtitle", { games: listAnd(games.games.map((g) => g.title || g.name)) });
    renderForm(form, games.games, bots.bots, remote, status, you);
  }

  async function refresh(): Promise<void> {
    if (!formShown) {
      void showForm().catch((e: unknown) => {
        if (stopped || unreachable(e)) return;
        status.textContent = explain(e);
        listSaid = true;
      });
    }
    try {
      const [response] = await Promise.all([api.listMatches({ pageSize: 50 }), remote.refresh()]);
      if (stopped) return;
      rows.update(response.matches);
      seats.update(response.matches);
      // Only what a refresh said is taken back by one: the form's words stay until it speaks again.
      if (listSaid) status.textContent = "";
      listSaid = false;
      connection.hidden = true;
      list.classList.remove("stale");
    } catch (error) {
      if (stopped) return;
      // The list shown is the last one the server gave: greyed while it cannot be brought up to date.
      const lost = unreachable(error);
      connection.hidden = !lost;
      list.classList.toggle("stale", lost);
      if (!lost) {
        status.textContent = explain(error);
        listSaid = true;
      }
    }
  }
  list.addEventListener("refresh", () => void refresh());
  void refresh();
  const timer = window.setInterval(() => void refresh(), REFRESH_MS);
  return () => {
    stopped = true;
    window.clearInterval(timer);
  };
}

/** "Your seats": rebuilt only when what it shows changes (its buttons stay put otherwise). */
class MySeats {
  private key = "";
  constructor(private readonly section: HTMLElement) {}

  update(matches: Match[]): void {
    const known = new Map(matches.map((m) => [m.matchId, m]));
    const tickets = allTickets().filter((t) => known.get(t.matchId)?.status !== MatchStatus.FINISHED);
    const label = (matchId: string, seat: number): string => {
      const m = known.get(matchId);
      return t("lobby.resume", { game: m ? gameName(m.config?.game ?? 0) : "", id: matchId, seat });
    };
    const key = tickets.map((t) => label(t.matchId, t.seat)).join("\n");
    if (key === this.key) return;
    this.key = key;
    clear(this.section);
    if (!tickets.length) return;
    this.section.append(
      h("h2", {}, t("lobby.yourSeats")),
      h("ul", { class: "plain" }, tickets.map((t) =>
        h("li", {}, h("button", { class: "resume", "data-match": t.matchId, onclick: () => navigate(`/match/${t.matchId}`) }, label(t.matchId, t.seat))))),
    );
  }
}

/** One row of the list and what it shows now (compared before touching the page). */
interface Row {
  tr: HTMLTableRowElement;
  cells: HTMLTableCellElement[];
  shown: string[];
  actions: HTMLTableCellElement;
  actionKey: string;
}

/** Live (waiting or playing) with seats taken, and nobody connected to any of them. */
function deserted(m: Match): boolean {
  if (m.status === MatchStatus.FINISHED) return false;
  const taken = m.seats.filter((s) => s.state !== SeatState.OPEN);
  return taken.length > 0 && !taken.some((s) => isHere(s.state));
}

/**
 * The table of matches, keyed by match id: a refresh changes the text of the cells that
 * changed, adds and removes rows, and rebuilds a row's buttons only when what they can do
 * changes (Join becomes Watch). `data-refreshes` counts the refreshes shown (for tests).
 */
class MatchList {
  private rows = new Map<string, Row>();
  private readonly tbody = h("tbody", {});
  private readonly table = h("table", { class: "list" },
    h("thead", {}, h("tr", {}, h("th", { class: "c-game" }, t("lobby.colGame")), h("th", { class: "c-id" }, t("lobby.colMatch")), h("th", { class: "c-status" }, t("lobby.colStatus")),
      h("th", { class: "c-options" }, t("lobby.colSettings")), h("th", { class: "c-seats" }, t("lobby.colSeats")), h("th", { class: "c-actions" }, ""))),
    this.tbody);
  private readonly empty = h("p", { class: "hint" }, t("lobby.noMatches"));
  private readonly message = h("p", { class: "message list-message", role: "alert" });
  private refreshes = 0;

  constructor(private readonly section: HTMLElement, private readonly you: NameField) {
    this.table.hidden = true;
    this.empty.hidden = true;
    section.append(h("h2", {}, t("lobby.matches")), this.message, this.empty, this.table);
  }

  update(matches: Match[]): void {
    const seen = new Set<string>();
    let at: ChildNode | null = this.tbody.firstChild;
    for (const m of matches) {
      seen.add(m.matchId);
      const row = this.rows.get(m.matchId) ?? this.add(m.matchId);
      this.fill(row, m);
      // Move a row only when it is out of place (a new match above it moves nothing).
      if (row.tr !== at) this.tbody.insertBefore(row.tr, at);
      at = row.tr.nextSibling;
    }
    for (const [id, row] of this.rows) {
      if (!seen.has(id)) {
        row.tr.remove();
        this.rows.delete(id);
      }
    }
    this.table.hidden = !matches.length;
    this.empty.hidden = !!matches.length;
    this.refreshes += 1;
    this.section.dataset.refreshes = String(this.refreshes);
  }

  private add(matchId: string): Row {
    const cells = [0, 1, 2, 3, 4].map(() => h("td", {}));
    cells[0].className = "game-name";
    cells[1].className = "mono match-id";
    cells[2].className = "match-status";
    cells[3].className = "options";
    cells[4].className = "seats";
    const actions = h("td", { class: "actions" });
    const tr = h("tr", { "data-match": matchId }, cells, actions);
    const row: Row = { tr, cells, shown: [], actions, actionKey: "" };
    this.rows.set(matchId, row);
    return row;
  }

  private fill(row: Row, m: Match): void {
    const finished = m.status === MatchStatus.FINISHED;
    const nobody = deserted(m);
    const texts = [
      gameName(m.config?.game ?? 0),
      m.matchId,
      statusName(m.status),
      `${optionsText(m.config)} · ${clockText(m.timeControl)}`,
      m.seats.map((s) => seatLabel(m.config?.game ?? 0, s.seat, s.playerName, s.state, finished)).join(" · "),
    ];
    texts.forEach((text, i) => {
      if (row.shown[i] !== text) row.cells[i].textContent = text;
    });
    row.shown = texts;
    // The status cell says when everyone has gone (kept apart from the status word itself).
    const note = row.cells[2].querySelector(".away-note");
    if (nobody && !note) row.cells[2].append(h("span", { class: "away-note" }, ` · ${t("lobby.everyoneAway")}`));
    if (!nobody && note) note.remove();
    row.tr.classList.toggle("deserted", nobody);
    row.tr.classList.toggle("finished", finished);
    const ticket = ticketFor(m.matchId);
    const key = `${m.status}/${ticket ? "seat" : ""}/${ticket?.creatorToken ? "creator" : ""}`;
    if (key !== row.actionKey) {
      row.actionKey = key;
      clear(row.actions);
      row.actions.append(...this.buttons(m.matchId, m.status, !!ticket, !!ticket?.creatorToken));
    }
  }

  private buttons(matchId: string, status: MatchStatus, seated: boolean, creator: boolean): HTMLElement[] {
    const open = (): void => navigate(`/match/${matchId}`);
    if (status === MatchStatus.WAITING) {
      const out = [seated
        ? h("button", { class: "open", "data-match": matchId, onclick: open }, t("lobby.open"))
        : h("button", { class: "join", "data-match": matchId, onclick: () => void this.join(matchId) }, t("lobby.join"))];
      if (creator) {
        out.push(h("button", {
          class: "cancel-match danger", "data-match": matchId,
          onclick: () => {
            const token = ticketFor(matchId)?.creatorToken ?? "";
            void api.cancelMatch({ matchId }, asCreator(token))
              .then(() => { forgetTicket(matchId); this.section.dispatchEvent(new Event("refresh")); })
              .catch((e: unknown) => { this.message.textContent = explain(e); });
          },
        }, t("lobby.cancel")));
      }
      return out;
    }
    if (status === MatchStatus.ACTIVE) return [h("button", { class: "watch", "data-match": matchId, onclick: open }, seated ? t("lobby.play") : t("lobby.watch"))];
    return [h("button", { class: "replay", "data-match": matchId, onclick: () => navigate(`/replay/${matchId}`) }, t("lobby.replay"))];
  }

  private async join(matchId: string): Promise<void> {
    this.message.textContent = "";
    const name = this.you.take();
    if (!name) {
      this.message.textContent = t("lobby.nameBeforeJoin");
      return;
    }
    try {
      const joined = await api.joinMatch({ matchId, playerName: name });
      keepTicket({ matchId, seat: joined.seat, token: joined.token, name });
      navigate(`/match/${matchId}`);
    } catch (error) {
      if (reasonOf(error) === "BAD_NAME") this.you.refuse(explain(error));
      this.message.textContent = explain(error);
    }
  }
}

function statusName(status: MatchStatus): string {
  if (status === MatchStatus.WAITING) return t("status.waiting");
  if (status === MatchStatus.ACTIVE) return t("status.playing");
  return status === MatchStatus.FINISHED ? t("status.finished") : "?";
}

/** The remote bots connected now (ListBots), refreshed with the list; listeners hear of changes. */
export class RemoteBots {
  bots: ConnectedBot[] = [];
  private key = "";
  private listeners: (() => void)[] = [];

  async refresh(): Promise<void> {
    try {
      this.bots = (await botService.listBots({})).bots;
    } catch {
      this.bots = []; // an older server without BotService over Connect: no remote bots to offer
    }
    const key = this.bots.map((b) => `${b.name}/${b.games.join(",")}`).join(" ");
    if (key !== this.key) {
      this.key = key;
      for (const listener of this.listeners) listener();
    }
  }

  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }
}
