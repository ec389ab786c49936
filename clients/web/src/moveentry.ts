// A move typed in the rules' notation, as the terminal client takes it: a text field beside the
// board. What is typed is read before it is sent: a garbled move or one that is not legal now is
// answered under the field in words (never a raw error text), and nothing is sent.
import { h } from "./dom.js";
import { t } from "./i18n.js";
import { parseMove } from "./pylos.js";

/** "generic": a game this client knows no notation of; a move is taken as one of the legal
 * moves written the same (letter case aside). */
export type MoveGame = "pylos" | "kabaleo" | "generic";

/** The move as the server writes it, or a sentence saying why it cannot be played now. */
export function readMove(game: MoveGame, typed: string, legal: string[]): { move: string } | { error: string } {
  const text = typed.trim().replace(/\s+/g, "");
  if (!text) return { error: t("entry.empty") };
  if (game === "pylos") {
    const move = parseMove(text.toLowerCase());
    if (!move) {
      return { error: t("entry.notPylos", { typed: typed.trim() }) };
    }
    if (!legal.length) return { error: t("reason.NOT_YOUR_TURN") };
    const same = legal.map(parseMove).find((m) => m && m.from === move.from && m.to === move.to
      && m.taken.length === move.taken.length && m.taken.every((t) => move.taken.includes(t)));
    if (!same) {
      const square = legal.some((m) => m.startsWith(`${move.to}x`) || m.includes(`-${move.to}x`));
      return { error: t(square ? "entry.illegalSquare" : "entry.illegal", { move: move.text }) };
    }
    return { move: same.text };
  }
  if (game === "generic") {
    if (!legal.length) return { error: t("reason.NOT_YOUR_TURN") };
    const same = legal.find((m) => m === typed.trim()) ?? legal.find((m) => m.replace(/\s+/g, "").toLowerCase() === text.toLowerCase());
    return same ? { move: same } : { error: t("entry.illegal", { move: typed.trim() }) };
  }
  const m = /^([a-z])(\d{1,2})$/i.exec(text);
  if (!m) return { error: t("entry.notKabaleo", { typed: typed.trim() }) };
  const move = `${m[1].toUpperCase()}${Number(m[2])}`;
  if (!legal.length) return { error: t("reason.NOT_YOUR_TURN") };
  if (!legal.includes(move)) return { error: t("entry.illegal", { move }) };
  return { move };
}

/** The field, its Play button and the line that answers a wrong move. */
export class MoveEntry {
  private game: MoveGame = "pylos";
  private legal: string[] = [];
  private onMove: (move: string) => void = () => undefined;
  private readonly input = h("input", {
    id: "move-input", class: "move-input mono", type: "text", autocomplete: "off", spellcheck: "false",
    "aria-describedby": "move-help move-error",
  });
  private readonly error = h("p", { id: "move-error", class: "move-error", role: "alert" });
  private readonly help = h("span", { id: "move-help", class: "hint" });
  readonly element = h("form", { class: "move-entry", "aria-label": t("entry.label") },
    h("label", { for: "move-input" }, `${t("entry.label")} `),
    this.input,
    h("button", { type: "submit", class: "play-typed" }, t("entry.play")),
    this.help,
    this.error);

  constructor() {
    this.element.addEventListener("submit", (event) => {
      event.preventDefault();
      const read = readMove(this.game, this.input.value, this.legal);
      if ("error" in read) {
        this.error.textContent = read.error;
        this.input.setAttribute("aria-invalid", "true");
        return;
      }
      this.input.value = "";
      this.clearError();
      this.onMove(read.move);
    });
    this.input.addEventListener("input", () => this.clearError());
  }

  private clearError(): void {
    this.error.textContent = "";
    this.input.removeAttribute("aria-invalid");
  }

  update(game: MoveGame, legal: string[], onMove: (move: string) => void): void {
    this.game = game;
    this.legal = legal;
    this.onMove = onMove;
    // A game with no notation known here: its own legal moves are the examples (none: no line).
    const examples = game === "pylos" ? "1c4, 1a1-2b2, 2b2x1a1" : game === "kabaleo" ? "B7" : legal.slice(0, 3).join(", ");
    this.help.textContent = examples ? ` ${t("entry.example", { examples })}` : "";
  }
}
