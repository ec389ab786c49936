// The server connection: MatchService (and BotService's ListBots and InviteBot, to invite a
// connected remote bot) over Connect on the page's own origin, plus the seat
// tokens this browser holds (localStorage, so a reload, a closed tab or a server restart
// never loses a seat: tokens stay valid across restarts).
import { createClient, ConnectError, Code } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { BotService } from "./gen/ziggurat/v1/bot_service_pb.js";
import { MatchService } from "./gen/ziggurat/v1/match_service_pb.js";
import { TournamentService } from "./gen/ziggurat/v1/tournament_service_pb.js";

const transport = createConnectTransport({ baseUrl: window.location.origin, useBinaryFormat: true });
export const api = createClient(MatchService, transport);
/** Remote bots: only ListBots and InviteBot are served to browsers (ConnectBot is a bot's own stream). */
export const bots = createClient(BotService, transport);
/** The running tournament, read-only: served by `ziggurat tournament run` only (elsewhere: unimplemented). */
export const tournaments = createClient(TournamentService, transport);

export interface SeatTicket {
  matchId: string;
  seat: number;
  token: string;
  name: string;
  /**
   * The creator token, when this browser created the match: it can cancel it while it waits
   * and invite connected remote bots into it (InviteBot is the creator's alone).
   */
  creatorToken?: string;
}

const SEATS_KEY = "ziggurat.seats";
const NAME_KEY = "ziggurat.name";

function readSeats(): Record<string, SeatTicket> {
  try {
    return JSON.parse(localStorage.getItem(SEATS_KEY) ?? "{}") as Record<string, SeatTicket>;
  } catch {
    return {};
  }
}

export function ticketFor(matchId: string): SeatTicket | undefined {
  return readSeats()[matchId];
}

export function allTickets(): SeatTicket[] {
  return Object.values(readSeats());
}

export function keepTicket(ticket: SeatTicket): void {
  const seats = readSeats();
  seats[ticket.matchId] = ticket;
  localStorage.setItem(SEATS_KEY, JSON.stringify(seats));
}

export function forgetTicket(matchId: string): void {
  const seats = readSeats();
  delete seats[matchId];
  localStorage.setItem(SEATS_KEY, JSON.stringify(seats));
}

export function playerName(): string {
  return localStorage.getItem(NAME_KEY) ?? "";
}

export function setPlayerName(name: string): void {
  localStorage.setItem(NAME_KEY, name);
}

export function auth(ticket: SeatTicket | undefined): { headers?: Record<string, string> } {
  return ticket ? { headers: { authorization: `Bearer ${ticket.token}` } } : {};
}

/** The call options that show the creator token (CancelMatch, InviteBot). */
export function asCreator(creatorToken: string): { headers: Record<string, string> } {
  return { headers: { authorization: `Bearer ${creatorToken}` } };
}

/** The machine-readable reason of a refusal (google.rpc.ErrorInfo.reason), if any. */
export function reasonOf(error: unknown): string {
  if (!(error instanceof ConnectError)) return "";
  for (const detail of error.details) {
    if ("type" in detail && detail.type === "google.rpc.ErrorInfo") {
      const reader = new BinaryReader(detail.value);
      while (reader.pos < reader.len) {
        const [field, wireType] = reader.tag();
        if (field === 1) return reader.string();
        reader.skip(wireType);
      }
    }
  }
  return "";
}

const REASONS: Record<string, string> = {
  NOT_YOUR_TURN: "It is not your turn.",
  ILLEGAL_MOVE: "That move is not allowed here.",
  MALFORMED_MOVE: "That is not a move.",
  STALE_PLY: "The game moved on before your move arrived.",
  TIME_EXPIRED: "Your time ran out.",
  SEAT_FORFEITED: "Your seat has resigned or forfeited; the server plays it now.",
  NOT_STARTED: "The game has not started: seats are still open.",
  GAME_OVER: "The game is over.",
  MATCH_FULL: "Every seat of this match is taken.",
  SEAT_TAKEN: "That seat is taken.",
  NOT_WAITING: "The match has started: it can no longer be cancelled.",
  MATCH_NOT_FOUND: "There is no such match on this server.",
  MISSING_TOKEN: "This browser holds no seat here.",
  BAD_TOKEN: "This browser's seat token is not valid for this match.",
  BAD_NAME: "That name cannot be used: it is empty, too long, or reads like a built-in bot's.",
  INVALID_CONFIG: "The server does not accept those game settings.",
  UNKNOWN_BOT: "This server has no such bot.",
  CREATION_CLOSED: "The server's operator has closed the creation of matches.",
  RATE_LIMITED: "Too many requests; wait a moment.",
  TOO_MANY_MATCHES: "The server hosts as many matches as it can; try again later.",
  TOO_MANY_MATCHES_CREATED: "You have created as many matches as the server allows; finish or cancel one first.",
  TOO_MANY_STREAMS: "Too many pages follow this match from here; close some tabs.",
  TOO_MANY_CONNECTIONS: "Too many connections from this address; close some tabs.",
  TOO_MANY_BOTS: "The server is already running as many bots as it can.",
  TOO_MANY_INVITATIONS: "That bot already has as many invitations as it may.",
  SERVER_BUSY: "The server is busy; try again in a moment.",
  STORE_UNAVAILABLE: "The server could not save that; nothing changed. Try again in a moment.",
  SERVER_ERROR: "The server ran into a problem of its own; nothing changed. Try again.",
  SERVER_SHUTTING_DOWN: "The server is restarting.",
  WORKER_UNAVAILABLE: "Part of the server is restarting; try again in a moment.",
  MATCH_DAMAGED: "This match's stored data is damaged; the server cannot show it.",
  DATABASE_DAMAGED: "The server's list of matches is damaged.",
  BOT_GAME: "That bot does not play this game.",
  BOT_BUSY: "That bot is already playing as many matches as it takes.",
  BOT_NOT_CONNECTED: "That bot is no longer connected.",
  NOT_ALLOWED_IN_COMPETITION: "A tournament's server does not allow that.",
  TOURNAMENT_NOT_FOUND: "This server runs no tournament with that id.",
  NOT_FINISHED: "The match is still running.",
  NOT_ABANDONED: "Nobody has been away long enough for the game to be claimed yet.",
  CLAIMS_OFF: "This game cannot be claimed: its own time rules settle absence.",
};

/** Sentences for a refusal without a reason we know, by its status. */
const CODES: Partial<Record<Code, string>> = {
  [Code.Canceled]: "The request was cancelled.",
  [Code.InvalidArgument]: "The server did not accept that request.",
  [Code.NotFound]: "The server has no such thing.",
  [Code.PermissionDenied]: "This browser is not allowed to do that.",
  [Code.Unauthenticated]: "This browser is not allowed to do that.",
  [Code.ResourceExhausted]: "The server is busy; try again in a moment.",
  [Code.FailedPrecondition]: "That cannot be done now.",
  [Code.Unimplemented]: "This server does not offer that.",
  [Code.DataLoss]: "The server's stored data is damaged.",
};

/** True when the request never got an answer: no server, no network, or a proxy without one. */
export function unreachable(error: unknown): boolean {
  if (error instanceof TypeError) return true; // fetch's own failure ("Failed to fetch")
  if (!(error instanceof ConnectError) || reasonOf(error)) return false;
  if (error.code === Code.Unavailable || error.code === Code.DeadlineExceeded) return true;
  // connect-web reports a failed fetch as Unknown, with fetch's TypeError as the cause.
  return error.code === Code.Unknown && (error.cause instanceof TypeError || error.cause === undefined);
}

/**
 * A sentence for a person, never a raw error text ("Failed to fetch", "[unknown] …"): our
 * wording for known reasons, then for an unanswered request, then by status.
 */
export function explain(error: unknown): string {
  const reason = reasonOf(error);
  if (reason && REASONS[reason]) return REASONS[reason];
  if (unreachable(error)) return "The server cannot be reached.";
  if (!(error instanceof ConnectError)) return "Something went wrong in this page; reload it.";
  // A refusal of ours with a reason this page does not know yet: its message is written for people.
  if (reason && error.rawMessage) return sentence(error.rawMessage);
  return CODES[error.code] ?? "The server ran into a problem; try again.";
}

function sentence(text: string): string {
  const trimmed = text.trim();
  return trimmed.charAt(0).toUpperCase() + trimmed.slice(1) + (/[.!?]$/.test(trimmed) ? "" : ".");
}

export { ConnectError, Code };
