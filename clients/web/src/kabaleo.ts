// The Kabaleo table: every stack in full (base at the bottom, as bots see it), every hand, your
// secret colour and its live score, the last move marked and a cancellation shown as such.
// To move: pick a colour from your hand, then one of the highlighted stacks.
import { clear, h } from "./dom.js";
import type { GameView } from "./gen/ziggurat/v1/game_pb.js";
import { COLOUR_NAMES } from "./text.js";

export interface Score {
  stacks: number;
  covered: number;
  tallest: number;
}

/** The scoring key of a colour on a table: (stacks, stacks topped by a piece, tallest such stack). */
export function scoreOf(stacks: string[], colour: string): Score {
  let count = 0;
  let covered = 0;
  let tallest = 0;
  for (const stack of stacks) {
    if (stack[stack.length - 1] !== colour) continue;
    count++;
    if (stack.length > 1) {
      covered++;
      tallest = Math.max(tallest, stack.length);
    }
  }
  return { stacks: count, covered, tallest };
}

export function scoreText(score: Score): string {
  return `${score.stacks} stacks, ${score.covered} covered, tallest covered ${score.tallest}`;
}

export interface KabaleoProps {
  view: GameView;
  mySeat: number;
  names: string[];
  legalMoves: string[];
  lastMove?: string;
  cancelled?: boolean;
  onMove?: (move: string) => void;
}

export class KabaleoBoard {
  readonly element = h("div", { class: "kabaleo" });
  private selected = "";
  private props: KabaleoProps | null = null;

  private drawn = "";

  update(props: KabaleoProps): void {
    if (this.props && this.props.view.ply !== props.view.ply) this.selected = "";
    this.props = props;
    // Redraw only when what is shown changed (a redraw between press and release loses a click).
    const key = [props.view.ply, props.view.position, props.legalMoves.join(), props.lastMove ?? "", props.cancelled, props.names.join(), props.mySeat].join("|");
    if (key === this.drawn) return;
    this.drawn = key;
    const colours = new Set(props.legalMoves.map((m) => m[0]));
    if (this.selected && !colours.has(this.selected)) this.selected = "";
    if (!this.selected && colours.size === 1) this.selected = [...colours][0];
    this.render();
  }

  private render(): void {
    const props = this.props;
    if (!props || props.view.detail.case !== "kabaleo") return;
    const k = props.view.detail.value;
    const legal = new Set(props.legalMoves);
    const lastStack = k.lastStack;
    const targets = new Set<number>();
    if (this.selected) for (const m of props.legalMoves) if (m[0] === this.selected) targets.add(Number(m.slice(1)));
    clear(this.element);
    const mine = props.mySeat ? k.objectives[props.mySeat - 1] : "";
    if (mine && mine !== "?") {
      const score = scoreOf(k.stacks, mine);
      this.element.append(h("div", { class: "secret", "data-secret": mine },
        "Your secret colour: ", swatch(mine), h("b", {}, COLOUR_NAMES[mine] ?? mine),
        h("span", { class: "score", "data-score": `${score.stacks}/${score.covered}/${score.tallest}` }, " — ", scoreText(score))));
    }
    const stacks = k.stacks.map((stack, index) => {
      const number = index + 1;
      const classes = ["stack"];
      if (number === lastStack) classes.push("last");
      if (targets.has(number)) classes.push("target");
      const blocks = [...stack].map((letter, i) =>
        h("div", { class: `piece c-${letter}${i === 0 ? " base" : ""}`, title: `${COLOUR_NAMES[letter] ?? letter}${i === 0 ? " base" : ""}` }));
      return h("div", {
        class: classes.join(" "), "data-stack": number, "data-content": stack,
        onclick: () => {
          if (this.selected && legal.has(`${this.selected}${number}`)) this.props?.onMove?.(`${this.selected}${number}`);
        },
      },
      h("div", { class: "pile" }, blocks.reverse()),
      h("div", { class: "number" }, number),
      number === lastStack && props.cancelled ? h("div", { class: "cancel-badge" }, "cancelled") : null);
    });
    const hands = k.hands.map((hand, index) => {
      const seat = index + 1;
      const counts = new Map<string, number>();
      for (const letter of hand) counts.set(letter, (counts.get(letter) ?? 0) + 1);
      const isMine = seat === props.mySeat;
      const chips = [...counts.entries()].map(([letter, count]) => {
        const playable = isMine && props.legalMoves.some((m) => m[0] === letter);
        return h("button", {
          class: `chip c-${letter}${this.selected === letter && isMine ? " selected" : ""}`,
          "data-colour": letter, disabled: !playable, title: COLOUR_NAMES[letter],
          onclick: () => { this.selected = letter; this.render(); },
        }, `${count}`);
      });
      const objective = k.objectives[index];
      const forfeited = k.forfeitedSeats.includes(seat);
      return h("div", { class: `hand${isMine ? " mine" : ""}${props.view.toMove === seat ? " to-move" : ""}`, "data-seat": seat },
        h("span", { class: "who" }, `${seat}. ${props.names[index] || "?"}${isMine ? " (you)" : ""}${forfeited ? " – forfeited" : ""}`),
        objective && objective !== "?" && !isMine ? h("span", { class: "objective" }, "colour ", swatch(objective)) : null,
        h("span", { class: "chips" }, chips.length ? chips : h("i", {}, "no pieces left")));
    });
    this.element.append(
      h("div", { class: "stacks" }, stacks),
      h("div", { class: "hands" }, hands),
    );
    if (props.legalMoves.length) {
      this.element.append(h("p", { class: "hint" }, this.selected
        ? `Place ${COLOUR_NAMES[this.selected]}: click a highlighted stack.`
        : "Your turn: pick a colour from your hand."));
    }
  }
}

export function swatch(letter: string): HTMLElement {
  return h("span", { class: `swatch c-${letter}`, title: COLOUR_NAMES[letter] ?? letter });
}
