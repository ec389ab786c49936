// The Pylos board: the pyramid seen from above, each level drawn half a place in and on top of
// the one below, so the stacking shows. Moves are made by clicking, guided by the legal moves
// the server sent: a place to put a reserve ball; or a free ball of yours, then one of the
// highlighted places above to raise it; when that completes a square (or a line), the square is
// outlined and the balls you may take back are highlighted: click one, then a second or "Done".
// The same with keys: the board is one tab stop (a roving focus over its places): arrow keys
// move on a level (left/right in reading order, up/down along a column), Page Up/Page Down
// change level, Enter or Space acts on the place, Escape drops a half-made move. Every place is
// named in the rules' notation ("level 1 c4, empty").
import { clear, h, svg } from "./dom.js";
import type { GameView } from "./gen/ziggurat/v1/game_pb.js";
import { t } from "./i18n.js";
import { pylosSide } from "./text.js";

const C = 64;
/** Room around the pyramid for the bottom level's coordinates (letters above, numbers left). */
const PAD = 30;
const R = C * 0.47;
/** Balls higher up are drawn a little bigger, so the levels read at a glance. */
const GROW = [1, 1, 1.06, 1.12, 1.18];
const COLS = "abcd";

interface Move {
  text: string;
  from?: string;
  to: string;
  taken: string[];
}

export function parseMove(text: string): Move | null {
  const m = /^(?:([1-4][a-d][1-4])-)?([1-4][a-d][1-4])((?:x[1-4][a-d][1-4])*)$/.exec(text);
  if (!m) return null;
  const taken = m[3] ? m[3].slice(1).split("x") : [];
  return { text, from: m[1] || undefined, to: m[2], taken };
}

type Board = Map<string, string>; // place -> "L" | "D" | "."

export function boardOf(levels: string[]): Board {
  const board: Board = new Map();
  levels.forEach((row, index) => {
    const level = index + 1;
    const n = 5 - level;
    for (let i = 0; i < n * n; i++) board.set(place(level, i % n, Math.floor(i / n)), row[i] ?? ".");
  });
  return board;
}

function place(level: number, col: number, row: number): string {
  return `${level}${COLS[col]}${row + 1}`;
}

function coords(p: string): [number, number, number] {
  return [Number(p[0]), COLS.indexOf(p[1]), Number(p[2]) - 1];
}

function supported(board: Board, p: string): boolean {
  const [level, col, row] = coords(p);
  if (level === 1) return true;
  return [[0, 0], [1, 0], [0, 1], [1, 1]].every(([dc, dr]) => board.get(place(level - 1, col + dc, row + dr)) !== ".");
}

/** 2x2 blocks of `colour` on p's level that contain p (the squares a move just completed). */
function squaresAt(board: Board, p: string, colour: string): string[][] {
  const [level, col, row] = coords(p);
  const n = 5 - level;
  const found: string[][] = [];
  if (level > 3) return found;
  for (let c = col - 1; c <= col; c++) {
    for (let r = row - 1; r <= row; r++) {
      if (c < 0 || r < 0 || c + 1 >= n || r + 1 >= n) continue;
      const block = [place(level, c, r), place(level, c + 1, r), place(level, c, r + 1), place(level, c + 1, r + 1)];
      if (block.every((q) => board.get(q) === colour)) found.push(block);
    }
  }
  return found;
}

/** Full rows and columns of `colour` through p on levels 1 and 2 (the advanced variant's lines). */
function linesAt(board: Board, p: string, colour: string): string[][] {
  const [level, col, row] = coords(p);
  if (level > 2) return [];
  const n = 5 - level;
  const rowLine = Array.from({ length: n }, (_, c) => place(level, c, row));
  const colLine = Array.from({ length: n }, (_, r) => place(level, col, r));
  return [rowLine, colLine].filter((line) => line.every((q) => board.get(q) === colour));
}

/** Places in reading order on each level (row 1 first, column a first), as the keys walk them. */
function levelPlaces(level: number): string[] {
  const n = 5 - level;
  return Array.from({ length: n * n }, (_, i) => place(level, i % n, Math.floor(i / n)));
}

function centre(p: string): [number, number] {
  const [level, col, row] = coords(p);
  const offset = PAD + ((level - 1) * C) / 2;
  return [offset + col * C + C / 2, offset + row * C + C / 2];
}

export interface PylosProps {
  view: GameView;
  mySeat: number; // 0 = spectator
  legalMoves: string[];
  lastMove?: string;
  /** A move of ours sent and not answered yet: drawn as a ghost until it is played or refused. */
  pendingMove?: string;
  /** The advanced variant: full rows and columns count as squares do (outlined the same way). */
  lines?: boolean;
  onMove?: (move: string) => void;
  onHint?: (text: string) => void;
}

type Mode = { kind: "idle" } | { kind: "raise"; from: string } | { kind: "recover"; from?: string; to: string; picks: string[] };

export class PylosBoard {
  private mode: Mode = { kind: "idle" };
  private props: PylosProps | null = null;
  readonly element = h("div", { class: "pylos" });
  /** The place that holds the board's one tab stop (the roving focus). */
  private focusPlace = "";
  /** Places drawn now (empty supported places and balls): where the keys can go. */
  private shown = new Set<string>();

  private drawn = "";

  update(props: PylosProps): void {
    const turnChanged = !this.props || this.props.view.ply !== props.view.ply || this.props.legalMoves.join() !== props.legalMoves.join();
    this.props = props;
    if (turnChanged) {
      this.mode = { kind: "idle" };
      this.sent = false;
    }
    // Redraw only when what is shown changed: a board redrawn under the pointer between a
    // press and its release loses the click (events about seats or clocks change nothing here).
    const key = [props.view.ply, props.view.position, props.legalMoves.join(), props.lastMove ?? "", props.mySeat, props.pendingMove ?? ""].join("|");
    if (key === this.drawn && !turnChanged) return;
    this.drawn = key;
    this.render();
  }

  private moves(): Move[] {
    if (this.sent) return [];
    return (this.props?.legalMoves ?? []).map(parseMove).filter((m): m is Move => m !== null);
  }

  private colour(): string {
    return this.props?.mySeat === 1 ? "L" : "D";
  }

  private sent = false; // a move is on its way: nothing is clickable until the next turn

  /** The move sent was refused: the board takes clicks again. */
  unlock(): void {
    this.sent = false;
    this.drawn = "";
    if (this.props) this.update(this.props);
  }

  private play(move: string): void {
    this.mode = { kind: "idle" };
    this.sent = true;
    this.props?.onMove?.(move);
    this.render();
  }

  private choose(from: string | undefined, to: string): void {
    const candidates = this.moves().filter((m) => m.from === from && m.to === to);
    if (!candidates.length) return;
    const plain = candidates.find((m) => m.taken.length === 0);
    if (plain && candidates.length === 1) {
      this.play(plain.text);
      return;
    }
    this.mode = { kind: "recover", from, to, picks: [] };
    this.props?.onHint?.(t("pylos.takeBack", { done: this.squareWord(from, to) }));
    this.render();
  }

  private pick(ball: string): void {
    if (this.mode.kind !== "recover") return;
    const { from, to } = this.mode;
    const picks = [...this.mode.picks, ball];
    const candidates = this.moves().filter((m) => m.from === from && m.to === to);
    const exact = candidates.find((m) => sameSet(m.taken, picks));
    const more = candidates.some((m) => m.taken.length > picks.length && picks.every((p) => m.taken.includes(p)));
    if (exact && !more) {
      this.play(exact.text);
      return;
    }
    this.mode = { ...this.mode, picks };
    this.props?.onHint?.(t("pylos.second"));
    this.render();
  }

  private finish(): void {
    if (this.mode.kind !== "recover") return;
    const { from, to, picks } = this.mode;
    const exact = this.moves().find((m) => m.from === from && m.to === to && sameSet(m.taken, picks));
    if (exact) this.play(exact.text);
  }

  private cancel(): void {
    this.mode = { kind: "idle" };
    this.props?.onHint?.("");
    this.render();
  }

  private click(p: string): void {
    const moves = this.moves();
    if (!moves.length || !this.props) return;
    const mode = this.mode;
    if (mode.kind === "recover") {
      if (this.recoverable().has(p)) this.pick(p);
      return;
    }
    if (mode.kind === "raise") {
      if (p === mode.from) return this.cancel();
      if (moves.some((m) => m.from === mode.from && m.to === p)) return this.choose(mode.from, p);
    }
    if (moves.some((m) => m.from === p)) {
      this.mode = { kind: "raise", from: p };
      this.props.onHint?.(t("pylos.raiseHint"));
      this.render();
      return;
    }
    if (moves.some((m) => !m.from && m.to === p)) this.choose(undefined, p);
  }

  /** "Square!" or "Line!": what the move being made completes. */
  private squareWord(from: string | undefined, to: string): string {
    const board = boardOf(this.props?.view.detail.case === "pylos" ? this.props.view.detail.value.levels : []);
    if (from) board.set(from, ".");
    board.set(to, this.colour());
    return squaresAt(board, to, this.colour()).length || !this.props?.lines ? t("pylos.square") : t("pylos.line");
  }

  /** The keys of the board's roving focus (on the place `p` that has it). */
  private key(event: KeyboardEvent, p: string): void {
    const [level] = coords(p);
    const order = levelPlaces(level).filter((q) => this.shown.has(q));
    const at = order.indexOf(p);
    let next: string | undefined;
    switch (event.key) {
      case "ArrowRight": next = order[at + 1]; break;
      case "ArrowLeft": next = order[at - 1]; break;
      case "ArrowDown": case "ArrowUp": {
        const [, col, row] = coords(p);
        const step = event.key === "ArrowDown" ? 1 : -1;
        for (let r = row + step; r >= 0 && r < 5 - level && !next; r += step) {
          if (this.shown.has(place(level, col, r))) next = place(level, col, r);
        }
        break;
      }
      case "PageUp": next = this.nearestOn(level + 1, p); break;
      case "PageDown": next = this.nearestOn(level - 1, p); break;
      case "Home": next = order[0]; break;
      case "End": next = order[order.length - 1]; break;
      case "Enter": case " ":
        event.preventDefault();
        this.click(p);
        return;
      case "Escape":
        if (this.mode.kind !== "idle") {
          event.preventDefault();
          this.cancel();
        }
        return;
      default:
        return;
    }
    event.preventDefault();
    if (next) this.moveFocus(next);
  }

  /** The drawn place of `level` nearest to where p is drawn (levels are drawn offset). */
  private nearestOn(level: number, p: string): string | undefined {
    if (level < 1 || level > 4) return undefined;
    const [x, y] = centre(p);
    let best: string | undefined;
    let bestDistance = Infinity;
    for (const q of levelPlaces(level)) {
      if (!this.shown.has(q)) continue;
      const [qx, qy] = centre(q);
      const distance = (qx - x) ** 2 + (qy - y) ** 2;
      if (distance < bestDistance) { best = q; bestDistance = distance; }
    }
    return best;
  }

  private moveFocus(p: string): void {
    this.focusPlace = p;
    for (const circle of this.element.querySelectorAll<SVGElement>("circle[data-place]")) {
      circle.setAttribute("tabindex", circle.dataset.place === p ? "0" : "-1");
      if (circle.dataset.place === p) circle.focus();
    }
  }

  /** Balls that may be taken next in the current recovery. The first one must be free now,
   * which is exactly when taking it alone is legal; the second is any ball that completes a
   * legal pair with it (the server accepts a pair in either playable order). */
  private recoverable(): Set<string> {
    const out = new Set<string>();
    if (this.mode.kind !== "recover") return out;
    const { from, to, picks } = this.mode;
    for (const m of this.moves()) {
      if (m.from !== from || m.to !== to) continue;
      if (picks.length === 0 && m.taken.length === 1) out.add(m.taken[0]);
      if (picks.length === 1 && m.taken.length === 2 && m.taken.includes(picks[0])) {
        for (const t of m.taken) if (t !== picks[0]) out.add(t);
      }
    }
    return out;
  }

  private render(): void {
    const props = this.props;
    if (!props || props.view.detail.case !== "pylos") return;
    const detail = props.view.detail.value;
    const board = boardOf(detail.levels);
    const moves = this.moves();
    const mode = this.mode;
    const me = this.colour();
    let squares: string[][] = [];
    let lines: string[][] = [];
    const picked = new Set<string>();
    if (mode.kind === "recover") {
      if (mode.from) board.set(mode.from, ".");
      board.set(mode.to, me);
      squares = squaresAt(board, mode.to, me);
      if (props.lines) lines = linesAt(board, mode.to, me);
      for (const p of mode.picks) picked.add(p);
    }
    const targets = new Set<string>();
    const sources = new Set<string>();
    if (mode.kind === "idle") {
      for (const m of moves) {
        if (m.from) sources.add(m.from);
        else targets.add(m.to);
      }
    } else if (mode.kind === "raise") {
      for (const m of moves) if (m.from === mode.from) targets.add(m.to);
    }
    const recoverable = this.recoverable();
    const last = props.lastMove ? parseMove(props.lastMove) : null;
    // The move on its way, drawn over the board: its ball where it goes, the places it leaves.
    const sending = props.pendingMove ? parseMove(props.pendingMove) : null;
    const leaving = new Set<string>();
    if (sending) {
      for (const p of [sending.from, ...sending.taken]) if (p) leaving.add(p);
      if (!sending.taken.includes(sending.to)) board.set(sending.to, me);
    }
    const hadFocus = this.element.contains(document.activeElement);
    const size = PAD + 4 * C + 10;
    const shapes: SVGElement[] = [];
    // The bottom level's coordinates, as the rules write them: columns a-d, rows 1-4.
    for (let i = 0; i < 4; i++) {
      shapes.push(svg("text", { x: PAD + i * C + C / 2, y: PAD - 9, class: "coord", "text-anchor": "middle", "aria-hidden": "true" }, COLS[i]));
      shapes.push(svg("text", { x: PAD - 12, y: PAD + i * C + C / 2 + 5, class: "coord", "text-anchor": "middle", "aria-hidden": "true" }, i + 1));
    }
    const shown = new Set<string>();
    for (let level = 1; level <= 4; level++) {
      const n = 5 - level;
      const offset = PAD + ((level - 1) * C) / 2;
      if (level > 1 && levelPlaces(level).some((p) => board.get(p) !== "." || supported(board, p))) {
        // A plate under each upper level that has a place to show, so the levels read as layers.
        shapes.push(svg("rect", { x: offset + 4, y: offset + 4, width: n * C - 8, height: n * C - 8, rx: 18, class: `plate level${level}` }));
      }
      for (let row = 0; row < n; row++) {
        for (let col = 0; col < n; col++) {
          const p = place(level, col, row);
          const ball = board.get(p) ?? ".";
          const cx = offset + col * C + C / 2;
          const cy = offset + row * C + C / 2;
          const classes = ["place", `level${level}`];
          if (ball === "L") classes.push("ball", "light");
          else if (ball === "D") classes.push("ball", "dark");
          else if (supported(board, p)) classes.push("empty");
          else continue; // nothing to draw: not yet supported
          shown.add(p);
          // What can be done on the place (makes it actionable), then what it shows (does not).
          const actions: string[] = [];
          const facts: string[] = [];
          if (targets.has(p)) { classes.push("target"); actions.push(t(mode.kind === "raise" ? "pylos.raiseHere" : "pylos.playHere")); }
          if (sources.has(p)) { classes.push("source"); actions.push(t("pylos.free")); }
          if (mode.kind === "raise" && mode.from === p) { classes.push("selected"); actions.push(t("pylos.picked")); }
          if (mode.kind === "recover" && mode.to === p) classes.push("pending");
          if (recoverable.has(p)) { classes.push("recoverable"); actions.push(t("pylos.canTake")); }
          if (picked.has(p)) { classes.push("picked"); facts.push(t("pylos.taken")); }
          if (sending && sending.to === p && !leaving.has(p)) classes.push("sending");
          if (leaving.has(p)) classes.push("leaving");
          if (last && last.to === p && !sending) { classes.push("last"); facts.push(t("pylos.lastMove")); }
          if (last && last.from === p && ball === ".") classes.push("last-from");
          const owner = ball === "." ? t("pylos.empty") : props.mySeat === 0 ? t(ball === "L" ? "pylos.lightBall" : "pylos.darkBall")
            : t(ball === me ? "pylos.yourBall" : "pylos.theirBall");
          // The order the words were always in: the actions, "taken back", then "last move".
          const label = [t("pylos.place", { level, place: p.slice(1), what: owner }), ...actions, ...facts].join(", ");
          const actionable = actions.length > 0;
          const circle = svg("circle", {
            cx, cy, r: ball === "." ? R * 0.62 : R * GROW[level],
            class: classes.join(" "), "data-place": p,
            role: "button", "aria-label": label, "aria-disabled": actionable ? null : "true",
            tabindex: "-1",
            onclick: () => { this.focusPlace = p; this.click(p); },
            onkeydown: (e: Event) => this.key(e as KeyboardEvent, p),
          });
          shapes.push(circle);
          if (ball === ".") {
            // An empty place shows its name, in the rules' notation.
            shapes.push(svg("text", { x: cx, y: cy + 4, class: `place-name level${level}`, "text-anchor": "middle", "aria-hidden": "true" }, p));
          } else if (level > 1) {
            // A ball above the bottom level carries its level's number.
            shapes.push(svg("text", { x: cx, y: cy + 6, class: `level-mark ${ball === "L" ? "on-light" : "on-dark"}`, "text-anchor": "middle", "aria-hidden": "true" }, level));
          }
          if (last && last.taken.includes(p) && ball === ".") {
            shapes.push(svg("text", { x: cx, y: cy - 12, class: "taken-mark", "text-anchor": "middle", "aria-hidden": "true" }, "×"));
          }
        }
      }
    }
    for (const block of squares) {
      const [level, col, row] = coords(block[0]);
      const offset = PAD + ((level - 1) * C) / 2;
      shapes.push(svg("rect", { x: offset + col * C + 2, y: offset + row * C + 2, width: 2 * C - 4, height: 2 * C - 4, rx: C / 2, class: "square" }));
    }
    for (const line of lines) {
      // A line outlined as a square is: a rounded band over its balls.
      const [level, col, row] = coords(line[0]);
      const horizontal = line[1][2] === line[0][2];
      const offset = PAD + ((level - 1) * C) / 2;
      const long = line.length * C - 4;
      shapes.push(svg("rect", {
        x: offset + col * C + 2, y: offset + row * C + 2, width: horizontal ? long : C - 4, height: horizontal ? C - 4 : long,
        rx: C / 2, class: "square line",
      }));
    }
    this.shown = shown;
    if (!shown.has(this.focusPlace)) {
      this.focusPlace = [...targets, ...sources, ...recoverable].find((p) => shown.has(p)) ?? "1a1";
    }
    clear(this.element);
    this.element.dataset.me = props.mySeat === 1 ? "L" : props.mySeat === 2 ? "D" : "";
    const controls: HTMLElement[] = [];
    if (mode.kind === "recover") {
      const exact = moves.some((m) => m.from === mode.from && m.to === mode.to && sameSet(m.taken, mode.picks));
      if (mode.picks.length) controls.push(h("button", { class: "done", disabled: !exact, onclick: () => this.finish() }, t("pylos.done")));
      controls.push(h("button", { class: "cancel", onclick: () => this.cancel() }, t("pylos.cancel")));
    } else if (mode.kind === "raise") {
      controls.push(h("button", { class: "cancel", onclick: () => this.cancel() }, t("pylos.cancelRaise")));
    }
    const legend = h("p", { class: "levels-legend", "aria-hidden": "true" },
      [1, 2, 3, 4].map((level) => h("span", { class: `level-chip level${level}` }, t("pylos.level", { level }))),
      ` — ${t("pylos.legend")}`);
    const pyramid = svg("svg", {
      viewBox: `0 0 ${size} ${size}`, class: "pyramid", role: "group",
      "aria-label": t(!props.mySeat ? "pylos.board" : me === "L" ? "pylos.boardLight" : "pylos.boardDark"),
      "aria-describedby": "pylos-keys",
    }, shapes);
    this.element.append(
      pyramid as unknown as Node,
      legend,
      h("p", { class: "keys-help", id: "pylos-keys" }, t("pylos.keys")),
      h("div", { class: "reserves" },
        reserve(pylosSide(1), detail.lightReserve, "light", props.mySeat === 1),
        reserve(pylosSide(2), detail.darkReserve, "dark", props.mySeat === 2)),
      h("div", { class: "controls" }, controls),
    );
    const focused = this.element.querySelector<SVGElement>(`circle[data-place="${this.focusPlace}"]`)
      ?? this.element.querySelector<SVGElement>("circle[data-place]");
    if (focused) {
      focused.setAttribute("tabindex", "0");
      if (hadFocus) focused.focus();
    }
  }
}

function reserve(label: string, count: number, colour: string, mine: boolean): HTMLElement {
  const dots = Array.from({ length: count }, () => h("span", { class: `dot ${colour}` }));
  return h("div", { class: `reserve ${colour}`, "data-reserve": colour },
    h("span", { class: "label" }, `${label}${mine ? ` ${t("match.you")}` : ""}: `, h("b", { class: "count" }, count)), h("span", { class: "dots" }, dots));
}

function sameSet(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((x) => b.includes(x));
}
