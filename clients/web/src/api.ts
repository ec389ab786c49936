// The server connection: MatchService (and BotService's ListBots and InviteBot, to invite a
// connected remote bot; TournamentService and ArenaService, read-only) over Connect on the page's own origin, plus the seat
// tokens this browser holds (localStorage, so a reload, a closed tab or a server restart
// never loses a seat: tokens stay valid across restarts).
import { createClient, ConnectError, Code } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { ArenaService } from "./gen/ziggurat/v1/arena_service_pb.js";
import { BotService } from "./gen/ziggurat/v1/bot_service_pb.js";
import { MatchService } from "./gen/ziggurat/v1/match_service_pb.js";
import { TournamentService } from "./gen/ziggurat/v1/tournament_service_pb.js";
import { t, type Key } from "./i18n.js";
import { en } from "./locales/en.js";

const transport = createConnectTransport({ baseUrl: window.location.origin, useBinaryFormat: true });
export const api = createClient(MatchService, transport);
/** Remote bots: only ListBots and InviteBot are served to browsers (ConnectBot is a bot's own stream). */
export const bots = createClient(BotService, transport);
/** The running tournament, read-only: served by `ziggurat tournament run` only (elsewhere: unimplemented). */
export const tournaments = createClient(TournamentService, transport);
/** The standing arena, read-only here: served by `ziggurat arena run` only (elsewhere: unimplemented). */
export const arena = createClient(ArenaService, transport);

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

/** Sentences for a refusal without a reason we know, by its status. */
const CODES: Partial<Record<Code, Key>> = {
  [Code.Canceled]: "code.canceled",
  [Code.InvalidArgument]: "code.invalidArgument",
  [Code.NotFound]: "code.notFound",
  [Code.PermissionDenied]: "code.permissionDenied",
  [Code.Unauthenticated]: "code.permissionDenied",
  [Code.ResourceExhausted]: "code.resourceExhausted",
  [Code.FailedPrecondition]: "code.failedPrecondition",
  [Code.Unimplemented]: "code.unimplemented",
  [Code.DataLoss]: "code.dataLoss",
};

/** Our words for a reason (google.rpc.ErrorInfo.reason) the catalogue knows, else "". */
function reasonText(reason: string): string {
  const key = `reason.${reason}`;
  return key in en ? t(key as Key) : "";
}

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
  const known = reason ? reasonText(reason) : "";
  if (known) return known;
  if (unreachable(error)) return t("error.unreachable");
  if (!(error instanceof ConnectError)) return t("error.page");
  // A refusal of ours with a reason this page does not know yet: its message is written for people.
  if (reason && error.rawMessage) return sentence(error.rawMessage);
  const key = CODES[error.code];
  return key ? t(key) : t("error.other");
}

function sentence(text: string): string {
  const trimmed = text.trim();
  return trimmed.charAt(0).toUpperCase() + trimmed.slice(1) + (/[.!?]$/.test(trimmed) ? "" : ".");
}

export { ConnectError, Code };
