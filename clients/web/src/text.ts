// Words shown to people: game names, seat colours, seat states, how a game ended.
import { Game, Termination } from "./gen/ziggurat/v1/game_pb.js";
import { SeatState } from "./gen/ziggurat/v1/match_pb.js";

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
};

export function stateName(state: SeatState): string {
  return STATES[state] ?? "";
}

export function seatLabel(game: Game, seat: number, name: string, state: SeatState): string {
  const who = name || "open";
  const side = game === Game.PYLOS ? ` (${pylosSide(seat)})` : "";
  return `${seat}. ${who}${side}${state === SeatState.OPEN ? "" : ` – ${stateName(state)}`}`;
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
};

export function terminationText(termination: Termination): string {
  return TERMINATIONS[termination] ?? "unknown";
}

export const COLOUR_NAMES: Record<string, string> = { R: "red", Y: "yellow", G: "green", B: "blue", O: "orange", P: "pink" };
