package org.ziggurat.client;

import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.NoSuchElementException;
import org.ziggurat.v1.Event;
import org.ziggurat.v1.MatchServiceGrpc;
import org.ziggurat.v1.WatchMatchRequest;
import org.ziggurat.v1.WatchMatchResponse;

/**
 * A match's events, each exactly once and in order, until the match ends, across dropped
 * connections and server restarts: on a broken stream it reconnects with backoff and resumes
 * after the last event it returned ({@code after_seq}). A refusal (e.g. {@code
 * MATCH_NOT_FOUND}) or running out of attempts is thrown from {@link #hasNext}.
 */
public final class EventStream implements Iterator<Event>, AutoCloseable {
  private final ZigguratClient client;
  private final String matchId;
  private final MatchHandle handle;
  private final Backoff backoff;
  private final ArrayDeque<Event> buffer = new ArrayDeque<>();
  private long last;
  private int redirects;
  private boolean ended;
  private Context.CancellableContext context;
  private Iterator<WatchMatchResponse> responses;
  private String route; // where the current stream went (null: the connected address)

  EventStream(ZigguratClient client, String matchId, MatchHandle handle, long afterSeq, Backoff backoff) {
    this.client = client;
    this.matchId = matchId;
    this.handle = handle;
    this.backoff = backoff;
    this.last = afterSeq;
  }

  /** The seq of the newest event returned. */
  public long lastSeq() {
    return last;
  }

  @Override
  public boolean hasNext() {
    while (buffer.isEmpty()) {
      if (ended) {
        return false;
      }
      ZigguratException failure;
      try {
        if (responses == null) {
          open();
        }
        if (responses.hasNext()) {
          receive(responses.next());
          continue;
        }
        failure = new ZigguratException(Status.Code.UNAVAILABLE, null, "the stream ended early");
      } catch (StatusRuntimeException error) {
        failure = ZigguratException.from(error);
      }
      cancel();
      if (failure.ownerAddress() != null) {
        // Another worker owns the match (docs/scaling.md): reconnect there, at once a few times
        // in a row, then with backoff (the owner may still be starting).
        client.learnRoute(matchId, failure.ownerAddress());
        if (redirects++ < ZigguratClient.MAX_REDIRECTS) {
          continue;
        }
        redirects = 0;
      } else if (!failure.isRetryable()) {
        ended = true;
        throw failure;
      }
      // The owner's address stopped answering: the next attempt asks the connected one.
      client.forgetRoute(matchId, route, failure);
      try {
        if (!backoff.sleep()) {
          ended = true;
          throw new ZigguratException(Status.Code.UNAVAILABLE, "GAVE_UP", failure.detail());
        }
      } catch (InterruptedException interrupted) {
        Thread.currentThread().interrupt();
        ended = true;
        throw new ZigguratException(Status.Code.CANCELLED, null, "interrupted");
      }
    }
    return true;
  }

  @Override
  public Event next() {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    return buffer.removeFirst();
  }

  private void open() {
    route = client.route(matchId);
    context = Context.current().withCancellation();
    Context previous = context.attach();
    try {
      WatchMatchRequest request =
          WatchMatchRequest.newBuilder().setMatchId(matchId).setAfterSeq(last).build();
      responses = ZigguratClient.as(MatchServiceGrpc.newBlockingStub(client.channelFor(matchId)), handle).watchMatch(request);
    } finally {
      context.detach(previous);
    }
  }

  private void receive(WatchMatchResponse response) {
    backoff.reset();
    redirects = 0;
    for (Event event : response.getEventsList()) {
      if (Long.compareUnsigned(event.getSeq(), last) <= 0) { // seq is a uint64
        continue;
      }
      last = event.getSeq();
      buffer.addLast(event);
      if (event.hasMatchEnded()) {
        ended = true;
        cancel();
        return;
      }
    }
  }

  private void cancel() {
    if (context != null) {
      context.cancel(null);
    }
    context = null;
    responses = null;
  }

  /** Stops following. */
  @Override
  public void close() {
    ended = true;
    cancel();
  }
}
