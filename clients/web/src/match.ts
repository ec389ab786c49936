// One match, played or watched: the event stream (resumed after the last event seen whenever
// it drops), the board, seats and clocks, the move list, refusals, resign with confirmation,
// and the end screen (who won and why, the revealed objectives, the scores, the seed check).
import { api, asCreator, auth, bots as botService, explain, forgetTicket, reasonOf, ticketFor, type SeatTicket } from "./api.js";
import { clear, h } from "./dom.js";
import { Game, type GameView, type Outcome } from "./gen/ziggurat/v1/game_pb.js";
import { MatchStatus, SeatState, type Event, type Match, type MatchEndedEvent } from "./gen/ziggurat/v1/match_pb.js";
import { KabaleoBoard, scoreOf, scoreText, swatch } from "./kabaleo.js";
import { PylosBoard } from "./pylos.js";
import { navigate } from "./router.js";
import { COLOUR_NAMES, gameName, pylosSide, stateName, terminationText } from "./text.js";
import { seedMatches } from "./seedcheck.js";

interface PlayedMove {
  seat: number;
  move: string;
  substituted: boolean;
  cancelled: boolean;
}

const LOW_TIME_MS = 10_000;

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
  // The turn's deadline is on this browser's clock: the event's server time plus the turn's
  // time, moved by clockOffset (this clock minus the server's, from WatchMatchResponse's
  // serverTimeMs), so a machine whose clock is off still counts down to the right instant.
  let turn: { seat: number; ply: number; deadline: number; limit: number; legal: string[] } | null = null;
  let clockOffset = 0;
  let ended: MatchEndedEvent | null = null;

  const title = h("h1", {}, "Match");
  const seatsBox = h("div", { class: "seats" });
  const boardBox = h("div", { class: "board" });
  const message = h("p", { class: "message", role: "alert" });
  const hint = h("p", { class: "hint-line" });
  const moveList = h("ol", { class: "moves" });
  const endBox = h("section", { class: "end" });
  const actions = h("div", { class: "actions" });
  const dialog = h("dialog", { class: "confirm" });
  root.append(
    h("header", { class: "top" }, h("button", { class: "back", onclick: () => navigate("/") }, "← Lobby"), title),
    h("div", { class: "game" },
      h("div", { class: "main" }, boardBox, hint, message, endBox),
      h("aside", { class: "side" }, seatsBox, actions, h("h2", {}, "Moves"), moveList)),
    dialog,
  );
  const pylos = new PylosBoard();
  const kabaleo = new KabaleoBoard();

  const mySeat = (): number => ticket?.seat ?? 0;

  async function submit(move: string): Promise<void> {
    message.textContent = "";
    if (!ticket || !turn) return;
    try {
      await api.submitMove({ matchId, move, ply: turn.ply }, auth(ticket));
      hint.textContent = "";
    } catch (error) {
      message.textContent = explain(error);
      pylos.unlock();
    }
  }

  function confirmResign(): void {
    clear(dialog);
    dialog.append(
      h("p", {}, "Resign this game? It counts as a loss."),
      h("div", { class: "buttons" },
        h("button", { class: "danger confirm-resign", onclick: () => { dialog.close(); void resign(); } }, "Resign"),
        h("button", { class: "keep", onclick: () => dialog.close() }, "Keep playing")),
    );
    dialog.showModal();
  }

  async function resign(): Promise<void> {
    try {
      await api.resign({ matchId }, auth(ticket));
    } catch (error) {
      message.textContent = explain(error);
    }
  }

  function renderSeats(): void {
    clear(seatsBox);
    const game = summary?.config?.game ?? Game.UNSPECIFIED;
    const tc = summary?.timeControl;
    const timed = !!(tc && (tc.perMoveMs || tc.baseMs));
    seatsBox.append(h("h2", {}, "Players"), h("ul", { class: "plain" }, names.map((name, index) => {
      const seat = index + 1;
      const moving = turn?.seat === seat && !ended;
      let clockText = "";
      let low = false;
      if (timed) {
        const left = moving ? Math.min(turn!.limit, Math.max(0, turn!.deadline - Date.now())) : clocks[index] ?? 0;
        low = moving && left < LOW_TIME_MS;
        clockText = moving || tc!.baseMs ? formatClock(left) : "";
      }
      return h("li", { class: `seat${moving ? " to-move" : ""}${seat === mySeat() ? " me" : ""}`, "data-seat": seat },
        game === Game.PYLOS ? h("span", { class: `side ${seat === 1 ? "light" : "dark"}` }) : null,
        h("span", { class: "name" }, `${name || "open seat"}${seat === mySeat() ? " (you)" : ""}`),
        h("span", { class: "state" }, stateName(states[index] ?? SeatState.UNSPECIFIED)),
        clockText ? h("span", { class: `clock${low ? " low" : ""}`, "data-clock": seat }, clockText) : null);
    })));
    if (summary?.status === MatchStatus.WAITING) {
      const open = names.filter((n) => !n).length;
      seatsBox.append(h("p", { class: "hint" }, `Waiting for ${open} more player${open === 1 ? "" : "s"}. Share this page's address, or add a bot:`));
      const builtin = h("div", { class: "add-bots" });
      const remote = h("div", { class: "add-bots remote-bots" });
      seatsBox.append(builtin, remote);
      const refused = (e: unknown): void => { message.textContent = explain(e); };
      void api.listBuiltinBots({}).then((r) => {
        const bots = r.bots.filter((b) => b.games.includes(game));
        builtin.append(...bots.map((b) =>
          h("button", { class: "add-bot", "data-bot": b.name, title: b.description, onclick: () => void api.addBot({ matchId, bot: b.name }).then(refreshSummary).catch(refused) }, `+ ${b.name}`)));
      });
      // Connected remote bots (their own programs, anywhere on the network): invited, not launched,
      // and only by the match's creator (InviteBot needs the creator token this browser kept).
      const creatorToken = ticket?.creatorToken;
      if (creatorToken) void botService.listBots({}).then((r) => {
        const bots = r.bots.filter((b) => !b.games.length || b.games.includes(game));
        if (!bots.length) return;
        remote.append(h("span", { class: "hint" }, "Connected bots: "), ...bots.map((b) => {
          const busy = b.activeMatches >= (b.maxMatches || 1);
          return h("button", {
            class: "invite-bot", "data-bot": b.name, disabled: busy,
            title: busy ? "busy: playing as many matches as it takes" : `a remote bot playing ${b.activeMatches} of at most ${b.maxMatches || 1} matches`,
            onclick: () => void botService.inviteBot({ matchId, botName: b.name }, asCreator(creatorToken)).then(refreshSummary).catch(refused),
          }, `invite ${b.name}`);
        }));
      }).catch(() => undefined);
    }
  }

  function renderActions(): void {
    clear(actions);
    if (ticket && !ended && summary?.status === MatchStatus.ACTIVE) {
      actions.append(h("button", { class: "resign danger", onclick: confirmResign }, "Resign…"));
    }
    if (!ticket && !ended) actions.append(h("p", { class: "hint spectating" }, "You are watching."));
  }

  function renderMoves(): void {
    clear(moveList);
    const game = summary?.config?.game;
    for (const m of moves) {
      const who = game === Game.PYLOS ? pylosSide(m.seat) : names[m.seat - 1] || `seat ${m.seat}`;
      moveList.append(h("li", { class: m.cancelled ? "cancelled" : "" }, `${who}: `, h("b", {}, m.move),
        m.cancelled ? " — cancelled" : "", m.substituted ? " (played by the server)" : ""));
    }
    moveList.scrollTop = moveList.scrollHeight;
  }

  function renderBoard(): void {
    if (!view) {
      clear(boardBox);
      boardBox.append(h("p", { class: "waiting" }, summary?.status === MatchStatus.WAITING ? "The game starts when every seat is taken." : "Loading…"));
      return;
    }
    const legal = turn && turn.seat === mySeat() && !ended ? turn.legal : [];
    if (view.detail.case === "pylos") {
      if (!boardBox.contains(pylos.element)) { clear(boardBox); boardBox.append(pylos.element); }
      pylos.update({ view, mySeat: mySeat(), legalMoves: legal, lastMove, onMove: (m) => void submit(m), onHint: (t) => { hint.textContent = t; } });
    } else {
      if (!boardBox.contains(kabaleo.element)) { clear(boardBox); boardBox.append(kabaleo.element); }
      kabaleo.update({ view, mySeat: mySeat(), names, legalMoves: legal, lastMove, cancelled, onMove: (m) => void submit(m) });
    }
    if (!ended) {
      title.textContent = `${gameName(view.game)} — ${turn ? (turn.seat === mySeat() ? "your move" : `${who(turn.seat)} to move`) : ""}`;
    }
  }

  function who(seat: number): string {
    return summary?.config?.game === Game.PYLOS ? `${pylosSide(seat)} (${names[seat - 1] || "?"})` : names[seat - 1] || `seat ${seat}`;
  }

  function renderEnd(): void {
    clear(endBox);
    if (!ended || !ended.outcome) return;
    const outcome: Outcome = ended.outcome;
    const winners = outcome.winners.map(who);
    title.textContent = `${gameName(summary?.config?.game ?? 0)} — game over`;
    const rows: HTMLElement[] = [];
    const final = ended.view;
    if (final?.detail.case === "kabaleo") {
      const k = final.detail.value;
      names.forEach((name, index) => {
        const colour = k.objectives[index];
        rows.push(h("tr", { "data-seat": index + 1 }, h("td", {}, outcome.ranks[index] ?? ""), h("td", {}, name),
          h("td", {}, swatch(colour), ` ${COLOUR_NAMES[colour] ?? colour}`), h("td", {}, scoreText(scoreOf(k.stacks, colour)))));
      });
    } else {
      names.forEach((name, index) => rows.push(h("tr", { "data-seat": index + 1 }, h("td", {}, outcome.ranks[index] ?? ""), h("td", {}, `${name} (${pylosSide(index + 1)})`))));
    }
    rows.sort((a, b) => Number(a.firstChild?.textContent ?? 0) - Number(b.firstChild?.textContent ?? 0));
    const seedLine = h("p", { class: "seed" }, "Checking the seed…");
    endBox.append(
      h("h2", { class: "result" }, winners.length === 1 ? `${winners[0]} wins` : winners.length ? `Shared win: ${winners.join(", ")}` : "No winner"),
      h("p", { class: "why" }, `The game ended because ${terminationText(outcome.termination)}.`),
      h("table", { class: "ranks" }, h("thead", {}, h("tr", {}, h("th", {}, "Rank"), h("th", {}, "Player"),
        final?.detail.case === "kabaleo" ? [h("th", {}, "Secret colour"), h("th", {}, "Score (stacks, covered, tallest covered)")] : [])), h("tbody", {}, rows)),
      ...(final?.detail.case === "kabaleo" && final.detail.value.unheld.length
        ? [h("p", {}, "Colours nobody held: ", final.detail.value.unheld.flatMap((c) => [swatch(c), ` ${COLOUR_NAMES[c] ?? c} `]))]
        : []),
      seedLine,
      h("p", {}, h("a", { href: `#/replay/${matchId}`, class: "to-replay" }, "Replay this match")),
    );
    const ok = seedMatches(ended.revealedSeed, summary?.seedCommitment ?? "");
    seedLine.textContent = ok
      ? `Seed check: the revealed seed ${ended.revealedSeed.slice(0, 16)}… matches the commitment published at the start.`
      : "Seed check FAILED: the revealed seed does not match the published commitment.";
    seedLine.classList.add(ok ? "ok" : "bad");
  }

  function renderAll(): void {
    renderSeats();
    renderActions();
    renderBoard();
    renderMoves();
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
        turn = { seat: t.seat, ply: t.ply, deadline: Number(event.timeMs) + limit + clockOffset, limit, legal: t.legalMoves };
        clocks = t.seats.map((s) => Number(s.clockMs));
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
        turn = null;
        break;
      }
      case "matchEnded":
        ended = kind.value;
        view = kind.value.view ?? view;
        turn = null;
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
    }
    renderAll();
  }

  async function follow(): Promise<void> {
    let delay = 250;
    while (!abort.signal.aborted && !ended) {
      try {
        if (!summary) await refreshSummary();
        for await (const response of api.watchMatch({ matchId, afterSeq: lastSeq }, { ...auth(ticket), signal: abort.signal })) {
          if (response.serverTimeMs) clockOffset = Date.now() - Number(response.serverTimeMs);
          for (const event of response.events) handle(event);
          delay = 250;
          message.textContent = message.textContent === "Reconnecting…" ? "" : message.textContent;
          renderAll();
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
          message.textContent = "This browser's seat is no longer valid; you are watching.";
          summary = null;
          continue;
        }
        message.textContent = "Reconnecting…";
        await new Promise((resolve) => window.setTimeout(resolve, delay));
        delay = Math.min(5000, delay * 2);
      }
    }
  }

  const ticker = window.setInterval(() => { if (turn && !ended) renderSeats(); }, 250);
  renderAll();
  void follow();
  return () => {
    abort.abort();
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
