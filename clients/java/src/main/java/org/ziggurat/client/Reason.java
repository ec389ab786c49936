package org.ziggurat.client;

/**
 * The machine-readable reason of a refusal: {@code google.rpc.ErrorInfo.reason} (domain
 * {@code ziggurat}) or {@code MoveRejected.reason} on the Play stream: the list of
 * {@code server/ziggurat/wire/reasons.py}, explained in docs/protocol.md, "Errors". A reason this version does not name is {@link #OTHER}; the exception keeps the
 * server's text.
 */
public enum Reason {
  MALFORMED_REQUEST,
  MALFORMED_MOVE,
  INVALID_CONFIG,
  INVALID_POSITION,
  BAD_NAME,
  BAD_SEAT,
  SEAT_BY_LOT,
  BAD_FILTER,
  BAD_PAGE_TOKEN,
  ILLEGAL_MOVE,
  NOT_YOUR_TURN,
  STALE_PLY,
  TIME_EXPIRED,
  SEAT_FORFEITED,
  NOT_STARTED,
  GAME_OVER,
  MATCH_FULL,
  SEAT_TAKEN,
  NOT_WAITING,
  CREATION_CLOSED,
  NOT_FINISHED,
  BOT_NOT_CONNECTED,
  BOT_GAME,
  BOT_BUSY,
  MATCH_NOT_FOUND,
  MISSING_TOKEN,
  ADMIN_DISABLED,
  BAD_TOKEN,
  RATE_LIMITED,
  TOO_MANY_MATCHES,
  TOO_MANY_STREAMS,
  TOO_MANY_CONNECTIONS,
  /** The invited bot already has as many invitations waiting to be played as the server allows. */
  TOO_MANY_INVITATIONS,
  BAD_SEQ,
  STORE_UNAVAILABLE,
  SERVER_ERROR,
  FIRST_MESSAGE_TIMEOUT,
  SERVER_SHUTTING_DOWN,
  MATCH_DAMAGED,
  DATABASE_DAMAGED,
  /** Refused by a worker that does not own the match; the client follows it by itself. */
  MATCH_ELSEWHERE,
  WORKER_UNAVAILABLE,
  /** Not sent by the server: the client gave up reconnecting. */
  GAVE_UP,
  /** A reason this client version does not name. */
  OTHER;

  /** The reason for the server's spelling ({@code null} for none, {@link #OTHER} if unknown). */
  public static Reason parse(String text) {
    if (text == null || text.isEmpty()) {
      return null;
    }
    try {
      Reason reason = Reason.valueOf(text);
      return reason == OTHER ? OTHER : reason;
    } catch (IllegalArgumentException unknown) {
      return OTHER;
    }
  }
}
