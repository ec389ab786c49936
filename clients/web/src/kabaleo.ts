// The Kabaleo table: every stack in full (base at the bottom, as bots see it), every hand, your
// secret colour and its live score, the last move marked and a cancellation shown as such.
// To move: pick a colour from your hand, then one of the highlighted stacks.
// With keys: your hand and the stacks are one tab stop each (a roving focus): arrow keys move
// between chips or stacks, Enter or Space on a chip picks it and takes the focus to the stacks,
// Enter or Space on a highlighted stack plays there, Escape drops the chip picked. On a phone
// your hand stays at the bottom of the screen (sticky) while the stacks are above it.
import { clear, h } from "./dom.js";
import type { GameView } from "./gen/ziggurat/v1/game_pb.js";
import { t } from "./i18n.js";
import { colourName } from "./text.js";

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
  return t("kabaleo.score", { count: score.stacks, covered: score.covered, tallest: score.tallest });
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
  /** Which stack and which chip hold the roving focus of their group. */
  private focusStack = 1;
  private focusChip = "";

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

  /** Picks a colour (by click or key): the stacks it may go on are highlighted. */
  private pick(letter: string, viaKey: boolean): void {
    this.selected = letter;
    this.focusChip = letter;
    if (viaKey) {
      // The focus goes on to where the chip can go, not to the page: the first highlighted stack.
      const targets = this.targets();
      if (!targets.has(this.focusStack)) this.focusStack = Math.min(...targets);
      this.render("stack");
    } else {
      this.render("chip");
    }
  }

  private targets(): Set<number> {
    const targets = new Set<number>();
    if (this.selected) for (const m of this.props?.legalMoves ?? []) if (m[0] === this.selected) targets.add(Number(m.slice(1)));
    return targets;
  }

  private playOn(number: number): void {
    if (this.selected && this.props?.legalMoves.includes(`${this.selected}${number}`)) this.props.onMove?.(`${this.selected}${number}`);
  }

  private stackKey(event: KeyboardEvent, number: number, count: number): void {
    let next = 0;
    switch (event.key) {
      case "ArrowRight": case "ArrowDown": next = Math.min(count, number + 1); break;
      case "ArrowLeft": case "ArrowUp": next = Math.max(1, number - 1); break;
      case "Home": next = 1; break;
      case "End": next = count; break;
      case "Enter": case " ":
        event.preventDefault();
        this.focusStack = number;
        this.playOn(number);
        return;
      case "Escape":
        if (this.selected) {
          event.preventDefault();
          this.selected = "";
          this.render("chip");
        }
        return;
      default:
        return;
    }
    event.preventDefault();
    this.focusStack = next;
    this.rove("[data-stack]", String(next), "stack");
  }

  private chipKey(event: KeyboardEvent, letter: string, letters: string[]): void {
    const at = letters.indexOf(letter);
    let next = "";
    switch (event.key) {
      case "ArrowRight": case "ArrowDown": next = letters[Math.min(letters.length - 1, at + 1)]; break;
      case "ArrowLeft": case "ArrowUp": next = letters[Math.max(0, at - 1)]; break;
      case "Home": next = letters[0]; break;
      case "End": next = letters[letters.length - 1]; break;
      case "Enter": case " ":
        event.preventDefault();
        this.pick(letter, true);
        return;
      case "Escape":
        if (this.selected) { event.preventDefault(); this.selected = ""; this.render("chip"); }
        return;
      default:
        return;
    }
    event.preventDefault();
    this.focusChip = next;
    this.rove(".hand.mine .chip[data-colour]", next, "colour");
  }

  /** Moves a group's one tab stop to the element whose data-`key` is `value`, and focuses it. */
  private rove(selector: string, value: string, key: "stack" | "colour"): void {
    for (const el of this.element.querySelectorAll<HTMLElement>(selector)) {
      const hit = el.dataset[key] === value;
      el.tabIndex = hit ? 0 : -1;
      if (hit) el.focus();
    }
  }

  /** Draws the table; `focus` puts the focus on the group's roving element afterwards (else the
   * focus stays where it was: on the same stack or chip when it was in the board). */
  private render(focus?: "stack" | "chip"): void {
    const props = this.props;
    if (!props || props.view.detail.case !== "kabaleo") return;
    const k = props.view.detail.value;
    const active = document.activeElement as HTMLElement | null;
    const inBoard = !!active && this.element.contains(active);
    const was: "stack" | "chip" | undefined = focus ?? (inBoard ? (active.dataset.stack ? "stack" : active.dataset.colour ? "chip" : undefined) : undefined);
    const lastStack = k.lastStack;
    const targets = this.targets();
    clear(this.element);
    const mine = props.mySeat ? k.objectives[props.mySeat - 1] : "";
    if (mine && mine !== "?") {
      const score = scoreOf(k.stacks, mine);
      this.element.append(h("div", { class: "secret", "data-secret": mine },
        `${t("kabaleo.secret")} `, swatch(mine), h("b", {}, colourName(mine)),
        h("span", { class: "score", "data-score": `${score.stacks}/${score.covered}/${score.tallest}` }, " — ", scoreText(score))));
    }
    const count = k.stacks.length;
    if (this.focusStack > count) this.focusStack = 1;
    const stacks = k.stacks.map((stack, index) => {
      const number = index + 1;
      const classes = ["stack"];
      if (number === lastStack) classes.push("last");
      if (targets.has(number)) classes.push("target");
      const blocks = [...stack].map((letter, i) =>
        h("div", { class: `piece c-${letter}${i === 0 ? " base" : ""}`, title: i === 0 ? t("kabaleo.baseOf", { colour: colourName(letter) }) : colourName(letter) }));
      const names = [...stack].map(colourName);
      const label = [
        names.length > 1 ? t("kabaleo.stackOnTop", { n: number, base: names[0], pieces: names.slice(1).join(", ") }) : t("kabaleo.stack", { n: number, base: names[0] }),
        targets.has(number) ? t("kabaleo.placeHere", { colour: colourName(this.selected) }) : "",
        number === lastStack ? t(props.cancelled ? "kabaleo.lastCancelled" : "kabaleo.last") : "",
      ].filter(Boolean).join("; ");
      return h("div", {
        class: classes.join(" "), "data-stack": number, "data-content": stack,
        role: "button", tabindex: number === this.focusStack ? 0 : -1,
        "aria-disabled": targets.has(number) ? null : "true",
        onclick: () => { this.focusStack = number; this.playOn(number); },
        onkeydown: (e: Event) => this.stackKey(e as KeyboardEvent, number, count),
      },
      // Named by its words, read out in full; what shows (the pieces, the number) is hidden from
      // a screen reader (an aria-label would not contain the visible "cancelled").
      h("span", { class: "sr-only" }, label),
      h("div", { class: "pile", "aria-hidden": "true" }, blocks.reverse()),
      h("div", { class: "number", "aria-hidden": "true" }, number),
      number === lastStack && props.cancelled ? h("div", { class: "cancel-badge", "aria-hidden": "true" }, t("kabaleo.cancelled")) : null);
    });
    let myHand: HTMLElement | null = null;
    const hands = k.hands.map((hand, index) => {
      const seat = index + 1;
      const counts = new Map<string, number>();
      for (const letter of hand) counts.set(letter, (counts.get(letter) ?? 0) + 1);
      const isMine = seat === props.mySeat;
      const letters = [...counts.keys()].filter((letter) => isMine && props.legalMoves.some((m) => m[0] === letter));
      if (isMine && !letters.includes(this.focusChip)) this.focusChip = letters.includes(this.selected) ? this.selected : letters[0] ?? "";
      const chips = [...counts.entries()].map(([letter, count]) => {
        const playable = letters.includes(letter);
        const selected = this.selected === letter && isMine;
        return h("button", {
          class: `chip c-${letter}${selected ? " selected" : ""}`,
          "data-colour": letter, disabled: !playable, title: colourName(letter),
          "aria-label": t("kabaleo.pieces", { colour: colourName(letter), count }),
          "aria-pressed": isMine ? (selected ? "true" : "false") : null,
          tabindex: playable ? (letter === this.focusChip ? 0 : -1) : null,
          onclick: () => this.pick(letter, false),
          onkeydown: playable ? (e: Event) => this.chipKey(e as KeyboardEvent, letter, letters) : null,
        }, `${count}`);
      });
      const objective = k.objectives[index];
      const forfeited = k.forfeitedSeats.includes(seat);
      const row = h("div", {
        class: `hand${isMine ? " mine" : ""}${props.view.toMove === seat ? " to-move" : ""}`, "data-seat": seat,
        role: "group", "aria-label": isMine ? t("kabaleo.yourHand") : t("kabaleo.handOf", { name: props.names[index] || t("match.seat", { seat }) }),
      },
      h("span", { class: "who" }, `${seat}. ${props.names[index] || "?"}${isMine ? ` ${t("match.you")}` : ""}${forfeited ? ` – ${t("kabaleo.forfeited")}` : ""}`),
      objective && objective !== "?" && !isMine ? h("span", { class: "objective" }, `${t("kabaleo.colour")} `, swatch(objective)) : null,
      h("span", { class: "chips" }, chips.length ? chips : h("i", {}, t("kabaleo.noPieces"))));
      if (isMine) myHand = row;
      return row;
    });
    const hint = props.legalMoves.length
      ? h("p", { class: "hint" }, this.selected
        ? t("kabaleo.placeHint", { colour: colourName(this.selected) })
        : t("kabaleo.turnHint"))
      : null;
    this.element.append(
      h("div", { class: "stacks", role: "group", "aria-label": t("kabaleo.stacks") }, stacks),
      h("div", { class: "hands" }, hands.filter((row) => row !== myHand)),
    );
    // Your hand last, sticky at the bottom of the screen: chip and stack both in view at once.
    if (myHand || hint) this.element.append(h("div", { class: "my-turn" }, myHand, hint));
    const refocus = was === "stack" ? this.element.querySelector<HTMLElement>(`[data-stack="${this.focusStack}"]`)
      : was === "chip" ? (this.element.querySelector<HTMLElement>(`.hand.mine .chip[data-colour="${this.focusChip}"]:not([disabled])`)
        ?? this.element.querySelector<HTMLElement>(`[data-stack="${this.focusStack}"]`))
      : null;
    refocus?.focus();
  }
}

export function swatch(letter: string): HTMLElement {
  return h("span", { class: `swatch c-${letter}`, title: colourName(letter) });
}
