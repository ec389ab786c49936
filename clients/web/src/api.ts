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
  GAME_OVER: "The game is over.",
  MATCH_FULL: "Every seat of this match is taken.",
  SEAT_TAKEN: "That seat is taken.",
  MATCH_NOT_FOUND: "There is no such match on this server.",
  BAD_TOKEN: "This browser's seat token is not valid for this match.",
  RATE_LIMITED: "Too many requests; wait a moment.",
  TOO_MANY_BOTS: "The server is already running as many bots as it can.",
  BOT_GAME: "That bot does not play this game.",
  BOT_BUSY: "That bot is already playing as many matches as it takes.",
  BOT_NOT_CONNECTED: "That bot is no longer connected.",
  TOURNAMENT_NOT_FOUND: "This server runs no tournament with that id.",
  NOT_FINISHED: "The match is still running.",
};

/** A sentence for a person: our wording for known reasons, else the server's message. */
export function explain(error: unknown): string {
  const reason = reasonOf(error);
  if (reason && REASONS[reason]) return REASONS[reason];
  if (error instanceof ConnectError) {
    if (error.code === Code.Unavailable) return "The server cannot be reached; retrying…";
    return error.rawMessage || error.message;
  }
  return String(error);
}

export { ConnectError, Code };
