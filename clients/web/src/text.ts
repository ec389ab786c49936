// Words shown to people: game names, seat colours, seat states, how a game ended.
import { Game, GameSchema, KabaleoDeal, PylosVariant, Termination, type GameConfig, type Outcome } from "./gen/ziggurat/v1/game_pb.js";
import { SeatState, type TimeControl } from "./gen/ziggurat/v1/match_pb.js";
import { listAnd, t, type Key } from "./i18n.js";

/**
 * A game's name: Pylos and Kabaleo as their makers wrote them; a game added to the server later
 * by its enum value's name when this client was built knowing it ("GAME_PHANTOM_TIC_TAC_TOE":
 * "Phantom tic tac toe"), else by its number ("game 3").
 */
export function gameName(game: Game): string {
  if (game === Game.PYLOS) return "Pylos";
  if (game === Game.KABALEO) return "Kabaleo";
  const number: number = game; // a value this build may not know of
  if (!number) return "?";
  const known = GameSchema.values.find((v) => v.number === number);
  if (!known) return t("game.numbered", { n: number });
  const words = known.localName.toLowerCase().replace(/_/g, " ");
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** Pylos seat 1 plays the light balls, seat 2 the dark ones. */
export function pylosSide(seat: number): string {
  return seat === 1 ? t("side.light") : t("side.dark");
}

const STATES: Record<number, Key> = {
  [SeatState.OPEN]: "state.open",
  [SeatState.JOINED]: "state.joined",
  [SeatState.CONNECTED]: "state.online",
  [SeatState.DISCONNECTED]: "state.away",
  [SeatState.TIMED_OUT]: "state.timedOut",
  [SeatState.SUBSTITUTED]: "state.substituted",
  [SeatState.RESIGNED]: "state.resigned",
  [SeatState.ILLEGAL_MOVES]: "state.illegal",
  [SeatState.ABANDONED]: "state.abandoned",
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
  const key = STATES[state];
  return key ? t(key) : "";
}

/** True when a seat is taken and its player (or bot) has a stream open now. */
export function isHere(state: SeatState): boolean {
  return state === SeatState.CONNECTED;
}

export function seatLabel(game: Game, seat: number, name: string, state: SeatState, finished = false): string {
  const who = name || t("state.open");
  const side = game === Game.PYLOS ? ` (${pylosSide(seat)})` : "";
  const words = state === SeatState.OPEN ? "" : stateName(state, finished);
  return `${seat}. ${who}${side}${words ? ` – ${words}` : ""}`;
}

const VARIANTS: Record<number, Key> = {
  [PylosVariant.UNSPECIFIED]: "variant.standard",
  [PylosVariant.STANDARD]: "variant.standard",
  [PylosVariant.BEGINNER]: "variant.beginner",
  [PylosVariant.ADVANCED]: "variant.advanced",
};

/** A match's game options in words: "advanced (lines too)", "3 players, equal deal, last-stack rule". */
export function optionsText(config: GameConfig | undefined): string {
  if (!config) return "";
  if (config.options.case === "pylos" || config.game === Game.PYLOS) {
    const variant = config.options.case === "pylos" ? config.options.value.variant : PylosVariant.UNSPECIFIED;
    return t(VARIANTS[variant] ?? "variant.standard");
  }
  // A game with no typed options: its number of seats, then its options by name as the server says them.
  if (config.options.case !== "kabaleo" && config.game !== Game.KABALEO) {
    const named = Object.entries(config.ruleOptions ?? {}).sort(([a], [b]) => a.localeCompare(b)).map(([key, value]) => `${key}: ${value}`);
    return [t("options.players", { count: config.seats }), ...named].join(", ");
  }
  const k = config.options.case === "kabaleo" ? config.options.value : undefined;
  const deal = k?.deal === KabaleoDeal.EQUAL ? t("options.equalDeal") : t("options.randomDeal");
  return [t("options.players", { count: config.seats }), deal, k?.lastStack ? t("options.lastStack") : ""].filter(Boolean).join(", ");
}

export function duration(ms: number): string {
  if (ms % 60000 === 0) return t("duration.min", { n: ms / 60000 });
  return t("duration.s", { n: Number((ms / 1000).toFixed(1)) });
}

/** A match's clock in words: "untimed", "30 s per move", "5 min + 3 s per move". */
export function clockText(tc: TimeControl | undefined): string {
  const parts: string[] = [];
  if (tc?.baseMs) parts.push(tc.incrementMs ? t("clock.fischer", { base: duration(tc.baseMs), increment: duration(tc.incrementMs) }) : t("clock.each", { base: duration(tc.baseMs) }));
  // No clock chosen: the server still ends a move after its limit for untimed matches
  // (`ziggurat serve --untimed-move-limit`, an hour by default), so that an abandoned match ends.
  if (tc?.perMoveMs && !tc.baseMs && tc.perMoveMs >= 30 * 60000) return t("clock.untimedAtMost", { limit: duration(tc.perMoveMs) });
  if (tc?.perMoveMs) parts.push(t(parts.length ? "clock.perMoveAtMost" : "clock.perMove", { limit: duration(tc.perMoveMs) }));
  return parts.length ? parts.join(", ") : t("clock.untimed");
}

const TERMINATIONS: Record<number, Key> = {
  [Termination.NORMAL]: "term.normal",
  [Termination.PYRAMID_COMPLETE]: "term.pyramid",
  [Termination.NO_LEGAL_MOVE]: "term.noMove",
  [Termination.REPETITION]: "term.repetition",
  [Termination.MOVE_LIMIT]: "term.moveLimit",
  [Termination.RESIGNATION]: "term.resignation",
  [Termination.TIMEOUT]: "term.timeout",
  [Termination.ABORTED]: "term.aborted",
  [Termination.ILLEGAL_MOVE]: "term.illegal",
  [Termination.ABANDONED]: "term.abandoned",
};

/** A short label of how a game ended, for lists (the tournament page): "resignation". */
export function terminationText(termination: Termination): string {
  return t(TERMINATIONS[termination] ?? "term.unknown");
}

/**
 * How a game ended, as a sentence: "The game ended when Dark (Bea) resigned." `culprits` are the
 * seats (as shown) that resigned, ran out of time or played too many illegal moves, if known.
 */
export function endingSentence(termination: Termination, culprits: string[], game?: Game): string {
  const who = culprits.length ? listAnd(culprits) : t("end.someone");
  switch (termination) {
    // Kabaleo's normal end is its last piece; another game's (three in a row, a full board)
    // is said without naming how.
    case Termination.NORMAL: return game === undefined || game === Game.KABALEO ? t("end.normal") : t("end.rules");
    case Termination.PYRAMID_COMPLETE: return t("end.pyramid");
    case Termination.NO_LEGAL_MOVE: return t("end.noMove");
    case Termination.REPETITION: return t("end.repetition");
    case Termination.MOVE_LIMIT: return t("end.moveLimit");
    case Termination.RESIGNATION: return t("end.resignation", { who });
    case Termination.TIMEOUT: return t("end.timeout", { who });
    case Termination.ABORTED: return t("end.aborted");
    case Termination.ILLEGAL_MOVE: return t("end.illegal", { who });
    case Termination.ABANDONED: return t("end.abandoned", { who });
    default: return t("end.other");
  }
}

/** Every seat shares first place (a Pylos repetition, a Kabaleo table tied all round). */
export function isDraw(outcome: Outcome): boolean {
  return outcome.ranks.length > 1 && outcome.winners.length === outcome.ranks.length;
}

/** The headline of a result: "Light (Ada) wins", "Draw", "Shared win: …", "No winner". */
export function resultHeadline(outcome: Outcome, who: (seat: number) => string): string {
  if (isDraw(outcome)) return t("result.draw");
  const winners = outcome.winners.map(who);
  if (winners.length === 1) return t("result.wins", { who: winners[0] });
  return winners.length ? t("result.shared", { who: winners.join(", ") }) : t("result.none");
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
    return bot ? t("names.botSeat", { name: name.slice(0, bot.index), seat: index + 1 }) : t("names.seat", { name, seat: index + 1 });
  });
}

const COLOURS: Record<string, Key> = { R: "colour.R", Y: "colour.Y", G: "colour.G", B: "colour.B", O: "colour.O", P: "colour.P" };

/** A Kabaleo colour's name from its letter ("B": "blue"), or the letter when unknown. */
export function colourName(letter: string): string {
  const key = COLOURS[letter];
  return key ? t(key) : letter;
}
