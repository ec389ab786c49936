// The lobby: the server's matches (refreshed every two seconds), the seats this browser holds,
// and the form that creates a match, seats you, and fills other seats with built-in bots or
// connected remote bots (invited with BotService.InviteBot).
import { create } from "@bufbuild/protobuf";
import { api, allTickets, asCreator, bots as botService, explain, forgetTicket, keepTicket, playerName, setPlayerName, tournaments, unreachable } from "./api.js";
import { clear, h } from "./dom.js";
import { Game, GameConfigSchema, KabaleoDeal, PylosVariant, type GameConfig } from "./gen/ziggurat/v1/game_pb.js";
import { MatchStatus, SeatState, TimeoutPolicy, type Match } from "./gen/ziggurat/v1/match_pb.js";
import type { ConnectedBot } from "./gen/ziggurat/v1/bot_service_pb.js";
import type { BuiltinBot } from "./gen/ziggurat/v1/match_service_pb.js";
import { navigate } from "./router.js";
import { gameName, seatLabel } from "./text.js";

const REFRESH_MS = 2000;

export function showLobby(root: HTMLElement): () => void {
  clear(root);
  const status = h("p", { class: "status", role: "status" });
  const connection = h("p", { class: "connection", role: "status", hidden: true }, "Connection lost — waiting for the server…");
  const mine = h("section", { class: "my-seats" });
  const list = h("section", { class: "matches" });
  const form = h("section", { class: "create" });
  root.append(
    h("header", { class: "top" }, h("h1", {}, "ziggurat"), h("span", { class: "sub" }, "Pylos and Kabaleo on this server")),
    connection,
    h("div", { class: "lobby" }, h("div", { class: "col" }, form, mine), h("div", { class: "col wide" }, list)),
    status,
  );
  // A tournament's server (`ziggurat tournament run` with an HTTP port): point at its live page.
  void tournaments.listTournaments({}).then((r) => {
    for (const t of r.tournaments) {
      root.querySelector("header.top")?.after(h("p", { class: "tournament-banner" }, `Tournament “${t.name}” runs on this server: `,
        h("a", { class: "to-tournament", href: `#/tournament/${t.tournamentId}` }, "standings and games in progress")));
    }
  }).catch(() => undefined); // an older server without TournamentService on its web port
  let bots: BuiltinBot[] = [];
  let stopped = false;
  const remote = new RemoteBots();
  void api.listBuiltinBots({}).then((r) => {
    bots = r.bots;
    renderForm(form, bots, remote, status);
  }).catch((e: unknown) => { status.textContent = explain(e); renderForm(form, bots, remote, status); });

  async function refresh(): Promise<void> {
    try {
      const [response] = await Promise.all([api.listMatches({ pageSize: 50 }), remote.refresh()]);
      if (stopped) return;
      renderList(list, response.matches);
      renderMine(mine, response.matches);
      status.textContent = "";
      connection.hidden = true;
      list.classList.remove("stale");
    } catch (error) {
      if (stopped) return;
      // The list shown is the last one the server gave: greyed while it cannot be brought up to date.
      const lost = unreachable(error);
      connection.hidden = !lost;
      list.classList.toggle("stale", lost);
      if (!lost) status.textContent = explain(error);
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

function renderMine(section: HTMLElement, matches: Match[]): void {
  clear(section);
  const known = new Map(matches.map((m) => [m.matchId, m]));
  const tickets = allTickets().filter((t) => known.get(t.matchId)?.status !== MatchStatus.FINISHED);
  if (!tickets.length) return;
  section.append(
    h("h2", {}, "Your seats"),
    h("ul", { class: "plain" }, tickets.map((t) =>
      h("li", {},
        h("button", { class: "resume", "data-match": t.matchId, onclick: () => navigate(`/match/${t.matchId}`) },
          `Resume ${known.get(t.matchId) ? gameName(known.get(t.matchId)!.config?.game ?? 0) : ""} ${t.matchId} (seat ${t.seat})`),
      ))),
  );
}

function renderList(section: HTMLElement, matches: Match[]): void {
  clear(section);
  section.append(h("h2", {}, "Matches"));
  if (!matches.length) {
    section.append(h("p", { class: "hint" }, "No matches yet: create one."));
    return;
  }
  const rows = matches.map((m) => {
    const seats = m.seats.map((s) => seatLabel(m.config?.game ?? 0, s.seat, s.playerName, s.state)).join(" · ");
    const mineTicket = allTickets().find((t) => t.matchId === m.matchId);
    let actions: HTMLElement[] = [];
    if (m.status === MatchStatus.WAITING) {
      actions = mineTicket
        ? [h("button", { onclick: () => navigate(`/match/${m.matchId}`) }, "Open")]
        : [h("button", { class: "join", "data-match": m.matchId, onclick: () => void join(m.matchId) }, "Join")];
      const creatorToken = mineTicket?.creatorToken;
      if (creatorToken) {
        actions.push(h("button", {
          class: "cancel-match danger", "data-match": m.matchId,
          onclick: () => void api.cancelMatch({ matchId: m.matchId }, asCreator(creatorToken))
            .then(() => { forgetTicket(m.matchId); section.dispatchEvent(new Event("refresh")); })
            .catch((e: unknown) => window.alert(explain(e))),
        }, "Cancel"));
      }
    } else if (m.status === MatchStatus.ACTIVE) {
      actions = [h("button", { class: "watch", "data-match": m.matchId, onclick: () => navigate(`/match/${m.matchId}`) },
        mineTicket ? "Play" : "Watch")];
    } else {
      actions = [h("button", { class: "replay", "data-match": m.matchId, onclick: () => navigate(`/replay/${m.matchId}`) }, "Replay")];
    }
    return h("tr", { "data-match": m.matchId },
      h("td", {}, gameName(m.config?.game ?? 0)),
      h("td", { class: "mono" }, m.matchId),
      h("td", {}, statusName(m.status)),
      h("td", { class: "seats" }, seats),
      h("td", {}, actions));
  });
  section.append(h("table", { class: "list" },
    h("thead", {}, h("tr", {}, h("th", {}, "Game"), h("th", {}, "Match"), h("th", {}, "Status"), h("th", {}, "Seats"), h("th", {}, ""))),
    h("tbody", {}, rows)));
}

function statusName(status: MatchStatus): string {
  const names: Record<number, string> = { [MatchStatus.WAITING]: "waiting", [MatchStatus.ACTIVE]: "playing", [MatchStatus.FINISHED]: "finished" };
  return names[status] ?? "?";
}

function askName(): string {
  let name = playerName();
  if (!name) {
    name = (window.prompt("Your name (shown to the other players)", "") ?? "").trim() || "player";
    setPlayerName(name);
  }
  return name;
}

async function join(matchId: string): Promise<void> {
  const name = askName();
  try {
    const joined = await api.joinMatch({ matchId, playerName: name });
    keepTicket({ matchId, seat: joined.seat, token: joined.token, name });
    navigate(`/match/${matchId}`);
  } catch (error) {
    window.alert(explain(error));
  }
}

/** The remote bots connected now (ListBots), refreshed with the list; listeners hear of changes. */
class RemoteBots {
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

/** The value of an opponent choice that invites a connected remote bot (built-in bots have no colon). */
const REMOTE_PREFIX = "remote:";

function renderForm(section: HTMLElement, bots: BuiltinBot[], remote: RemoteBots, status: HTMLElement): void {
  clear(section);
  const name = h("input", { id: "name", value: playerName(), placeholder: "your name", maxlength: 64 });
  name.addEventListener("input", () => setPlayerName(name.value.trim()));
  const game = h("select", { id: "game" }, h("option", { value: "pylos" }, "Pylos (2 players)"), h("option", { value: "kabaleo" }, "Kabaleo (2–4 players)"));
  const seats = h("select", { id: "seats" }, [2, 3, 4].map((n) => h("option", { value: n }, `${n} players`)));
  const variant = h("select", { id: "variant" },
    h("option", { value: PylosVariant.STANDARD }, "standard"),
    h("option", { value: PylosVariant.BEGINNER }, "beginner (no recovery)"),
    h("option", { value: PylosVariant.ADVANCED }, "advanced (lines too)"));
  const deal = h("select", { id: "deal" }, h("option", { value: KabaleoDeal.RANDOM }, "random deal"), h("option", { value: KabaleoDeal.EQUAL }, "equal deal"));
  const lastStack = h("input", { id: "last-stack", type: "checkbox" });
  const clock = h("select", { id: "clock" },
    h("option", { value: "none" }, "no clock"),
    h("option", { value: "move30" }, "30 s per move"),
    h("option", { value: "move10" }, "10 s per move"),
    h("option", { value: "fischer5" }, "5 min + 3 s per move"),
    h("option", { value: "fischer1" }, "1 min + 2 s per move"));
  const opponents = h("div", { class: "opponents" });
  const renderOpponents = (): void => {
    const chosen = [...opponents.querySelectorAll<HTMLSelectElement>("select.opponent")].map((s) => s.value);
    clear(opponents);
    const g = game.value === "pylos" ? Game.PYLOS : Game.KABALEO;
    const n = g === Game.PYLOS ? 2 : Number(seats.value);
    const choices = bots.filter((b) => b.games.includes(g));
    // A remote bot with no games listed plays every game.
    const connected = remote.bots.filter((b) => !b.games.length || b.games.includes(g));
    for (let i = 1; i < n; i++) {
      const select = h("select", { class: "opponent", "data-index": i },
        h("option", { value: "" }, "a person (open seat)"),
        choices.length ? h("optgroup", { label: "built-in bots (run by the server)" },
          choices.map((b) => h("option", { value: b.name, title: b.description }, `bot: ${b.name}`))) : null,
        connected.length ? h("optgroup", { label: "connected remote bots" },
          connected.map((b) => h("option", { value: REMOTE_PREFIX + b.name, title: `playing ${b.activeMatches} of at most ${b.maxMatches} matches` },
            `remote: ${b.name}`))) : null);
      const before = chosen[i - 1];
      if (before && [...select.options].some((o) => o.value === before)) select.value = before;
      opponents.append(h("label", {}, `Seat for opponent ${i}: `, select));
    }
  };
  remote.onChange(renderOpponents);
  const kabaleoOnly = h("div", { class: "kabaleo-only" }, h("label", {}, "Players ", seats), h("label", {}, "Deal ", deal), h("label", {}, lastStack, " last-stack rule"));
  const pylosOnly = h("div", { class: "pylos-only" }, h("label", {}, "Variant ", variant));
  const sync = (): void => {
    kabaleoOnly.hidden = game.value !== "kabaleo";
    pylosOnly.hidden = game.value !== "pylos";
    renderOpponents();
  };
  game.addEventListener("change", sync);
  seats.addEventListener("change", renderOpponents);
  const button = h("button", { id: "create", class: "primary" }, "Create and sit down");
  button.addEventListener("click", () => void (async () => {
    const who = name.value.trim() || "player";
    setPlayerName(who);
    button.disabled = true;
    let made = "";
    try {
      const config: GameConfig = create(GameConfigSchema, game.value === "pylos"
        ? { game: Game.PYLOS, seats: 2, options: { case: "pylos", value: { variant: Number(variant.value) } } }
        : { game: Game.KABALEO, seats: Number(seats.value), options: { case: "kabaleo", value: { deal: Number(deal.value), lastStack: lastStack.checked } } });
      const timeControl = {
        none: {}, move30: { perMoveMs: 30000 }, move10: { perMoveMs: 10000 },
        fischer5: { baseMs: 300000, incrementMs: 3000 }, fischer1: { baseMs: 60000, incrementMs: 2000 },
      }[clock.value] ?? {};
      const created = await api.createMatch({ config, timeControl: { ...timeControl, onTimeout: TimeoutPolicy.FORFEIT } });
      const matchId = created.match!.matchId;
      made = matchId;
      const joined = await api.joinMatch({ matchId, playerName: who });
      keepTicket({ matchId, seat: joined.seat, token: joined.token, name: who, creatorToken: created.creatorToken });
      for (const select of opponents.querySelectorAll<HTMLSelectElement>("select.opponent")) {
        if (select.value.startsWith(REMOTE_PREFIX)) {
          await botService.inviteBot({ matchId, botName: select.value.slice(REMOTE_PREFIX.length) }, asCreator(created.creatorToken));
        } else if (select.value) {
          await api.addBot({ matchId, bot: select.value });
        }
      }
      navigate(`/match/${matchId}`);
    } catch (error) {
      status.textContent = made
        ? `Match ${made} was created, but not every seat could be filled. ${explain(error)}`
        : `The match was not created. ${explain(error)}`;
    } finally {
      button.disabled = false;
    }
  })());
  section.append(
    h("h2", {}, "New match"),
    h("label", {}, "Your name ", name),
    h("label", {}, "Game ", game),
    pylosOnly,
    kabaleoOnly,
    h("label", {}, "Clock ", clock),
    opponents,
    button,
  );
  sync();
}

export const _statusForTests = SeatState;
