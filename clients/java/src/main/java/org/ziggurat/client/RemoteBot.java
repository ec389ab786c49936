package org.ziggurat.client;

import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.function.Function;
import org.ziggurat.v1.Assignment;
import org.ziggurat.v1.ConnectBotRequest;
import org.ziggurat.v1.ConnectBotResponse;
import org.ziggurat.v1.Game;
import org.ziggurat.v1.MatchEndedEvent;

/**
 * A remote bot ({@code BotService.ConnectBot}): it connects once under a name and plays every
 * seat an organiser hands it (a tournament, or a person inviting it), each on a thread of its
 * own, at most {@code maxMatches} at a time. A dropped connection is re-established with
 * backoff; seats already being played carry on independently.
 */
public final class RemoteBot implements AutoCloseable {
  /** What a finished assignment reports: how its match ended, or why it could not be played. */
  @FunctionalInterface
  public interface Finished {
    void accept(Assignment assignment, MatchEndedEvent ended, ZigguratException error);
  }

  private final ZigguratClient client;
  private final String name;
  private final String token;
  private final List<Game> games = new ArrayList<>();
  private int maxMatches = 1;
  private Finished onFinished = (assignment, ended, error) -> {};
  private final Backoff backoff = new Backoff(java.time.Duration.ofMillis(100), java.time.Duration.ofSeconds(5), Integer.MAX_VALUE);
  private final ExecutorService seats =
      Executors.newCachedThreadPool(
          task -> {
            Thread thread = new Thread(task, "ziggurat-seat");
            thread.setDaemon(true);
            return thread;
          });
  private volatile boolean stopped;
  private volatile Context.CancellableContext context;

  /**
   * A bot connecting as {@code name} with its bot {@code token} (the first connection under a
   * name registers it with that token; later ones must show the same token).
   */
  public RemoteBot(ZigguratClient client, String name, String token) {
    this.client = client;
    this.name = name;
    this.token = token;
  }

  /** The games it accepts (default: all). */
  public RemoteBot games(Game... accepted) {
    games.addAll(List.of(accepted));
    return this;
  }

  /** How many matches it plays at once (default 1). */
  public RemoteBot maxMatches(int maxMatches) {
    this.maxMatches = Math.max(1, maxMatches);
    return this;
  }

  /** Called when an assigned match is over (or could not be played). */
  public RemoteBot onFinished(Finished onFinished) {
    this.onFinished = onFinished;
    return this;
  }

  /**
   * Serves assignments until {@link #close} or a refusal that retrying cannot fix ({@code
   * BAD_TOKEN}, {@code ALREADY_CONNECTED}…), which is thrown. {@code makeBot} makes the bot of
   * each seat (e.g. seeded with {@code assignment.getBotSeed()}).
   */
  public void run(Function<Assignment, Bot> makeBot) throws InterruptedException {
    Semaphore slots = new Semaphore(maxMatches);
    ConnectBotRequest request =
        ConnectBotRequest.newBuilder().setName(name).addAllGames(games).setMaxMatches(maxMatches).build();
    while (!stopped) {
      ZigguratException failure;
      context = Context.current().withCancellation();
      Context previous = context.attach();
      try {
        Iterator<ConnectBotResponse> responses =
            ZigguratClient.withToken(client.botStub(), token).connectBot(request);
        while (responses.hasNext()) {
          ConnectBotResponse response = responses.next();
          backoff.reset();
          if (response.hasAssignment()) {
            slots.acquire();
            start(response.getAssignment(), makeBot, slots);
          }
        }
        failure = new ZigguratException(Status.Code.UNAVAILABLE, null, "the ConnectBot stream ended");
      } catch (StatusRuntimeException error) {
        failure = ZigguratException.from(error);
      } finally {
        context.detach(previous);
        context.cancel(null);
      }
      if (stopped) {
        break;
      }
      if (!failure.isRetryable()) {
        throw failure;
      }
      if (!backoff.sleep()) {
        throw new ZigguratException(Status.Code.UNAVAILABLE, "GAVE_UP", failure.detail());
      }
    }
  }

  private void start(Assignment assignment, Function<Assignment, Bot> makeBot, Semaphore slots) {
    Bot bot = makeBot.apply(assignment);
    MatchHandle handle = new MatchHandle(assignment.getMatchId(), assignment.getSeat(), assignment.getToken());
    seats.execute(
        () -> {
          MatchEndedEvent ended = null;
          ZigguratException error = null;
          try {
            ended = new SeatRunner(client, handle, bot).run();
          } catch (ZigguratException refused) {
            error = refused;
          } catch (InterruptedException interrupted) {
            error = new ZigguratException(Status.Code.CANCELLED, null, "interrupted");
          } finally {
            slots.release();
          }
          onFinished.accept(assignment, ended, error);
        });
  }

  /** Disconnects; seats being played are abandoned (their threads are interrupted). */
  @Override
  public void close() {
    stopped = true;
    Context.CancellableContext current = context;
    if (current != null) {
      current.cancel(null);
    }
    seats.shutdownNow();
  }
}
