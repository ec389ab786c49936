// Words shown to people: game names, seat colours, seat states, how a game ended.
import { Game, KabaleoDeal, PylosVariant, Termination, type GameConfig, type Outcome } from "./gen/ziggurat/v1/game_pb.js";
import { SeatState, type TimeControl } from "./gen/ziggurat/v1/match_pb.js";

export function gameName(game: Game): string {
  return game === Game.PYLOS ? "Pylos" : game === Game.KABALEO ? "Kabaleo" : "?";
}

/** Pylos seat 1 plays the light balls, seat 2 the dark ones. */
export function pylosSide(seat: number): string {
  return seat === 1 ? "Light" : "Dark";
}

const STATES: Record<number, string> = {
  [SeatState.OPEN]: "open",
  [SeatState.JOINED]: "joined",
  [SeatState.CONNECTED]: "online",
  [SeatState.DISCONNECTED]: "away",
  [SeatState.TIMED_OUT]: "timed out",
  [SeatState.SUBSTITUTED]: "substituted",
  [SeatState.RESIGNED]: "resigned",
  [SeatState.ILLEGAL_MOVES]: "forfeited (illegal moves)",
  [SeatState.ABANDONED]: "left (claimed)",
};

/** Whether someone is there now: words about a connection, not about the game. */
const PRESENCE = new Set([SeatState.JOINED, SeatState.CONNECTED, SeatState.DISCONNECTED]);

/**
 * A seat's state in words. Once the match is over (`finished`) nobody is "online" or "away" in
 * it any more: presence is left out, and only what happened in the game (resigned, timed out)
 * is said.
 */
export function stateName(state: SeatState, finished = false): string {
  if (finished && PRESENCE.has(state)) return "";
  return STATES[state] ?? "";
}

/** True when a seat is taken and its player (or bot) has a stream open now. */
export function isHere(state: SeatState): boolean {
  return state === SeatState.CONNECTED;
}

export function seatLabel(game: Game, seat: number, name: string, state: SeatState, finished = false): string {
  const who = name || "open";
  const side = game === Game.PYLOS ? ` (${pylosSide(seat)})` : "";
  const words = state === SeatState.OPEN ? "" : stateName(state, finished);
  return `${seat}. ${who}${side}${words ? ` – ${words}` : ""}`;
}

const VARIANTS: Record<number, string> = {
  [PylosVariant.UNSPECIFIED]: "standard",
  [PylosVariant.STANDARD]: "standard",
  [PylosVariant.BEGINNER]: "beginner (no recovery)",
  [PylosVariant.ADVANCED]: "advanced (lines too)",
};

/** A match's game options in words: "advanced (lines too)", "3 players, equal deal, last-stack rule". */
export function optionsText(config: GameConfig | undefined): string {
  if (!config) return "";
  if (config.options.case === "pylos" || config.game === Game.PYLOS) {
    const variant = config.options.case === "pylos" ? config.options.value.variant : PylosVariant.UNSPECIFIED;
    return VARIANTS[variant] ?? "standard";
  }
  const k = config.options.case === "kabaleo" ? config.options.value : undefined;
  const deal = k?.deal === KabaleoDeal.EQUAL ? "equal deal" : "random deal";
  return [`${config.seats} players`, deal, k?.lastStack ? "last-stack rule" : ""].filter(Boolean).join(", ");
}

function duration(ms: number): string {
  if (ms % 60000 === 0) return `${ms / 60000} min`;
  return `${Number((ms / 1000).toFixed(1))} s`;
}

/** A match's clock in words: "untimed", "30 s per move", "5 min + 3 s per move". */
export function clockText(tc: TimeControl | undefined): string {
  const parts: string[] = [];
  if (tc?.baseMs) parts.push(tc.incrementMs ? `${duration(tc.baseMs)} + ${duration(tc.incrementMs)} per move` : `${duration(tc.baseMs)} each`);
  // No clock chosen: the server still ends a move after its limit for untimed matches
  // (`ziggurat serve --untimed-move-limit`, an hour by default), so that an abandoned match ends.
  if (tc?.perMoveMs && !tc.baseMs && tc.perMoveMs >= 30 * 60000) return `untimed (${duration(tc.perMoveMs)} per move at most)`;
  if (tc?.perMoveMs) parts.push(`${duration(tc.perMoveMs)} per move${parts.length ? " at most" : ""}`);
  return parts.length ? parts.join(", ") : "untimed";
}

const TERMINATIONS: Record<number, string> = {
  [Termination.NORMAL]: "every piece was placed",
  [Termination.PYRAMID_COMPLETE]: "the top ball was placed",
  [Termination.NO_LEGAL_MOVE]: "the player to move could not move",
  [Termination.REPETITION]: "the same position occurred a third time",
  [Termination.MOVE_LIMIT]: "the move limit was reached",
  [Termination.RESIGNATION]: "resignation",
  [Termination.TIMEOUT]: "time ran out",
  [Termination.ABORTED]: "the match was aborted",
  [Termination.ILLEGAL_MOVE]: "too many illegal moves",
  [Termination.ABANDONED]: "a player left and the game was claimed",
};

/** A short label of how a game ended, for lists (the tournament page): "resignation". */
export function terminationText(termination: Termination): string {
  return TERMINATIONS[termination] ?? "unknown";
}

/**
 * How a game ended, as a sentence: "The game ended when Dark (Bea) resigned." `culprits` are the
 * seats (as shown) that resigned, ran out of time or played too many illegal moves, if known.
 */
export function endingSentence(termination: Termination, culprits: string[]): string {
  const someone = culprits.length ? culprits.join(" and ") : "a player";
  switch (termination) {
    case Termination.NORMAL: return "The game ended when every piece was placed.";
    case Termination.PYRAMID_COMPLETE: return "The game ended when the top ball was placed.";
    case Termination.NO_LEGAL_MOVE: return "The game ended when the player to move could not move.";
    case Termination.REPETITION: return "The game ended in a draw when the same position occurred for the third time.";
    case Termination.MOVE_LIMIT: return "The game ended when the move limit was reached.";
    case Termination.RESIGNATION: return `The game ended when ${someone} resigned.`;
    case Termination.TIMEOUT: return `The game ended when ${someone} ran out of time.`;
    case Termination.ABORTED: return "The match was aborted before the game ended.";
    case Termination.ILLEGAL_MOVE: return `The game ended when ${someone} tried too many illegal moves.`;
    case Termination.ABANDONED: return `The game ended when ${someone} left and the game was claimed.`;
    default: return "The game ended.";
  }
}

/** Every seat shares first place (a Pylos repetition, a Kabaleo table tied all round). */
export function isDraw(outcome: Outcome): boolean {
  return outcome.ranks.length > 1 && outcome.winners.length === outcome.ranks.length;
}

/** The headline of a result: "Light (Ada) wins", "Draw", "Shared win: …", "No winner". */
export function resultHeadline(outcome: Outcome, who: (seat: number) => string): string {
  if (isDraw(outcome)) return "Draw";
  const winners = outcome.winners.map(who);
  if (winners.length === 1) return `${winners[0]} wins`;
  return winners.length ? `Shared win: ${winners.join(", ")}` : "No winner";
}

/** The seats a termination blames, from their states (resigned, timed out), else the loser of two. */
export function culpritSeats(termination: Termination, outcome: Outcome, states: SeatState[]): number[] {
  const state = termination === Termination.RESIGNATION ? SeatState.RESIGNED
    : termination === Termination.TIMEOUT ? SeatState.TIMED_OUT
    : termination === Termination.ABANDONED ? SeatState.ABANDONED : null;
  const named = state === null ? [] : states.flatMap((s, i) => (s === state ? [i + 1] : []));
  if (named.length) return named;
  const blames = [Termination.RESIGNATION, Termination.TIMEOUT, Termination.ILLEGAL_MOVE, Termination.ABANDONED].includes(termination);
  if (blames && outcome.ranks.length === 2 && outcome.winners.length === 1) return [outcome.winners[0] === 1 ? 2 : 1];
  return [];
}

/**
 * Names as shown, told apart: two seats with one name (three "mcts (bot)" in a Kabaleo table)
 * get their seat: "mcts (bot, seat 2)", "Ann (seat 3)". Unique names are left as they are.
 */
export function distinctNames(names: string[]): string[] {
  const count = new Map<string, number>();
  for (const name of names) if (name) count.set(name, (count.get(name) ?? 0) + 1);
  return names.map((name, index) => {
    if (!name || (count.get(name) ?? 0) < 2) return name;
    const bot = / \(bot\)$/.exec(name);
    return bot ? `${name.slice(0, bot.index)} (bot, seat ${index + 1})` : `${name} (seat ${index + 1})`;
  });
}

export const COLOUR_NAMES: Record<string, string> = { R: "red", Y: "yellow", G: "green", B: "blue", O: "orange", P: "pink" };
