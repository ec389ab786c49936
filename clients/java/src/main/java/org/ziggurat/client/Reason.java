package org.ziggurat.client;

/**
 * The machine-readable reason of a refusal: {@code google.rpc.ErrorInfo.reason} (domain
 * {@code ziggurat}) or {@code MoveRejected.reason} on the Play stream; see docs/protocol.md,
 * "Errors". A reason this version does not name is {@link #OTHER}; the exception keeps the
 * server's text.
 */
public enum Reason {
  MALFORMED_MOVE,
  INVALID_CONFIG,
  BAD_NAME,
  BAD_SEAT,
  SEAT_BY_LOT,
  BAD_FILTER,
  ILLEGAL_MOVE,
  NOT_YOUR_TURN,
  GAME_OVER,
  NOT_STARTED,
  STALE_PLY,
  TIME_EXPIRED,
  SEAT_FORFEITED,
  MATCH_FULL,
  SEAT_TAKEN,
  NOT_FINISHED,
  MATCH_NOT_FOUND,
  MISSING_TOKEN,
  BAD_TOKEN,
  RATE_LIMITED,
  TOO_MANY_MATCHES,
  BAD_SEQ,
  SLOW_CONSUMER,
  ALREADY_CONNECTED,
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
