// The Pylos board: the pyramid seen from above, each level drawn half a place in and on top of
// the one below, so the stacking shows. Moves are made by clicking, guided by the legal moves
// the server sent: a place to put a reserve ball; or a free ball of yours, then one of the
// highlighted places above to raise it; when that completes a square (or a line), the square is
// outlined and the balls you may take back are highlighted: click one, then a second or "Done".
import { clear, h, svg } from "./dom.js";
import type { GameView } from "./gen/ziggurat/v1/game_pb.js";

const C = 64;
const PAD = 14;
const R = C * 0.47;
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

export interface PylosProps {
  view: GameView;
  mySeat: number; // 0 = spectator
  legalMoves: string[];
  lastMove?: string;
  /** A move of ours sent and not answered yet: drawn as a ghost until it is played or refused. */
  pendingMove?: string;
  onMove?: (move: string) => void;
  onHint?: (text: string) => void;
}

type Mode = { kind: "idle" } | { kind: "raise"; from: string } | { kind: "recover"; from?: string; to: string; picks: string[] };

export class PylosBoard {
  private mode: Mode = { kind: "idle" };
  private props: PylosProps | null = null;
  readonly element = h("div", { class: "pylos" });

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
    this.props?.onHint?.("Square! Take back one or two of your free balls: click them.");
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
    this.props?.onHint?.("Take back a second ball, or press Done to keep it at one.");
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
      this.props.onHint?.("Now click a highlighted place above to raise this ball there (click it again to cancel).");
      this.render();
      return;
    }
    if (moves.some((m) => !m.from && m.to === p)) this.choose(undefined, p);
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
    let squares: string[][] = [];
    const picked = new Set<string>();
    if (mode.kind === "recover") {
      if (mode.from) board.set(mode.from, ".");
      board.set(mode.to, this.colour());
      squares = squaresAt(board, mode.to, this.colour());
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
      if (!sending.taken.includes(sending.to)) board.set(sending.to, this.colour());
    }
    const size = PAD * 2 + 4 * C;
    const shapes: SVGElement[] = [];
    for (let level = 1; level <= 4; level++) {
      const n = 5 - level;
      const offset = PAD + ((level - 1) * C) / 2;
      if (level > 1) {
        // A faint plate under each upper level, so the levels read as layers.
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
          if (targets.has(p)) classes.push("target");
          if (sources.has(p)) classes.push("source");
          if (mode.kind === "raise" && mode.from === p) classes.push("selected");
          if (mode.kind === "recover" && mode.to === p) classes.push("pending");
          if (recoverable.has(p)) classes.push("recoverable");
          if (picked.has(p)) classes.push("picked");
          if (sending && sending.to === p && !leaving.has(p)) classes.push("sending");
          if (leaving.has(p)) classes.push("leaving");
          if (last && last.to === p && !sending) classes.push("last");
          if (last && last.from === p && ball === ".") classes.push("last-from");
          const title = `${p}${ball === "L" ? " light" : ball === "D" ? " dark" : ""}`;
          shapes.push(svg("circle", {
            cx, cy, r: ball === "." ? R * 0.55 : R,
            class: classes.join(" "), "data-place": p,
            onclick: () => this.click(p),
          }, svg("title", {}, title)));
          if (last && last.taken.includes(p) && ball === ".") {
            shapes.push(svg("text", { x: cx, y: cy + 5, class: "taken-mark", "text-anchor": "middle" }, "×"));
          }
        }
      }
    }
    for (const block of squares) {
      const [level, col, row] = coords(block[0]);
      const offset = PAD + ((level - 1) * C) / 2;
      shapes.push(svg("rect", { x: offset + col * C + 2, y: offset + row * C + 2, width: 2 * C - 4, height: 2 * C - 4, rx: C / 2, class: "square" }));
    }
    clear(this.element);
    this.element.dataset.me = props.mySeat === 1 ? "L" : props.mySeat === 2 ? "D" : "";
    const controls: HTMLElement[] = [];
    if (mode.kind === "recover") {
      const exact = moves.some((m) => m.from === mode.from && m.to === mode.to && sameSet(m.taken, mode.picks));
      if (mode.picks.length) controls.push(h("button", { class: "done", disabled: !exact, onclick: () => this.finish() }, "Done (take back one)"));
      controls.push(h("button", { class: "cancel", onclick: () => this.cancel() }, "Cancel"));
    } else if (mode.kind === "raise") {
      controls.push(h("button", { class: "cancel", onclick: () => this.cancel() }, "Cancel raise"));
    }
    this.element.append(
      svg("svg", { viewBox: `0 0 ${size} ${size}`, class: "pyramid", role: "img", "aria-label": "Pylos board" }, shapes) as unknown as Node,
      h("div", { class: "reserves" },
        reserve("Light", detail.lightReserve, "light", props.mySeat === 1),
        reserve("Dark", detail.darkReserve, "dark", props.mySeat === 2)),
      h("div", { class: "controls" }, controls),
    );
  }
}

function reserve(label: string, count: number, colour: string, mine: boolean): HTMLElement {
  const dots = Array.from({ length: count }, () => h("span", { class: `dot ${colour}` }));
  return h("div", { class: `reserve ${colour}`, "data-reserve": colour },
    h("span", { class: "label" }, `${label}${mine ? " (you)" : ""}: `, h("b", { class: "count" }, count)), h("span", { class: "dots" }, dots));
}

function sameSet(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((x) => b.includes(x));
}
