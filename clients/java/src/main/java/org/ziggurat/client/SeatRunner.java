package org.ziggurat.client;

import io.grpc.Context;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.ziggurat.v1.Event;
import org.ziggurat.v1.GameConfig;
import org.ziggurat.v1.GameView;
import org.ziggurat.v1.Match;
import org.ziggurat.v1.MatchEndedEvent;
import org.ziggurat.v1.MoveRejected;
import org.ziggurat.v1.PlayRequest;
import org.ziggurat.v1.PlayResponse;
import org.ziggurat.v1.TurnStartedEvent;

/**
 * Plays one seat of one match to its end on the bidirectional {@code Play} stream.
 *
 * <ul>
 *   <li>The bot is asked only about the turn that is current: while the stream replays history
 *       after a (re)connection, turns already over are skipped.
 *   <li>When the stream drops (network, server restart) it reconnects with backoff and resumes
 *       after the last event handled ({@code after_seq}). A turn whose move was sent but not yet
 *       acknowledged is replayed, and the move already chosen for that ply is sent again without
 *       asking the bot twice; the ply guard makes a duplicate harmless.
 *   <li>A move refused as {@code ILLEGAL_MOVE} or {@code MALFORMED_MOVE} asks the bot again, with
 *       {@link Turn#rejected()} filled, up to {@link #maxRejections} times per turn; then the
 *       refusal is thrown.
 * </ul>
 */
public final class SeatRunner {
  private static final Object END = new Object();

  private final ZigguratClient client;
  private final MatchHandle handle;
  private final Bot bot;
  private Backoff backoff = Backoff.standard();
  private int maxRejections = 3;
  private Consumer<Event> onEvent;

  private GameConfig config;
  private GameView view;
  private long lastSeq;
  private final List<String> history = new ArrayList<>();
  private final List<MoveRejected> rejections = new ArrayList<>();
  private long decisions;
  private Long pendingTurnSeq;
  private Integer chosenPly;
  private String chosenMove;
  private Turn turn;
  /** When {@code turn}'s time runs out, on this machine's monotonic clock (System.nanoTime). */
  private long deadlineNanos;

  public SeatRunner(ZigguratClient client, MatchHandle handle, Bot bot) {
    this.client = client;
    this.handle = handle;
    this.bot = bot;
  }

  /** Replaces the reconnection policy. */
  public SeatRunner backoff(Backoff backoff) {
    this.backoff = backoff;
    return this;
  }

  /** How many refused moves one turn may have before the runner gives up (default 3). */
  public SeatRunner maxRejections(int maxRejections) {
    this.maxRejections = maxRejections;
    return this;
  }

  /** Called once for every event of the match, in order (replays excluded). */
  public SeatRunner onEvent(Consumer<Event> onEvent) {
    this.onEvent = onEvent;
    return this;
  }

  public MatchHandle handle() {
    return handle;
  }

  /** The newest event handled. */
  public long lastSeq() {
    return lastSeq;
  }

  /** The moves played so far, in order. */
  public List<String> history() {
    return List.copyOf(history);
  }

  /** Every refusal the server sent on the stream. */
  public List<MoveRejected> rejections() {
    return List.copyOf(rejections);
  }

  /** How many times the bot was asked for a move. */
  public long decisions() {
    return decisions;
  }

  /** Plays to the end; throws a refusal that retrying cannot fix (or {@code GAVE_UP}). */
  public MatchEndedEvent run() throws InterruptedException {
    int redirects = 0;
    while (true) {
      ZigguratException failure;
      try {
        MatchEndedEvent ended = session();
        if (ended != null) {
          return ended;
        }
        failure = new ZigguratException(Status.Code.UNAVAILABLE, null, "the Play stream ended early");
      } catch (ZigguratException error) {
        if (error.ownerAddress() != null) {
          // Another worker owns the match (docs/scaling.md): reconnect there, at once a few
          // times in a row, then with backoff (the owner may still be starting).
          client.learnRoute(handle.matchId(), error.ownerAddress());
          if (redirects++ < ZigguratClient.MAX_REDIRECTS) {
            continue;
          }
        } else if (!error.isRetryable()) {
          throw error;
        }
        // The owner's address stopped answering: the next session asks the connected one.
        client.forgetRoute(handle.matchId(), client.route(handle.matchId()), error);
        failure = error;
      }
      redirects = 0;
      if (!backoff.sleep()) {
        throw new ZigguratException(Status.Code.UNAVAILABLE, "GAVE_UP", failure.detail());
      }
    }
  }

  private MatchEndedEvent session() throws InterruptedException {
    // Where the log stands now: events up to `head` are history being replayed, and a turn
    // among them counts only if nothing after it (up to `head`) ended it.
    Match current = client.getMatch(handle.matchId(), handle);
    backoff.reset();
    if (config == null) {
      config = current.getConfig();
    }
    long head = current.getLastSeq();
    // seq is a uint64 on the wire: compare as unsigned.
    long resume = pendingTurnSeq != null ? pendingTurnSeq - 1 : lastSeq;
    boolean caughtUp = Long.compareUnsigned(resume, head) >= 0;

    BlockingQueue<Object> inbox = new LinkedBlockingQueue<>();
    StreamObserver<PlayResponse> observer =
        new StreamObserver<>() {
          @Override
          public void onNext(PlayResponse response) {
            inbox.add(response);
          }

          @Override
          public void onError(Throwable error) {
            inbox.add(error);
          }

          @Override
          public void onCompleted() {
            inbox.add(END);
          }
        };
    Context.CancellableContext context = Context.current().withCancellation();
    StreamObserver<PlayRequest> requests;
    Context previous = context.attach();
    try {
      requests = ZigguratClient.as(client.asyncStub(handle.matchId()), handle).play(observer);
    } finally {
      context.detach(previous);
    }
    try {
      requests.onNext(
          PlayRequest.newBuilder().setMatchId(handle.matchId()).setAfterSeq(resume).build());
      TurnStartedEvent candidate = null; // this seat's newest turn
      long candidateDeadline = 0; // when its time runs out, on System.nanoTime()
      while (true) {
        Object item = inbox.take();
        if (item == END) {
          return null;
        }
        if (item instanceof Throwable error) {
          throw ZigguratException.from(error);
        }
        PlayResponse response = (PlayResponse) item;
        long receivedAt = System.nanoTime();
        backoff.reset();
        if (response.hasMoveRejected()) {
          rejected(response.getMoveRejected(), requests);
        }
        for (Event event : response.getEventsList()) {
          long seq = event.getSeq();
          boolean fresh = Long.compareUnsigned(seq, lastSeq) > 0;
          if (fresh) {
            lastSeq = seq;
          }
          if (fresh && onEvent != null) {
            onEvent.accept(event);
          }
          switch (event.getKindCase()) {
            case MATCH_STARTED -> view = event.getMatchStarted().getView();
            case MOVE_PLAYED -> {
              view = event.getMovePlayed().getView();
              if (fresh) {
                history.add(event.getMovePlayed().getMove());
              }
              candidate = null;
              turn = null;
              if (pendingTurnSeq != null && Long.compareUnsigned(seq, pendingTurnSeq) > 0) {
                pendingTurnSeq = null;
              }
            }
            case TURN_STARTED -> {
              if (event.getTurnStarted().getSeat() == handle.seat()) {
                pendingTurnSeq = seq;
                candidate = event.getTurnStarted();
                long left = leftOnArrival(event, response.getServerTimeMs());
                candidateDeadline = receivedAt + TimeUnit.MILLISECONDS.toNanos(left);
              } else {
                candidate = null;
              }
            }
            case MATCH_ENDED -> {
              return event.getMatchEnded();
            }
            default -> {}
          }
          caughtUp |= Long.compareUnsigned(seq, head) >= 0;
        }
        if (caughtUp && candidate != null) {
          deadlineNanos = candidateDeadline;
          act(candidate, requests);
          candidate = null;
        }
      }
    } finally {
      context.cancel(null);
    }
  }

  private void act(TurnStartedEvent started, StreamObserver<PlayRequest> requests) {
    Turn next =
        new Turn(
            handle.matchId(),
            config,
            handle.seat(),
            started.getPly(),
            List.copyOf(started.getLegalMovesList()),
            timeLeftMs(started.getTimeLeftMs()),
            view != null ? view : GameView.getDefaultInstance(),
            List.copyOf(history),
            new ArrayList<>());
    String move;
    if (chosenPly != null && chosenPly == next.ply()) {
      move = chosenMove;
    } else {
      decisions++;
      move = bot.choose(next);
    }
    turn = next;
    send(next.ply(), move, requests);
  }

  private void send(int ply, String move, StreamObserver<PlayRequest> requests) {
    chosenPly = ply;
    chosenMove = move == null ? "" : move;
    try {
      requests.onNext(PlayRequest.newBuilder().setMove(chosenMove).setPly(ply).build());
    } catch (RuntimeException closed) {
      // The call is gone: the read side sees its end and reconnects.
    }
  }

  private void rejected(MoveRejected rejected, StreamObserver<PlayRequest> requests)
      throws InterruptedException {
    rejections.add(rejected);
    // The server echoes at most 64 characters of the refused move.
    boolean ours =
        turn != null
            && chosenPly != null
            && chosenPly == turn.ply()
            && prefix(chosenMove).equals(rejected.getMove());
    if (!ours) {
      return;
    }
    Reason reason = Reason.parse(rejected.getReason());
    if (reason == Reason.ILLEGAL_MOVE || reason == Reason.MALFORMED_MOVE) {
      turn.rejected().add(rejected);
      if (turn.rejected().size() > maxRejections) {
        throw new ZigguratException(
            Status.Code.FAILED_PRECONDITION, rejected.getReason(), rejected.getMessage());
      }
      decisions++;
      turn =
          new Turn(
              turn.matchId(),
              turn.config(),
              turn.seat(),
              turn.ply(),
              turn.legalMoves(),
              timeLeftMs(turn.timeLeftMs()),
              turn.view(),
              turn.history(),
              turn.rejected());
      send(turn.ply(), bot.choose(turn), requests);
    } else if (reason == Reason.RATE_LIMITED) {
      Thread.sleep(500);
      send(turn.ply(), chosenMove, requests);
    }
    // STALE_PLY, NOT_YOUR_TURN, GAME_OVER, TIME_EXPIRED…: the turn is over; the events that
    // say what happened follow on the stream.
  }

  /**
   * What was left of a turn's time when the message carrying it was sent: time_left_ms less what
   * had run since the event on the server's clock ({@code server_time_ms - time_ms}; a turn read
   * from a resumed stream's backlog started long before, a live one just now). A server that sends
   * no server_time_ms (0) leaves time_left_ms as it is. Between 0 and 2^40 ms (35 years), so
   * that it fits System.nanoTime arithmetic.
   */
  private static long leftOnArrival(Event event, long serverTimeMs) {
    long left = event.getTurnStarted().getTimeLeftMs();
    if (left < 0 || left > 1L << 40) {
      left = 1L << 40; // a uint64 past 2^40: as good as untimed
    }
    if (serverTimeMs != 0) {
      left -= Math.max(0, serverTimeMs - event.getTimeMs());
    }
    return Math.max(0, left);
  }

  /**
   * The milliseconds the bot is given when asked now: what is left until {@link #deadlineNanos}
   * (this machine's monotonic clock, never compared with the server's), at least 1; 0 stays 0
   * (untimed).
   */
  private long timeLeftMs(long timed) {
    if (timed == 0) {
      return 0;
    }
    return Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadlineNanos - System.nanoTime()));
  }

  private static String prefix(String move) {
    return move.codePointCount(0, move.length()) <= 64
        ? move
        : move.substring(0, move.offsetByCodePoints(0, 64));
  }
}
