package org.ziggurat.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.ziggurat.v1.Event;
import org.ziggurat.v1.MatchEndedEvent;
import org.ziggurat.v1.MatchRecord;

/**
 * A match whose learnt owner address stopped answering (its worker came back on another port,
 * or the server restarted) is still served: the client forgets the route and asks the address
 * it connected to, for unary calls at once, for {@code Play} and {@code follow} on their next
 * reconnection. Here that address is a single server that serves the match itself.
 */
class RoutesTest {
  @TempDir Path dir;
  private final ExecutorService threads = Executors.newCachedThreadPool();

  @AfterEach
  void stopThreads() {
    threads.shutdownNow();
  }

  /** A loopback address nothing listens on (connections to it are refused). */
  static String deadAddress() throws Exception {
    try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return "127.0.0.1:" + socket.getLocalPort();
    }
  }

  static Backoff quick() {
    return new Backoff(Duration.ofMillis(50), Duration.ofMillis(500), 5);
  }

  @Test
  void aDeadRouteFallsBackToTheConnectedAddress() throws Exception {
    try (ServerProcess server = new ServerProcess(dir);
        ZigguratClient one = ZigguratClient.connect(server.address);
        ZigguratClient two = ZigguratClient.connect(server.address);
        ZigguratClient watcher = ZigguratClient.connect(server.address)) {
      String matchId = one.createMatch(ZigguratClient.pylos()).matchId();
      one.learnRoute(matchId, deadAddress());
      MatchHandle first = one.join(matchId, "first");
      assertNull(one.route(matchId), "the dead route is forgotten");
      MatchHandle second = two.join(matchId, "second");
      for (ZigguratClient client : List.of(one, two, watcher)) { // every stream starts on a dead address
        client.learnRoute(matchId, deadAddress());
      }
      List<Future<MatchEndedEvent>> plays = new ArrayList<>();
      plays.add(threads.submit(new SeatRunner(one, first, random(1)).backoff(quick())::run));
      plays.add(threads.submit(new SeatRunner(two, second, random(2)).backoff(quick())::run));
      List<Event> seen = new ArrayList<>();
      try (EventStream events = watcher.follow(matchId, null, 0, quick())) {
        events.forEachRemaining(seen::add);
      }
      for (Future<MatchEndedEvent> play : plays) {
        play.get(120, TimeUnit.SECONDS);
      }
      for (int i = 0; i < seen.size(); i++) {
        assertEquals(i + 1, seen.get(i).getSeq(), "every event once, in order");
      }
      assertTrue(seen.get(seen.size() - 1).hasMatchEnded());
      watcher.learnRoute(matchId, deadAddress());
      MatchRecord record = watcher.record(matchId);
      assertEquals(seen.stream().filter(Event::hasMovePlayed).count(), record.getMovesCount());
    }
  }

  @Test
  void aRefusalFromTheOwnerKeepsItsRoute() throws Exception {
    try (ServerProcess server = new ServerProcess(dir);
        ZigguratClient client = ZigguratClient.connect(server.address)) {
      String matchId = client.createMatch(ZigguratClient.pylos()).matchId();
      // The owner is the server itself under another name: it answers, and refuses.
      String alias = "localhost:" + server.address.substring(server.address.lastIndexOf(':') + 1);
      client.learnRoute(matchId, alias);
      ZigguratException refused =
          assertThrows(
              ZigguratException.class,
              () -> client.submitMove(new MatchHandle(matchId, 1, "forged"), "x", null));
      assertEquals(Reason.BAD_TOKEN, refused.reason());
      assertEquals(alias, client.route(matchId));
    }
  }

  static Bot random(long seed) {
    Random random = new Random(seed);
    return turn -> turn.legalMoves().get(random.nextInt(turn.legalMoves().size()));
  }
}
