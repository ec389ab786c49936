// The replay viewer: a finished match's events as a spectator saw them (WatchMatch from the
// start), stepped through one move at a time; the last step shows the reveal.
import { api, explain } from "./api.js";
import { clear, h } from "./dom.js";
import type { GameView } from "./gen/ziggurat/v1/game_pb.js";
import { MatchStatus } from "./gen/ziggurat/v1/match_pb.js";
import { KabaleoBoard } from "./kabaleo.js";
import { PylosBoard } from "./pylos.js";
import { backOf, navigate } from "./router.js";
import { culpritSeats, distinctNames, endingSentence, gameName, pylosSide, resultHeadline } from "./text.js";

interface Frame {
  view: GameView;
  move: string;
  seat: number;
  cancelled: boolean;
}

export function showReplay(root: HTMLElement, matchId: string): () => void {
  clear(root);
  const abort = new AbortController();
  const title = h("h1", {}, `Replay ${matchId}`);
  const boardBox = h("div", { class: "board" });
  const caption = h("p", { class: "caption", id: "replay-caption" });
  const position = h("span", { id: "replay-ply" });
  const slider = h("input", { type: "range", min: 0, max: 0, value: 0, id: "replay-slider", "aria-label": "Move shown" });
  const message = h("p", { class: "message", role: "alert" });
  const frames: Frame[] = [];
  let names: string[] = [];
  let index = 0;
  let outcomeText = "";
  let isPylos = true;
  const pylos = new PylosBoard();
  const kabaleo = new KabaleoBoard();

  const go = (next: number): void => {
    index = Math.max(0, Math.min(frames.length - 1, next));
    render();
  };
  const controls = h("div", { class: "replay-controls" },
    h("button", { id: "replay-first", onclick: () => go(0) }, "« First"),
    h("button", { id: "replay-prev", onclick: () => go(index - 1) }, "◀ Back"),
    position,
    h("button", { id: "replay-next", onclick: () => go(index + 1) }, "Next ▶"),
    h("button", { id: "replay-last", onclick: () => go(frames.length - 1) }, "Last »"),
    slider);
  slider.addEventListener("input", () => go(Number(slider.value)));
  const onKey = (e: KeyboardEvent): void => {
    if (e.key === "ArrowRight") go(index + 1);
    if (e.key === "ArrowLeft") go(index - 1);
  };
  window.addEventListener("keydown", onKey);
  root.append(
    h("header", { class: "top" }, h("button", { class: "back", onclick: () => navigate(backOf(matchId).path) }, backOf(matchId).label), title),
    h("div", { class: "replay" }, boardBox, caption, controls, message),
  );

  function render(): void {
    const frame = frames[index];
    if (!frame) return;
    slider.max = String(frames.length - 1);
    slider.value = String(index);
    position.textContent = `move ${index} of ${frames.length - 1}`;
    const who = isPylos ? pylosSide(frame.seat) : names[frame.seat - 1] || `seat ${frame.seat}`;
    caption.textContent = index === 0
      ? "The start."
      : `${who} played ${frame.move}${frame.cancelled ? " — cancelled" : ""}.${index === frames.length - 1 ? ` ${outcomeText}` : ""}`;
    if (frame.view.detail.case === "pylos") {
      if (!boardBox.contains(pylos.element)) { clear(boardBox); boardBox.append(pylos.element); }
      pylos.update({ view: frame.view, mySeat: 0, legalMoves: [], lastMove: frame.move || undefined });
    } else {
      if (!boardBox.contains(kabaleo.element)) { clear(boardBox); boardBox.append(kabaleo.element); }
      kabaleo.update({ view: frame.view, mySeat: 0, names, legalMoves: [], lastMove: frame.move || undefined, cancelled: frame.cancelled });
    }
  }

  void (async () => {
    try {
      const match = (await api.getMatch({ matchId })).match;
      if (!match) return;
      if (match.status !== MatchStatus.FINISHED) {
        message.textContent = "This match is still running: open it to watch it live.";
        return;
      }
      names = distinctNames(match.seats.map((s) => s.playerName));
      const states = match.seats.map((s) => s.state);
      isPylos = match.config?.game === 1;
      title.textContent = `Replay: ${gameName(match.config?.game ?? 0)} ${matchId}`;
      for await (const response of api.watchMatch({ matchId }, { signal: abort.signal })) {
        for (const event of response.events) {
          const kind = event.kind;
          if (kind.case === "matchStarted" && kind.value.view) {
            frames.push({ view: kind.value.view, move: "", seat: 0, cancelled: false });
          } else if (kind.case === "movePlayed" && kind.value.view) {
            const before = frames[frames.length - 1]?.view;
            const after = kind.value.view;
            let cancelled = false;
            if (before?.detail.case === "kabaleo" && after.detail.case === "kabaleo") {
              const stack = Number(kind.value.move.slice(1)) - 1;
              cancelled = after.detail.value.stacks[stack].length < before.detail.value.stacks[stack].length;
            }
            frames.push({ view: after, move: kind.value.move, seat: kind.value.seat, cancelled });
          } else if (kind.case === "matchEnded" && kind.value.view && frames.length) {
            // The last position again, now with every secret revealed.
            frames[frames.length - 1] = { ...frames[frames.length - 1], view: kind.value.view };
            const o = kind.value.outcome;
            const who = (seat: number): string => (isPylos ? `${pylosSide(seat)} (${names[seat - 1] || "?"})` : names[seat - 1] || `seat ${seat}`);
            if (o) outcomeText = `Game over: ${resultHeadline(o, who)}. ${endingSentence(o.termination, culpritSeats(o.termination, o, states).map(who))}`;
          }
        }
      }
      go(0);
    } catch (error) {
      if (!abort.signal.aborted) message.textContent = explain(error);
    }
  })();
  return () => {
    abort.abort();
    window.removeEventListener("keydown", onKey);
  };
}
