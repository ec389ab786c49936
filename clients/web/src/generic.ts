// The generic board: any game shown as the server writes it, with no drawing of its own. It is
// what a game this client has no board for gets (a game added to the server after this client
// was built), and the "notation view" a reader may choose for Pylos and Kabaleo too (a screen
// reader reads the notation better than a picture). It knows nothing about any game: it shows
// GameView's generic fields only (the position text as this viewer may see it, whose turn it
// is, the last move) and the legal moves as buttons, each one a move sent as it is written.
// Keys: every move is a button (Tab, Enter); once a move is sent the focus stays in the board
// and comes back to the first move when the next turn comes.
import { clear, h } from "./dom.js";
import { Game, type GameView } from "./gen/ziggurat/v1/game_pb.js";
import { t } from "./i18n.js";
import { gameName } from "./text.js";

/** The games this client draws, each with the `detail` its drawing reads. */
const DRAWN: Partial<Record<Game, GameView["detail"]["case"]>> = {
  [Game.PYLOS]: "pylos",
  [Game.KABALEO]: "kabaleo",
};

/** Whether this client has a drawing for the game of `view` (and the view carries its detail). */
export function hasDrawing(view: GameView): boolean {
  return DRAWN[view.game] !== undefined && DRAWN[view.game] === view.detail.case;
}

const NOTATION_KEY = "ziggurat.notation";

/** Whether this browser chose the notation view for every game (off unless chosen). */
export function notationChosen(): boolean {
  try {
    return localStorage.getItem(NOTATION_KEY) === "1";
  } catch {
    return false; // storage refused: the drawn boards
  }
}

function chooseNotation(on: boolean): void {
  try {
    if (on) localStorage.setItem(NOTATION_KEY, "1");
    else localStorage.removeItem(NOTATION_KEY);
  } catch {
    // not remembered: this page still switches
  }
}

/** The "Notation view" switch: a checkbox, remembered in this browser; `changed` redraws. */
export function notationToggle(changed: () => void): HTMLLabelElement {
  const box = h("input", { type: "checkbox", id: "notation-view", class: "notation-check", checked: notationChosen() });
  box.addEventListener("change", () => {
    chooseNotation(box.checked);
    changed();
  });
  return h("label", { class: "notation-toggle", for: "notation-view" }, box, ` ${t("generic.toggle")}`);
}

export interface GenericProps {
  view: GameView;
  /** 0 for a spectator (or a replay). */
  mySeat: number;
  /** The moves offered now: empty unless it is this seat's turn and no move is on its way. */
  legalMoves: string[];
  lastMove?: string;
  /** A seat named as the page names it ("Light (Ada)", "Bea", "seat 3"). */
  who: (seat: number) => string;
  onMove?: (move: string) => void;
}

export class GenericBoard {
  readonly element = h("section", { class: "generic", "aria-labelledby": "generic-title" });
  private drawn = "";

  update(props: GenericProps): void {
    const { view } = props;
    // Redraw only when what is shown changed (a redraw between press and release loses a click).
    const key = [view.game, view.ply, view.position, view.toMove, props.legalMoves.join(" "), props.lastMove ?? "", props.mySeat, !!view.outcome, props.who(view.toMove)].join("|");
    if (key === this.drawn) return;
    this.drawn = key;
    const active = document.activeElement;
    // The focus was in the board (on a move just played, now gone, or on the moves' group).
    const hadFocus = !!active && (this.element.contains(active) || (active === document.body && this.element.dataset.focus === "1"));
    clear(this.element);
    const over = !!view.outcome;
    const turn = over ? t("generic.over")
      : !view.toMove ? ""
      : view.toMove === props.mySeat ? t("generic.yourMove")
      : t("generic.toMove", { who: props.who(view.toMove) });
    const moves = h("div", { class: "legal-moves", role: "group", "aria-labelledby": "generic-moves-title" },
      props.legalMoves.map((move) => h("button", {
        type: "button", class: "legal-move mono", "data-move": move,
        onclick: () => {
          this.element.dataset.focus = "1";
          props.onMove?.(move);
        },
      }, move)));
    this.element.append(
      h("h2", { id: "generic-title", class: "generic-title" }, t("generic.position", { game: gameName(view.game) })),
      // The position as one block of text, wrapped anywhere on a narrow screen (never wider than it).
      h("pre", { class: "position mono", "data-ply": view.ply }, view.position),
      h("p", { class: "generic-turn", role: "status" }, turn),
      h("p", { class: "generic-last" }, props.lastMove ? t("generic.lastMove", { move: props.lastMove }) : ""),
    );
    if (props.legalMoves.length) {
      this.element.append(h("h3", { id: "generic-moves-title", class: "generic-moves-title" }, t("generic.legalMoves", { count: props.legalMoves.length })), moves);
    }
    if (!props.legalMoves.length && hadFocus && !over) {
      // The move is on its way: the focus waits on the board's heading, not on the page.
      const title = this.element.querySelector<HTMLElement>("#generic-title");
      if (title) {
        title.tabIndex = -1;
        title.focus();
      }
      this.element.dataset.focus = "1";
      return;
    }
    if (hadFocus && props.legalMoves.length) this.element.querySelector<HTMLElement>("button.legal-move")?.focus();
    if (!hadFocus || over) delete this.element.dataset.focus;
  }
}
