package org.ziggurat.client;

import java.time.Duration;
import java.util.List;
import org.ziggurat.v1.Game;
import org.ziggurat.v1.GameConfig;
import org.ziggurat.v1.GameView;
import org.ziggurat.v1.MoveRejected;

/**
 * One decision: everything the seat to move may know when it must move.
 *
 * @param matchId the match
 * @param config the game, its number of seats and its options
 * @param seat this seat (1-based)
 * @param ply moves played so far; the move being chosen is ply {@code ply} (0-based)
 * @param legalMoves every legal move in canonical notation, sorted; answer with one of them
 * @param timeLeftMs what is left of this turn's time when the bot is asked, in milliseconds; 0 =
 *     untimed. A turn read from a resumed stream's backlog (the bot connected or reconnected
 *     mid-turn) has been running for {@code PlayResponse.server_time_ms - Event.time_ms}
 *     already, both on the server's clock; the time since that message arrived is counted on
 *     this machine's monotonic clock, never compared with the server's. At least 1 when timed.
 * @param view the seat's own view (position text with hidden parts as {@code ?})
 * @param history the moves played so far, in order
 * @param rejected moves the server already refused on this turn (empty unless the bot erred)
 */
public record Turn(
    String matchId,
    GameConfig config,
    int seat,
    int ply,
    List<String> legalMoves,
    long timeLeftMs,
    GameView view,
    List<String> history,
    List<MoveRejected> rejected) {

  /** The game being played. */
  public Game game() {
    return config.getGame();
  }

  /** The position text as this seat sees it. */
  public String position() {
    return view.getPosition();
  }

  /** The time left for this move, or {@code null} when untimed. */
  public Duration timeLeft() {
    return timeLeftMs > 0 ? Duration.ofMillis(timeLeftMs) : null;
  }
}
