// One match, played or watched: the event stream (resumed after the last event seen whenever
// it drops), the board, seats and clocks, the move list, refusals, resign with confirmation,
// and the end screen (who won and why, the revealed objectives, the scores, the seed check).
//
// Honest about the network: the server sends a heartbeat on a quiet stream every 2 s
// (docs/protocol.md, "Heartbeats"), so a page that has heard nothing for SILENCE_MS says the
// connection is lost, stops the clocks it can no longer vouch for (greyed, frozen), and picks
// them up again from the server's clock when it hears from it. A move clicked meanwhile is shown
// as on its way until the server answers: then played (the stream shows it) or refused.
import { api, asCreator, auth, bots as botService, explain, forgetTicket, reasonOf, ticketFor, unreachable, type SeatTicket } from "./api.js";
import { clear, h } from "./dom.js";
import { Game, PylosVariant, Termination, type GameView, type Outcome } from "./gen/ziggurat/v1/game_pb.js";
import { MatchStatus, SeatState, type Event, type Match, type MatchEndedEvent } from "./gen/ziggurat/v1/match_pb.js";
import { GenericBoard, hasDrawing, notationChosen, notationToggle } from "./generic.js";
import { KabaleoBoard, scoreOf, scoreText, swatch } from "./kabaleo.js";
import { MoveEntry } from "./moveentry.js";
import { PylosBoard } from "./pylos.js";
import { backButton } from "./back.js";
import { colourName, culpritSeats, distinctNames, endingSentence, gameName, isDraw, pylosSide, resultHeadline, stateName } from "./text.js";
import { seedMatches } from "./seedcheck.js";
import { listAnd, t } from "./i18n.js";
import { rulesGameOf, rulesLink } from "./rules.js";

interface PlayedMove {
  seat: number;
  move: string;
  substituted: boolean;
  cancelled: boolean;
}

const LOW_TIME_MS = 10_000;
/** No message for this long (heartbeats come every 2 s): the connection is lost. */
export const SILENCE_MS = 4_500;
/** No message for this long: the stream is given up and opened again (a dead connection can hang). */
const REOPEN_MS = 10_000;

export function showMatch(root: HTMLElement, matchId: string): () => void {
  clear(root);
  let ticket: SeatTicket | undefined = ticketFor(matchId);
  const abort = new AbortController();
  let summary: Match | null = null;
  let names: string[] = [];
  let states: SeatState[] = [];
  let clocks: number[] = [];
  let view: GameView | null = null;
  let lastSeq = 0n;
  let lastMove = "";
  let cancelled = false;
  const moves: PlayedMove[] = [];
  // The turn's deadline is on the server's clock (the event's time plus the turn's time); the
  // page counts down to it on its own clock moved by clockOffset (this clock minus the
  // server's, from the newest WatchMatchResponse.serverTimeMs), so a machine whose clock is off
  // still counts down to the right instant, and a page that lost the server for a while picks
  // the server's clock up again from the first message after.
  let turn: { seat: number; ply: number; serverDeadline: number; limit: number; legal: string[] } | null = null;
  let clockOffset = 0;
  let ended: MatchEndedEvent | null = null;
  // The connection: when the page last heard from the server (any stream message, heartbeats
  // included); `lost` once that is SILENCE_MS ago or the stream failed, with the moving seat's
  // clock as it was then (shown frozen until the server is heard again).
  let lastHeard = Date.now();
  let lost: { why: string; frozen: number | null } | null = null;
  // A move sent and not answered yet: shown as on its way; cleared when it is played or refused.
  let pending: { move: string; ply: number } | null = null;
  let stream: AbortController | null = null;

  const title = h("h1", {}, t("match.title"));
  const connection = h("p", { class: "connection", role: "status", hidden: true });
  const seatsBox = h("div", { class: "seats" });
  const boardBox = h("div", { class: "board" });
  const message = h("p", { class: "message", role: "alert" });
  const hint = h("p", { class: "hint-line", role: "status" });
  // Scrollable, so reachable by keyboard (a tab stop) and named.
  const moveList = h("ol", { class: "moves", tabindex: 0, "aria-label": t("match.movesPlayed") });
  const pendingLine = h("p", { class: "pending-move", hidden: true });
  const endBox = h("section", { class: "end", "aria-label": t("match.result") });
  const entry = new MoveEntry();
  const entryBox = h("div", { class: "entry" });
  const actions = h("div", { class: "actions" });
  // A player whose opponents left may claim the game (ClaimAbandoned) once they have been away
  // for the match's claimAfterMs: a note counts the time away, then the button shows.
  const awayNote = h("p", { class: "hint away-note", role: "status", hidden: true });
  const claimButton = h("button", { class: "claim", hidden: true, onclick: () => void claim() });
  const dialog = h("dialog", { class: "confirm" });
  // The rules of this match's game, once the server has said which game it is.
  const rulesSlot = h("span", { class: "rules-slot" });
  // The notation view, offered for a game this page draws (any other game has only that view).
  const toggleSlot = h("div", { class: "notation-slot", hidden: true }, notationToggle(() => renderBoard()));
  root.append(
    h("header", { class: "top" }, backButton(matchId), title, rulesSlot),
    connection,
    h("div", { class: "game" },
      h("div", { class: "main" }, toggleSlot, boardBox, pendingLine, hint, message, entryBox, endBox),
      h("aside", { class: "side" }, seatsBox, actions, awayNote, claimButton, h("h2", {}, t("match.moves")), moveList)),
    dialog,
  );
  const pylos = new PylosBoard();
  const kabaleo = new KabaleoBoard();
  const generic = new GenericBoard();

  const mySeat = (): number => ticket?.seat ?? 0;
  const shownNames = (): string[] => distinctNames(names);

  function turnLeft(now: number): number {
    if (!turn) return 0;
    return Math.min(turn.limit, Math.max(0, turn.serverDeadline + clockOffset - now));
  }

  function heard(serverTimeMs: bigint): void {
    lastHeard = Date.now();
    if (serverTimeMs) clockOffset = lastHeard - Number(serverTimeMs);
    if (lost) {
      lost = null;
      renderConnection();
    }
  }

  function loseConnection(why: string): void {
    if (ended) return;
    if (!lost) lost = { why, frozen: turn ? turnLeft(Date.now()) : null };
    else lost.why = why;
    renderConnection();
  }

  function renderConnection(): void {
    renderBanner();
    renderSeats();
    renderPending();
  }

  function renderBanner(): void {
    connection.hidden = !lost;
    connection.textContent = lost?.why ?? "";
    seatsBox.classList.toggle("stale", !!lost);
  }

  async function submit(move: string): Promise<void> {
    message.textContent = "";
    if (!ticket || !turn) return;
    pending = { move, ply: turn.ply };
    renderPending();
    renderBoard();
    try {
      await api.submitMove({ matchId, move, ply: pending.ply }, auth(ticket));
      hint.textContent = "";
      // Played: the stream shows the move (and clears `pending`) if it has not already.
    } catch (error) {
      if (pending?.move !== move) return; // the stream has moved on since
      pending = null;
      message.textContent = unreachable(error)
        ? t("match.notReached", { move })
        : t("match.refused", { move, why: explain(error) });
      pylos.unlock();
      renderPending();
      renderBoard();
    }
  }

  function renderPending(): void {
    pendingLine.hidden = !pending;
    pendingLine.textContent = pending
      ? t(lost ? "match.onItsWayLost" : "match.onItsWay", { move: pending.move })
      : "";
  }

  function confirmResign(): void {
    clear(dialog);
    dialog.append(
      h("p", {}, t("match.resignAsk")),
      h("div", { class: "buttons" },
        h("button", { class: "danger confirm-resign", onclick: () => { dialog.close(); void resign(); } }, t("match.resign")),
        h("button", { class: "keep", onclick: () => dialog.close() }, t("match.keepPlaying"))),
    );
    dialog.showModal();
  }

  async function resign(): Promise<void> {
    try {
      await api.resign({ matchId }, auth(ticket));
    } catch (error) {
      message.textContent = t("match.notResigned", { why: explain(error) });
    }
  }

  function clockOf(index: number, moving: boolean): { text: string; low: boolean; stale: boolean } {
    const tc = summary?.timeControl;
    if (!tc || !(tc.perMoveMs || tc.baseMs)) return { text: "", low: false, stale: false };
    const seat = index + 1;
    if (states[index] === SeatState.TIMED_OUT) return { text: formatClock(0), low: true, stale: false };
    if (moving) {
      // Lost: the clock as it was when the page stopped hearing the server, greyed.
      const left = lost && lost.frozen !== null ? lost.frozen : turnLeft(Date.now());
      return { text: formatClock(left), low: left < LOW_TIME_MS, stale: !!lost };
    }
    if (!tc.baseMs) return { text: "", low: false, stale: false }; // per-move time only: shown on the turn
    // Before the first turn (a waiting match) every seat has its whole time.
    const left = clocks[index] ?? Number(summary?.seats[seat - 1]?.clockMs ?? tc.baseMs);
    return { text: formatClock(left), low: false, stale: false };
  }

  function renderSeats(): void {
    clear(seatsBox);
    const game = summary?.config?.game ?? Game.UNSPECIFIED;
    const shown = shownNames();
    seatsBox.append(h("h2", {}, t("match.players")), h("ul", { class: "plain" }, shown.map((name, index) => {
      const seat = index + 1;
      const moving = turn?.seat === seat && !ended;
      const clock = clockOf(index, moving);
      return h("li", { class: `seat${moving ? " to-move" : ""}${seat === mySeat() ? " me" : ""}`, "data-seat": seat },
        game === Game.PYLOS ? h("span", { class: `side ${seat === 1 ? "light" : "dark"}` }) : null,
        h("span", { class: "name" }, `${name || t("match.openSeat")}${seat === mySeat() ? ` ${t("match.you")}` : ""}`),
        h("span", { class: "state" }, stateName(states[index] ?? SeatState.UNSPECIFIED, !!ended || summary?.status === MatchStatus.FINISHED)),
        clock.text ? h("span", {
          class: `clock${clock.low ? " low" : ""}${clock.stale ? " stale" : ""}`, "data-clock": seat,
          title: clock.stale ? t("match.clockStale") : null,
        }, clock.text) : null);
    })));
    if (summary?.status === MatchStatus.WAITING) {
      const open = names.filter((n) => !n).length;
      seatsBox.append(h("p", { class: "hint" }, t("match.waitingFor", { count: open })));
      const builtin = h("div", { class: "add-bots" });
      const remote = h("div", { class: "add-bots remote-bots" });
      seatsBox.append(builtin, remote);
      const refused = (e: unknown): void => { message.textContent = explain(e); };
      void api.listBuiltinBots({}).then((r) => {
        const bots = r.bots.filter((b) => b.games.includes(game));
        builtin.append(...bots.map((b) =>
          h("button", { class: "add-bot", "data-bot": b.name, title: b.description, onclick: () => void api.addBot({ matchId, bot: b.name }).then(refreshSummary).catch(refused) }, `+ ${b.name}`)));
      }).catch(() => undefined); // the banner says when the server cannot be reached
      // Connected remote bots (their own programs, anywhere on the network): invited, not launched,
      // and only by the match's creator (InviteBot needs the creator token this browser kept).
      const creatorToken = ticket?.creatorToken;
      if (creatorToken) void botService.listBots({}).then((r) => {
        const bots = r.bots.filter((b) => !b.games.length || b.games.includes(game));
        if (!bots.length) return;
        remote.append(h("span", { class: "hint" }, `${t("match.connectedBots")} `), ...bots.map((b) => {
          const busy = b.activeMatches >= (b.maxMatches || 1);
          return h("button", {
            class: "invite-bot", "data-bot": b.name, disabled: busy,
            title: busy ? t("match.botBusy") : t("match.botLoad", { active: b.activeMatches, max: b.maxMatches || 1 }),
            onclick: () => void botService.inviteBot({ matchId, botName: b.name }, asCreator(creatorToken)).then(refreshSummary).catch(refused),
          }, t("match.invite", { name: b.name }));
        }));
      }).catch(() => undefined);
    }
  }

  /** The other seats still in the game that have had no stream open, and for how long (ms, on
   * the server's clock): the ones a claim would end once they pass Match.claimAfterMs. */
  function awayOpponents(): { seat: number; name: string; awayMs: number }[] {
    if (!ticket || ended || summary?.status !== MatchStatus.ACTIVE || !summary.claimAfterMs) return [];
    const serverNow = Date.now() - clockOffset;
    const shown = shownNames();
    return summary.seats.flatMap((s) => {
      const since = Number(s.awaySinceMs);
      if (s.seat === mySeat() || !since) return [];
      const state = states[s.seat - 1];
      if (state !== SeatState.DISCONNECTED && state !== SeatState.JOINED) return [];
      return [{ seat: s.seat, name: shown[s.seat - 1] || t("match.seat", { seat: s.seat }), awayMs: Math.max(0, serverNow - since) }];
    });
  }

  async function claim(): Promise<void> {
    try {
      await api.claimAbandoned({ matchId }, auth(ticket));
      await refreshSummary();
    } catch (error) {
      message.textContent = t("match.notClaimed", { why: explain(error) });
    }
  }

  /** The claim's note and button, updated in place (never rebuilt: a click must not be lost). */
  function renderClaim(): void {
    const away = lost ? [] : awayOpponents();
    const after = summary?.claimAfterMs ?? 0;
    const due = away.filter((a) => a.awayMs >= after);
    const seconds = (ms: number): string => formatClock(Math.floor(ms / 1000) * 1000 + 1000 - 1);
    if (due.length) {
      const who = listAnd(due.map((a) => a.name));
      claimButton.textContent = t(summary?.config?.game === Game.PYLOS ? "match.claimPylos" : "match.claimKabaleo", { who });
    }
    claimButton.hidden = !due.length;
    const longest = away.length ? away.reduce((a, b) => (b.awayMs > a.awayMs ? b : a)) : null;
    awayNote.hidden = !longest || !!due.length;
    if (longest && !due.length) {
      awayNote.textContent = t("match.awayNote", { name: longest.name, time: seconds(longest.awayMs), after: formatClock(after) });
    }
  }

  function renderActions(): void {
    clear(actions);
    if (ticket && !ended && summary?.status === MatchStatus.ACTIVE) {
      actions.append(h("button", { class: "resign danger", onclick: confirmResign }, t("match.resignMenu")));
    }
    if (!ticket && !ended) actions.append(h("p", { class: "hint spectating" }, t("match.watching")));
  }

  function renderMoves(): void {
    clear(moveList);
    const game = summary?.config?.game;
    const shown = shownNames();
    for (const m of moves) {
      const who = game === Game.PYLOS ? pylosSide(m.seat) : shown[m.seat - 1] || t("match.seat", { seat: m.seat });
      moveList.append(h("li", { class: m.cancelled ? "cancelled" : "" }, `${who}: `, m.move ? h("b", {}, m.move) : h("i", {}, t("match.hiddenMove")),
        m.cancelled ? ` — ${t("match.cancelled")}` : "", m.substituted ? ` ${t("match.byServer")}` : ""));
    }
    moveList.scrollTop = moveList.scrollHeight;
  }

  function renderBoard(): void {
    if (!view) {
      clear(boardBox);
      boardBox.append(h("p", { class: "waiting" }, summary?.status === MatchStatus.WAITING ? t("match.startsWhenFull") : t("match.loading")));
      return;
    }
    // No move is offered while one is on its way.
    const legal = turn && turn.seat === mySeat() && !ended && !pending ? turn.legal : [];
    // A seat's page also takes the move typed in notation (a spectator has nothing to type).
    const typing = !!ticket && !ended;
    if (typing !== entryBox.contains(entry.element)) {
      clear(entryBox);
      if (typing) entryBox.append(entry.element);
    }
    const drawn = hasDrawing(view);
    toggleSlot.hidden = !drawn;
    entry.update(!drawn ? "generic" : view.detail.case === "pylos" ? "pylos" : "kabaleo", legal, (m) => void submit(m));
    if (!drawn || notationChosen()) {
      // A game with no drawing here, or the notation chosen: the position as text, moves as buttons.
      if (!boardBox.contains(generic.element)) { clear(boardBox); boardBox.append(generic.element); }
      generic.update({ view, mySeat: mySeat(), legalMoves: legal, lastMove, who, onMove: (m) => void submit(m) });
    } else if (view.detail.case === "pylos") {
      if (!boardBox.contains(pylos.element)) { clear(boardBox); boardBox.append(pylos.element); }
      const options = summary?.config?.options;
      const lines = options?.case === "pylos" && options.value.variant === PylosVariant.ADVANCED;
      pylos.update({ view, mySeat: mySeat(), legalMoves: legal, lastMove, pendingMove: pending?.move, lines, onMove: (m) => void submit(m), onHint: (t) => { hint.textContent = t; } });
    } else {
      if (!boardBox.contains(kabaleo.element)) { clear(boardBox); boardBox.append(kabaleo.element); }
      kabaleo.update({ view, mySeat: mySeat(), names: shownNames(), legalMoves: legal, lastMove, cancelled, onMove: (m) => void submit(m) });
    }
    if (!ended) {
      title.textContent = !turn ? `${gameName(view.game)} — ` : turn.seat === mySeat() ? t("match.yourMove", { game: gameName(view.game) }) : t("match.toMove", { game: gameName(view.game), who: who(turn.seat) });
    }
  }

  function who(seat: number): string {
    const name = shownNames()[seat - 1];
    return summary?.config?.game === Game.PYLOS ? `${pylosSide(seat)} (${name || "?"})` : name || t("match.seat", { seat });
  }

  function renderEnd(): void {
    clear(endBox);
    if (!ended || !ended.outcome) return;
    const outcome: Outcome = ended.outcome;
    const draw = isDraw(outcome);
    const shown = shownNames();
    title.textContent = t("match.gameOver", { game: gameName(summary?.config?.game ?? 0) });
    // A draw has no ranks to show: every seat shares it.
    const place = (index: number): string => (draw ? t("match.drawPlace") : String(outcome.ranks[index] ?? ""));
    const rows: HTMLElement[] = [];
    const final = ended.view;
    if (final?.detail.case === "kabaleo") {
      const k = final.detail.value;
      shown.forEach((name, index) => {
        const colour = k.objectives[index];
        rows.push(h("tr", { "data-seat": index + 1 }, h("td", { class: "rank" }, place(index)), h("td", {}, name),
          h("td", {}, swatch(colour), ` ${colourName(colour)}`), h("td", {}, scoreText(scoreOf(k.stacks, colour)))));
      });
    } else {
      const pylosGame = summary?.config?.game === Game.PYLOS;
      shown.forEach((name, index) => rows.push(h("tr", { "data-seat": index + 1 }, h("td", { class: "rank" }, place(index)),
        h("td", {}, pylosGame ? `${name} (${pylosSide(index + 1)})` : name || t("match.seat", { seat: index + 1 })))));
    }
    if (!draw) rows.sort((a, b) => Number(a.firstChild?.textContent ?? 0) - Number(b.firstChild?.textContent ?? 0));
    const seedLine = h("p", { class: "seed" }, t("match.checkingSeed"));
    endBox.append(
      h("h2", { class: "result" }, resultHeadline(outcome, who)),
      h("p", { class: "why" }, endingSentence(outcome.termination, culpritSeats(outcome.termination, outcome, states).map(who), summary?.config?.game)),
      h("table", { class: "ranks" }, h("thead", {}, h("tr", {}, h("th", {}, draw ? t("match.result") : t("match.rank")), h("th", {}, t("match.player")),
        final?.detail.case === "kabaleo" ? [h("th", {}, t("match.secretColour")), h("th", {}, t("match.score"))] : [])), h("tbody", {}, rows)),
      ...(final?.detail.case === "kabaleo" && final.detail.value.unheld.length
        ? [h("p", {}, `${t("match.unheld")} `, final.detail.value.unheld.flatMap((c) => [swatch(c), ` ${colourName(c)} `]))]
        : []),
      seedLine,
      h("p", {}, h("a", { href: `#/replay/${matchId}`, class: "to-replay" }, t("match.replayLink"))),
    );
    const ok = seedMatches(ended.revealedSeed, summary?.seedCommitment ?? "");
    seedLine.textContent = ok
      ? t("match.seedOk", { seed: ended.revealedSeed.slice(0, 16) })
      : t("match.seedBad");
    seedLine.classList.add(ok ? "ok" : "bad");
  }

  function renderAll(): void {
    const game = summary?.config?.game;
    const rules = rulesGameOf(game);
    if (rules && !rulesSlot.firstChild) rulesSlot.append(rulesLink(rules));
    renderBanner();
    renderSeats();
    renderActions();
    renderClaim();
    renderBoard();
    renderMoves();
    renderPending();
    renderEnd();
  }

  function handle(event: Event): void {
    lastSeq = event.seq > lastSeq ? event.seq : lastSeq;
    const kind = event.kind;
    switch (kind.case) {
      case "seatChanged": {
        const seat = kind.value.seat!;
        names[seat.seat - 1] = seat.playerName;
        states[seat.seat - 1] = seat.state;
        if (seat.state === SeatState.TIMED_OUT) clocks[seat.seat - 1] = 0; // her time is all used
        break;
      }
      case "matchStarted":
        for (const seat of kind.value.seats) names[seat.seat - 1] = seat.playerName;
        view = kind.value.view ?? null;
        if (summary) summary.status = MatchStatus.ACTIVE;
        break;
      case "turnStarted": {
        const t = kind.value;
        const limit = Number(t.timeLeftMs);
        turn = { seat: t.seat, ply: t.ply, serverDeadline: Number(event.timeMs) + limit, limit, legal: t.legalMoves };
        clocks = t.seats.map((s) => Number(s.clockMs));
        if (pending && pending.ply !== t.ply) pending = null; // the turn it was meant for is over
        break;
      }
      case "movePlayed": {
        const before = view;
        view = kind.value.view ?? view;
        lastMove = kind.value.move;
        cancelled = false;
        if (before?.detail.case === "kabaleo" && view?.detail.case === "kabaleo") {
          const stack = Number(lastMove.slice(1)) - 1;
          cancelled = (view.detail.value.stacks[stack]?.length ?? 0) < (before.detail.value.stacks[stack]?.length ?? 0);
        }
        moves.push({ seat: kind.value.seat, move: kind.value.move, substituted: kind.value.substituted, cancelled });
        if (pending && kind.value.seat === mySeat()) pending = null; // played (ours, or the server's for us)
        turn = null;
        break;
      }
      case "matchEnded":
        ended = kind.value;
        view = kind.value.view ?? view;
        if (turn && ended.outcome?.termination === Termination.TIMEOUT) clocks[turn.seat - 1] = 0;
        turn = null;
        pending = null;
        lost = null;
        if (summary) summary.status = MatchStatus.FINISHED;
        break;
      default:
        break;
    }
  }

  async function refreshSummary(): Promise<void> {
    const response = await api.getMatch({ matchId }, auth(ticket));
    summary = response.match ?? null;
    if (summary) {
      names = summary.seats.map((s) => s.playerName);
      states = summary.seats.map((s) => s.state);
      if (!turn && !clocks.length) clocks = summary.seats.map((s) => Number(s.clockMs));
    }
    renderAll();
  }

  async function follow(): Promise<void> {
    let delay = 250;
    while (!abort.signal.aborted && !ended) {
      stream = new AbortController();
      const signal = stream.signal;
      try {
        if (!summary) await refreshSummary();
        for await (const response of api.watchMatch({ matchId, afterSeq: lastSeq }, { ...auth(ticket), signal })) {
          heard(response.serverTimeMs);
          delay = 250;
          if (!response.events.length) continue; // a heartbeat: the server is there, nothing new
          for (const event of response.events) handle(event);
          renderAll();
          // A seat came or went: GetMatch says since when it is away (for a claim).
          if (response.events.some((e) => e.kind.case === "seatChanged")) void refreshSummary().catch(() => undefined);
        }
        if (!ended) await refreshSummary();
      } catch (error) {
        if (abort.signal.aborted) return;
        const reason = reasonOf(error);
        if (reason === "MATCH_NOT_FOUND") {
          message.textContent = explain(error);
          return;
        }
        if (reason === "BAD_TOKEN" || reason === "MISSING_TOKEN") {
          forgetTicket(matchId);
          ticket = undefined;
          message.textContent = t("match.seatInvalid");
          summary = null;
          continue;
        }
        loseConnection(reason === "SERVER_SHUTTING_DOWN"
          ? t("connection.restarting")
          : t("connection.lost"));
        await new Promise((resolve) => window.setTimeout(resolve, delay));
        delay = Math.min(5000, delay * 2);
      }
    }
  }

  // Every 250 ms: the running clock, and the silence check.
  const ticker = window.setInterval(() => {
    if (ended) return;
    const silent = Date.now() - lastHeard;
    if (silent > SILENCE_MS && !lost) loseConnection(t("connection.lost"));
    if (silent > REOPEN_MS && stream && !stream.signal.aborted) {
      lastHeard = Date.now() - SILENCE_MS; // the new stream gets its own time to answer
      stream.abort(); // a connection that died without a word: open the stream again
    }
    if (turn && !lost) renderSeats();
    renderClaim(); // the time away, and the claim once it is due
  }, 250);
  renderAll();
  void follow();
  return () => {
    abort.abort();
    stream?.abort();
    window.clearInterval(ticker);
  };
}

function formatClock(ms: number): string {
  const total = Math.ceil(ms / 100) / 10;
  if (total >= 60) {
    const minutes = Math.floor(total / 60);
    const seconds = Math.floor(total % 60);
    return `${minutes}:${String(seconds).padStart(2, "0")}`;
  }
  return `${total.toFixed(1)} s`;
}
