package org.ziggurat.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.ziggurat.v1.Event;
import org.ziggurat.v1.JoinMatchRequest;
import org.ziggurat.v1.MatchEndedEvent;
import org.ziggurat.v1.MatchRecord;
import org.ziggurat.v1.MatchServiceGrpc;
import org.ziggurat.v1.WatchMatchResponse;

/**
 * The client against {@code ziggurat serve --workers 2} (docs/scaling.md): a match owned by
 * worker 1 is joined, played, watched and verified through worker 0 and the public address;
 * the client follows {@code MATCH_ELSEWHERE} and {@code Match.server_address} by itself.
 */
class WorkersTest {
  @TempDir Path dir;
  private final ExecutorService threads = Executors.newCachedThreadPool();
  private Process server;

  @AfterEach
  void stop() throws InterruptedException {
    threads.shutdownNow();
    if (server != null) {
      server.destroyForcibly();
      server.waitFor();
    }
  }

  /** Starts two workers; returns the public address, then worker 0's and worker 1's own. */
  List<String> startWorkers() throws Exception {
    ProcessBuilder builder =
        new ProcessBuilder(
            ServerProcess.ziggurat(), "serve", "--workers", "2", "--host", "127.0.0.1", "--port", "0",
            "--db", dir.resolve("z.db").toString(), "--no-mdns", "--grace", "1");
    builder.environment().put("PYTHONUNBUFFERED", "1");
    builder.redirectError(ProcessBuilder.Redirect.appendTo(dir.resolve("server.log").toFile()));
    server = builder.start();
    CompletableFuture<List<String>> ready =
        CompletableFuture.supplyAsync(
            () -> {
              List<String> addresses = new ArrayList<>();
              try {
                BufferedReader lines =
                    new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
                String line;
                while ((line = lines.readLine()) != null) {
                  if (line.startsWith("ziggurat listening on ")) {
                    addresses.add(line.substring("ziggurat listening on ".length()).trim());
                  }
                  int own = line.indexOf("own ports ");
                  if (own >= 0) {
                    String ports = line.substring(own + "own ports ".length()).replace(")", "").trim();
                    for (String port : ports.split(", ")) {
                      addresses.add("127.0.0.1:" + port);
                    }
                    return addresses;
                  }
                }
              } catch (java.io.IOException ignored) {
                // the process died; reported below
              }
              return null;
            });
    List<String> addresses = null;
    try {
      addresses = ready.get(120, TimeUnit.SECONDS);
    } catch (java.util.concurrent.TimeoutException late) {
      // reported below
    }
    if (addresses == null || addresses.size() != 3) {
      throw new IllegalStateException("the workers did not start:\n" + Files.readString(dir.resolve("server.log")));
    }
    return addresses;
  }

  @Test
  void followsTheWorkerThatOwnsTheMatch() throws Exception {
    List<String> addresses = startWorkers();
    String publicAddress = addresses.get(0);
    String worker0 = addresses.get(1);
    String worker1 = addresses.get(2);
    try (ZigguratClient owner = ZigguratClient.connect(worker1);
        ZigguratClient other = ZigguratClient.connect(worker0);
        ZigguratClient viaPublic = ZigguratClient.connect(publicAddress);
        ZigguratClient watcher = ZigguratClient.connect(worker0)) {
      CreatedMatch created = owner.createMatch(ZigguratClient.pylos());
      String matchId = created.matchId();
      assertEquals(worker1, created.match().getServerAddress());

      // The raw call through worker 0 is refused, naming the owner: what the client follows.
      ZigguratException raw =
          assertThrows(
              ZigguratException.class,
              () -> {
                try {
                  MatchServiceGrpc.newBlockingStub(other.channel())
                      .joinMatch(JoinMatchRequest.newBuilder().setMatchId(matchId).setPlayerName("raw").build());
                } catch (io.grpc.StatusRuntimeException error) {
                  throw ZigguratException.from(error);
                }
              });
      assertEquals(Status.Code.FAILED_PRECONDITION, raw.code());
      assertEquals(Reason.MATCH_ELSEWHERE, raw.reason());
      assertEquals(worker1, "127.0.0.1" + raw.ownerAddress().substring(raw.ownerAddress().lastIndexOf(':')));

      // The client follows it: the join through worker 0 lands on worker 1 and is remembered.
      assertEquals(null, other.route(matchId));
      MatchHandle first = other.join(matchId, "first");
      assertEquals(worker1, other.route(matchId));
      MatchHandle second = viaPublic.join(matchId, "second");

      // The single WatchMatch call through worker 0 is followed to the owner too.
      try (ZigguratClient rawWatcher = ZigguratClient.connect(worker0)) {
        Iterator<WatchMatchResponse> rawWatch = rawWatcher.watch(matchId, null, 0);
        assertTrue(rawWatch.hasNext());
        assertFalse(rawWatch.next().getEventsList().isEmpty());
        assertEquals(worker1, rawWatcher.route(matchId));
      }

      Future<MatchEndedEvent> firstPlays =
          threads.submit(() -> new SeatRunner(other, first, MatchesTest.random(1)).backoff(MatchesTest.quick()).run());
      Future<MatchEndedEvent> secondPlays =
          threads.submit(() -> new SeatRunner(viaPublic, second, MatchesTest.random(2)).backoff(MatchesTest.quick()).run());
      List<Event> watched = new ArrayList<>();
      try (EventStream events = watcher.follow(matchId, null, 0, MatchesTest.quick())) {
        events.forEachRemaining(watched::add);
      }
      assertEquals(worker1, watcher.route(matchId));
      MatchEndedEvent ended = firstPlays.get(120, TimeUnit.SECONDS);
      assertEquals(ended.getOutcome(), secondPlays.get(120, TimeUnit.SECONDS).getOutcome());

      // The seat that joined through the public address plays on its owner's address.
      assertEquals(worker1, viaPublic.route(matchId));
      MatchRecord record = other.record(matchId);
      assertFalse(record.getMovesList().isEmpty());
      assertTrue(watched.get(watched.size() - 1).hasMatchEnded());
      long played = watched.stream().filter(Event::hasMovePlayed).count();
      assertEquals(record.getMovesCount(), played, "the watcher saw every move once");
      assertEquals(worker1, other.getMatch(matchId, first).getServerAddress());
    }
  }
}
