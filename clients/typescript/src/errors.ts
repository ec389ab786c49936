// Typed refusals: every error the client raises for a refused call is a ZigguratError with
// the gRPC code and the machine-readable reason of the google.rpc.ErrorInfo the server put
// in grpc-status-details-bin (domain "ziggurat").
import { Code, ConnectError } from "@connectrpc/connect";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import type { MoveRejected } from "./gen/ziggurat/v1/match_service_pb.js";

export { Code };

export const DOMAIN = "ziggurat";
const ERROR_INFO_TYPE = "google.rpc.ErrorInfo";

/** Reasons a bot commonly meets (docs/protocol.md, "Errors", lists them all). */
export const Reason = {
  IllegalMove: "ILLEGAL_MOVE",
  MalformedMove: "MALFORMED_MOVE",
  NotYourTurn: "NOT_YOUR_TURN",
  StalePly: "STALE_PLY",
  GameOver: "GAME_OVER",
  MatchNotFound: "MATCH_NOT_FOUND",
  MatchFull: "MATCH_FULL",
  BadToken: "BAD_TOKEN",
  MissingToken: "MISSING_TOKEN",
  NotWaiting: "NOT_WAITING",
  BotNotConnected: "BOT_NOT_CONNECTED",
  BotBusy: "BOT_BUSY",
  /** The invited bot already has as many invitations waiting to be played as the server allows. */
  TooManyInvitations: "TOO_MANY_INVITATIONS",
  /** Another worker process owns the match (docs/scaling.md); the client follows it itself. */
  MatchElsewhere: "MATCH_ELSEWHERE",
  /** The client's own: the server stayed unreachable through every retry. */
  GaveUp: "GAVE_UP",
} as const;

/** A game name the server does not list (ZigguratClient.gameConfig); `known` is every name it
 * does, so the message tells a person what to type instead. */
export class UnknownGameError extends Error {
  constructor(
    readonly game: string,
    readonly known: string[],
  ) {
    super(`unknown game ${JSON.stringify(game)}: this server hosts ${known.join(", ")}`);
    this.name = "UnknownGameError";
  }
}

/** A call the server refused (or the network lost): code, reason ("" when none), message,
 * and the ErrorInfo's metadata (e.g. MATCH_ELSEWHERE's "address"). */
export class ZigguratError extends Error {
  constructor(
    readonly code: Code,
    readonly reason: string,
    message: string,
    readonly metadata: Record<string, string> = {},
  ) {
    super(`${Code[code]}${reason ? " " + reason : ""}: ${message}`);
    this.name = "ZigguratError";
    this.rawMessage = message;
  }
  readonly rawMessage: string;

  /** Wraps any error thrown by a call; errors that are not RPC failures are returned as is. */
  static from(error: unknown): unknown {
    if (error instanceof ZigguratError || !(error instanceof ConnectError)) {
      return error;
    }
    let reason = "";
    let metadata: Record<string, string> = {};
    for (const detail of error.details) {
      if ("type" in detail && detail.type === ERROR_INFO_TYPE) {
        const info = decodeErrorInfo(detail.value);
        if (info.domain === DOMAIN) {
          reason = info.reason;
          metadata = info.metadata;
        }
      }
    }
    // connect-node reports a connection the far end closed before HTTP/2 was set up (a port
    // taken by another program that hangs up) as Canceled, which for gRPC means the caller
    // cancelled: it is the server that did not answer, as gRPC's own clients say.
    if (error.code === Code.Canceled && !reason && error.rawMessage.startsWith("http/2 stream closed")) {
      return new ZigguratError(Code.Unavailable, "", `the connection closed before an answer (${error.rawMessage})`);
    }
    return new ZigguratError(error.code, reason, error.rawMessage, metadata);
  }
}

/** google.rpc.ErrorInfo: reason = 1, domain = 2, metadata = 3 (map<string, string>). */
function decodeErrorInfo(bytes: Uint8Array): { reason: string; domain: string; metadata: Record<string, string> } {
  const reader = new BinaryReader(bytes);
  const info = { reason: "", domain: "", metadata: {} as Record<string, string> };
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 1 && wireType === WireType.LengthDelimited) {
      info.reason = reader.string();
    } else if (field === 2 && wireType === WireType.LengthDelimited) {
      info.domain = reader.string();
    } else if (field === 3 && wireType === WireType.LengthDelimited) {
      const entry = new BinaryReader(reader.bytes());
      let key = "";
      let value = "";
      while (entry.pos < entry.len) {
        const [number, type] = entry.tag();
        if (number === 1 && type === WireType.LengthDelimited) key = entry.string();
        else if (number === 2 && type === WireType.LengthDelimited) value = entry.string();
        else entry.skip(type);
      }
      info.metadata[key] = value;
    } else {
      reader.skip(wireType);
    }
  }
  return info;
}

const RETRYABLE = new Set([Code.Unavailable, Code.Canceled, Code.DeadlineExceeded, Code.Internal, Code.Unknown, Code.Aborted]);

/** The server or the network went away (or is restarting): worth reconnecting. */
export function isRetryable(error: unknown): boolean {
  return error instanceof ZigguratError && RETRYABLE.has(error.code);
}

/** A move refused on the Play stream (nothing changed). */
export interface Rejection {
  move: string;
  reason: string;
  message: string;
  /** The ply of the turn it was sent for. */
  ply: number;
}

export function rejectionFrom(message: MoveRejected, ply: number): Rejection {
  return { move: message.move, reason: message.reason, message: message.message, ply };
}

/** play() gave up: the bot kept choosing moves the server refused. */
export class RejectedError extends Error {
  constructor(readonly rejections: Rejection[]) {
    const last = rejections[rejections.length - 1];
    super(`${rejections.length} moves refused in a row; last "${last.move}": ${last.reason} ${last.message}`);
    this.name = "RejectedError";
  }
}
