// The replay viewer: a finished match's events as a spectator saw them (WatchMatch from the
// start), stepped through one move at a time (buttons, the slider, the arrow keys, Home and
// End, or a click in the numbered move list); the last step shows the reveal.
import { api, explain } from "./api.js";
import { clear, h } from "./dom.js";
import type { GameView } from "./gen/ziggurat/v1/game_pb.js";
import { MatchStatus } from "./gen/ziggurat/v1/match_pb.js";
import { GenericBoard, hasDrawing, notationChosen, notationToggle } from "./generic.js";
import { KabaleoBoard } from "./kabaleo.js";
import { PylosBoard } from "./pylos.js";
import { backButton } from "./back.js";
import { t } from "./i18n.js";
import { rulesGameOf, rulesLink } from "./rules.js";
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
  const title = h("h1", {}, t("replay.title", { id: matchId }));
  const players = h("p", { class: "replay-players", id: "replay-players" });
  const boardBox = h("div", { class: "board" });
  const caption = h("p", { class: "caption", id: "replay-caption" });
  const position = h("span", { id: "replay-ply" });
  const slider = h("input", { type: "range", min: 0, max: 0, value: 0, id: "replay-slider", "aria-label": t("replay.slider") });
  const message = h("p", { class: "message", role: "alert" });
  const moveList = h("ol", { class: "replay-moves", id: "replay-moves" });
  const frames: Frame[] = [];
  let names: string[] = [];
  let index = 0;
  let outcomeText = "";
  let isPylos = true;
  const pylos = new PylosBoard();
  const kabaleo = new KabaleoBoard();
  const generic = new GenericBoard();
  const toggleSlot = h("div", { class: "notation-slot", hidden: true }, notationToggle(() => render()));

  const go = (next: number): void => {
    index = Math.max(0, Math.min(frames.length - 1, next));
    render();
  };
  // Until the record has arrived there is nothing to step through: the controls say so by being
  // disabled (and the caption says why), rather than answering clicks with nothing.
  const steppers = [
    h("button", { id: "replay-first", disabled: true, onclick: () => go(0) }, t("replay.first")),
    h("button", { id: "replay-prev", disabled: true, onclick: () => go(index - 1) }, t("replay.back")),
    h("button", { id: "replay-next", disabled: true, onclick: () => go(index + 1) }, t("replay.next")),
    h("button", { id: "replay-last", disabled: true, onclick: () => go(frames.length - 1) }, t("replay.last")),
  ];
  slider.disabled = true;
  caption.textContent = t("replay.loading");
  const controls = h("div", { class: "replay-controls" }, ...steppers.slice(0, 2), position, ...steppers.slice(2), slider);
  slider.addEventListener("input", () => go(Number(slider.value)));
  // One key press, one move: the keys are ours everywhere on the page (the slider's own
  // handling of them is cancelled, else → with the slider focused moved two moves).
  const keys: Record<string, () => number> = {
    ArrowRight: () => index + 1, ArrowDown: () => index + 1, ArrowLeft: () => index - 1, ArrowUp: () => index - 1,
    Home: () => 0, End: () => frames.length - 1, PageDown: () => index + 10, PageUp: () => index - 10,
  };
  const onKey = (e: KeyboardEvent): void => {
    const target = keys[e.key];
    if (!target || e.altKey || e.ctrlKey || e.metaKey || e.shiftKey || !frames.length) return;
    e.preventDefault();
    go(target());
  };
  window.addEventListener("keydown", onKey);
  root.append(
    h("header", { class: "top" }, backButton(matchId), title),
    players,
    h("div", { class: "replay" },
      h("div", { class: "replay-main" }, toggleSlot, boardBox, caption, controls, message),
      h("aside", { class: "side replay-side" }, h("h2", {}, t("match.moves")), moveList)),
  );

  /** Who played seat `seat`'s moves, as the list and the caption say it. */
  const who = (seat: number): string => (isPylos ? `${pylosSide(seat)} (${names[seat - 1] || "?"})` : names[seat - 1] || t("match.seat", { seat }));

  function renderMoves(): void {
    clear(moveList);
    moveList.append(...frames.map((frame, ply) => h("li", { class: frame.cancelled ? "cancelled" : "" },
      h("button", { class: "ply", "data-ply": ply, onclick: () => go(ply) },
        ply === 0
          ? h("span", { class: "what" }, t("replay.start"))
          : [h("span", { class: "n" }, `${ply}.`), " ", h("b", { class: "notation" }, frame.move), " ",
            h("span", { class: "who" }, who(frame.seat)), frame.cancelled ? h("span", { class: "hint" }, ` ${t("replay.cancelled")}`) : null]))));
  }

  function render(): void {
    const frame = frames[index];
    if (!frame) return;
    slider.max = String(frames.length - 1);
    slider.value = String(index);
    position.textContent = t("replay.position", { index, total: frames.length - 1 });
    caption.textContent = index === 0
      ? t("replay.theStart")
      : `${t(frame.cancelled ? "replay.playedCancelled" : "replay.played", { who: isPylos ? pylosSide(frame.seat) : who(frame.seat), move: frame.move })}${index === frames.length - 1 ? ` ${outcomeText}` : ""}`;
    for (const button of moveList.querySelectorAll<HTMLButtonElement>("button.ply")) {
      const here = Number(button.dataset.ply) === index;
      button.classList.toggle("current", here);
      if (here) button.setAttribute("aria-current", "step");
      else button.removeAttribute("aria-current");
    }
    // Keep the current move in view inside the list (the page itself does not scroll).
    const current = moveList.querySelector<HTMLElement>("button.current");
    if (current) {
      const top = current.offsetTop - moveList.offsetTop;
      if (top < moveList.scrollTop) moveList.scrollTop = top;
      else if (top + current.offsetHeight > moveList.scrollTop + moveList.clientHeight) moveList.scrollTop = top + current.offsetHeight - moveList.clientHeight;
    }
    const drawn = hasDrawing(frame.view);
    toggleSlot.hidden = !drawn;
    if (!drawn || notationChosen()) {
      if (!boardBox.contains(generic.element)) { clear(boardBox); boardBox.append(generic.element); }
      generic.update({ view: frame.view, mySeat: 0, legalMoves: [], lastMove: frame.move || undefined, who });
    } else if (frame.view.detail.case === "pylos") {
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
        message.textContent = t("replay.running");
        return;
      }
      names = distinctNames(match.seats.map((s) => s.playerName));
      const states = match.seats.map((s) => s.state);
      isPylos = match.config?.game === 1;
      title.textContent = t("replay.titleGame", { game: gameName(match.config?.game ?? 0), id: matchId });
      const rules = rulesGameOf(match.config?.game);
      if (rules) title.after(rulesLink(rules));
      players.textContent = t("replay.players", { list: names.map((name, i) => `${isPylos ? `${pylosSide(i + 1)} ` : `${i + 1}. `}${name || "?"}`).join(" · ") });
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
            if (o) outcomeText = t("replay.gameOver", { headline: resultHeadline(o, who), why: endingSentence(o.termination, culpritSeats(o.termination, o, states).map(who), match.config?.game) });
          }
        }
      }
      renderMoves();
      go(0);
      if (frames.length) {
        for (const control of [...steppers, slider]) control.disabled = false;
      }
    } catch (error) {
      if (!abort.signal.aborted) message.textContent = explain(error);
    } finally {
      // Still disabled: no record was shown (a running match, an error), so nothing is loading.
      if (slider.disabled) caption.textContent = "";
    }
  })();
  return () => {
    abort.abort();
    window.removeEventListener("keydown", onKey);
  };
}
