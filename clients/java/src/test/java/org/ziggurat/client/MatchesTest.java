package org.ziggurat.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.grpc.Status;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.ziggurat.v1.Event;
import org.ziggurat.v1.Game;
import org.ziggurat.v1.GameView;
import org.ziggurat.v1.KabaleoView;
import org.ziggurat.v1.Match;
import org.ziggurat.v1.MatchEndedEvent;
import org.ziggurat.v1.MatchRecord;
import org.ziggurat.v1.MatchStatus;
import org.ziggurat.v1.RecordedMove;
import org.ziggurat.v1.SeatAssignment;
import org.ziggurat.v1.Termination;
import org.ziggurat.v1.TimeControl;

/**
 * The client against a real {@code ziggurat serve}: full matches, refusals, catching up, a
 * spectator, TLS, and the server killed with SIGKILL and restarted mid-match.
 */
class MatchesTest {
  @TempDir Path dir;
  private final ExecutorService threads = Executors.newCachedThreadPool();

  @AfterEach
  void stopThreads() {
    threads.shutdownNow();
  }

  static Bot random(long seed) {
    Random random = new Random(seed);
    return turn -> turn.legalMoves().get(random.nextInt(turn.legalMoves().size()));
  }

  static Backoff quick() {
    return new Backoff(Duration.ofMillis(50), Duration.ofMillis(500), 400);
  }

  record Played(SeatRunner runner, MatchEndedEvent ended) {}

  List<Played> playAll(List<SeatRunner> runners) throws Exception {
    List<Future<MatchEndedEvent>> futures = new ArrayList<>();
    for (SeatRunner runner : runners) {
      futures.add(threads.submit(runner::run));
    }
    List<Played> results = new ArrayList<>();
    for (int i = 0; i < runners.size(); i++) {
      results.add(new Played(runners.get(i), futures.get(i).get(120, TimeUnit.SECONDS)));
    }
    return results;
  }

  List<Played> playAll(ZigguratClient client, List<MatchHandle> handles, IntFunction<Bot> makeBot) throws Exception {
    List<SeatRunner> runners = new ArrayList<>();
    for (MatchHandle handle : handles) {
      runners.add(new SeatRunner(client, handle, makeBot.apply(handle.seat())).backoff(quick()));
    }
    return playAll(runners);
  }

  static List<MatchHandle> joinAll(ZigguratClient client, String matchId, int seats) {
    List<MatchHandle> handles = new ArrayList<>();
    for (int i = 0; i < seats; i++) {
      handles.add(client.join(matchId, "java-" + i));
    }
    return handles;
  }

  static List<String> moves(MatchRecord record) {
    return record.getMovesList().stream().map(RecordedMove::getMove).toList();
  }

  /** Every runner saw the recorded moves exactly once, in order, and decided only its own turns. */
  static void assertConsistent(MatchRecord record, List<Played> results) {
    assertFalse(record.getMovesList().isEmpty());
    for (Played played : results) {
      int seat = played.runner().handle().seat();
      assertEquals(moves(record), played.runner().history(), "seat " + seat + " saw every move once, in order");
      assertEquals(record.getOutcome(), played.ended().getOutcome());
      long own = record.getMovesList().stream().filter(m -> m.getSeat() == seat && !m.getSubstituted()).count();
      assertEquals(own, played.runner().decisions(), "seat " + seat + " was asked once per own turn");
      assertEquals(List.of(), played.runner().rejections());
    }
    assertTrue(record.getMovesList().stream().noneMatch(RecordedMove::getSubstituted));
  }

  @Test
  void playsAFullPylosMatch() throws Exception {
    try (ServerProcess server = new ServerProcess(dir);
        ZigguratClient client = ZigguratClient.connect(server.address)) {
      CreatedMatch created = client.createMatch(ZigguratClient.pylos());
      assertEquals(MatchStatus.MATCH_STATUS_WAITING, created.match().getStatus());
      assertEquals(64, created.match().getSeedCommitment().length());
      List<MatchHandle> handles = joinAll(client, created.matchId(), 2);
      assertEquals(List.of(1, 2), handles.stream().map(MatchHandle::seat).sorted().toList());

      List<Played> results = playAll(client, handles, seat -> random(seat));
      MatchRecord record = client.record(created.matchId());
      assertConsistent(record, results);
      List<Integer> ranks = new ArrayList<>(record.getOutcome().getRanksList());
      Collections.sort(ranks);
      assertTrue(ranks.equals(List.of(1, 2)) || ranks.equals(List.of(1, 1)), ranks.toString());
      Match finished = client.getMatch(created.matchId(), null);
      assertEquals(MatchStatus.MATCH_STATUS_FINISHED, finished.getStatus());
      assertEquals(record.getRevealedSeed(), finished.getRevealedSeed());
      assertTrue(server.verify(created.matchId()).contains("verified"));
    }
  }

  @Test
  void playsAFullKabaleoMatchWithASpectator() throws Exception {
    try (ServerProcess server = new ServerProcess(dir);
        ZigguratClient client = ZigguratClient.connect(server.address)) {
      CreatedMatch created = client.createMatch(ZigguratClient.kabaleo(4));
      Future<List<Event>> watching =
          threads.submit(
              () -> {
                List<Event> events = new ArrayList<>();
                try (EventStream stream = client.follow(created.matchId(), null, 0, Backoff.standard())) {
                  stream.forEachRemaining(events::add);
                }
                return events;
              });
      List<MatchHandle> handles = joinAll(client, created.matchId(), 4);
      List<Played> results = playAll(client, handles, seat -> random(100 + seat));
      MatchRecord record = client.record(created.matchId());
      assertConsistent(record, results);
      assertEquals(4, record.getOutcome().getRanksCount());

      List<Event> events = watching.get(60, TimeUnit.SECONDS);
      for (int i = 0; i < events.size(); i++) {
        assertEquals(i + 1, events.get(i).getSeq(), "every event once, in order");
      }
      assertTrue(events.get(events.size() - 1).hasMatchEnded());
      int hidden = 0;
      for (Event event : events) {
        if (event.hasMovePlayed()) {
          GameView view = event.getMovePlayed().getView();
          assertEquals(0, view.getViewerSeat());
          // The match releases its secrets only in match_ended: even the view after the last
          // move shows a spectator no objective and no outcome.
          assertFalse(view.hasOutcome(), "a move's view carries no outcome");
          KabaleoView table = view.getKabaleo();
          assertTrue(table.getObjectivesList().stream().allMatch("?"::equals), "a spectator sees no objective");
          hidden++;
        }
      }
      assertEquals(record.getMovesCount(), hidden);
      KabaleoView last = events.get(events.size() - 1).getMatchEnded().getView().getKabaleo();
      assertTrue(last.getObjectivesList().stream().noneMatch("?"::equals), "the end reveals every objective");
      server.verify(created.matchId());
    }
  }

  @Test
  void refusalsCarryTheirReasonAndChangeNothing() throws Exception {
    try (ServerProcess server = new ServerProcess(dir);
        ZigguratClient client = ZigguratClient.connect(server.address)) {
      ZigguratException missing = assertThrows(ZigguratException.class, () -> client.join("no-such-match", "x"));
      assertEquals(Status.Code.NOT_FOUND, missing.code());
      assertEquals(Reason.MATCH_NOT_FOUND, missing.reason());

      ZigguratException badConfig =
          assertThrows(
              ZigguratException.class, () -> client.createMatch(ZigguratClient.gameConfig(Game.GAME_PYLOS, 3)));
      assertEquals(Status.Code.INVALID_ARGUMENT, badConfig.code());
      assertEquals(Reason.INVALID_CONFIG, badConfig.reason());

      CreatedMatch created = client.createMatch(ZigguratClient.pylos());
      List<MatchHandle> handles = joinAll(client, created.matchId(), 2);
      ZigguratException full = assertThrows(ZigguratException.class, () -> client.join(created.matchId(), "late"));
      assertEquals(Reason.MATCH_FULL, full.reason());

      Match before = client.getMatch(created.matchId(), null);
      int toMove = before.getView().getToMove();
      MatchHandle mover = handles.stream().filter(h -> h.seat() == toMove).findFirst().orElseThrow();
      MatchHandle other = handles.stream().filter(h -> h.seat() != toMove).findFirst().orElseThrow();

      record Case(MatchHandle handle, String move, Integer ply, Status.Code code, Reason reason) {}
      List<Case> cases =
          List.of(
              new Case(mover, "zz", null, Status.Code.INVALID_ARGUMENT, Reason.MALFORMED_MOVE),
              new Case(mover, "2a1", null, Status.Code.FAILED_PRECONDITION, Reason.ILLEGAL_MOVE),
              new Case(mover, "1a1", 7, Status.Code.FAILED_PRECONDITION, Reason.STALE_PLY),
              new Case(other, "1a1", null, Status.Code.FAILED_PRECONDITION, Reason.NOT_YOUR_TURN),
              new Case(
                  new MatchHandle(mover.matchId(), mover.seat(), "forged"),
                  "1a1",
                  null,
                  Status.Code.PERMISSION_DENIED,
                  Reason.BAD_TOKEN));
      for (Case c : cases) {
        ZigguratException error =
            assertThrows(ZigguratException.class, () -> client.submitMove(c.handle(), c.move(), c.ply()));
        assertEquals(c.code(), error.code(), c.move() + ": " + error.getMessage());
        assertEquals(c.reason(), error.reason(), c.move() + ": " + error.getMessage());
        assertEquals(c.reason().name(), error.reasonText());
      }
      Match after = client.getMatch(created.matchId(), null);
      assertEquals(before.getLastSeq(), after.getLastSeq(), "refusals change nothing");
      assertEquals(0, after.getView().getPly());

      // On the Play stream a refusal is a MoveRejected; the bot is asked again and sees why.
      List<String> seen = Collections.synchronizedList(new ArrayList<>());
      List<Played> results =
          playAll(
              client,
              handles,
              seat -> {
                Random random = new Random(seat);
                boolean[] first = {seat == mover.seat()};
                return turn -> {
                  turn.rejected().forEach(r -> seen.add(r.getReason()));
                  if (first[0]) {
                    first[0] = false;
                    return "2a1";
                  }
                  return turn.legalMoves().get(random.nextInt(turn.legalMoves().size()));
                };
              });
      SeatRunner runner =
          results.stream().map(Played::runner).filter(r -> r.handle().seat() == mover.seat()).findFirst().orElseThrow();
      assertEquals(1, runner.rejections().size());
      assertEquals("ILLEGAL_MOVE", runner.rejections().get(0).getReason());
      assertEquals("2a1", runner.rejections().get(0).getMove());
      assertEquals(List.of("ILLEGAL_MOVE"), seen);
      server.verify(created.matchId());
    }
  }

  @Test
  void aLateRunnerAnswersOnlyTheCurrentTurn() throws Exception {
    try (ServerProcess server = new ServerProcess(dir);
        ZigguratClient client = ZigguratClient.connect(server.address)) {
      CreatedMatch created = client.createMatch(ZigguratClient.pylos());
      List<MatchHandle> handles = joinAll(client, created.matchId(), 2);
      // Six plies by hand first: the log then holds three past turns of each seat.
      for (int i = 0; i < 6; i++) {
        GameView board = client.getMatch(created.matchId(), null).getView();
        MatchHandle handle = handles.stream().filter(h -> h.seat() == board.getToMove()).findFirst().orElseThrow();
        List<String> legal = client.getMatch(created.matchId(), handle).getView().getLegalMovesList();
        client.submitMove(handle, legal.get(0), board.getPly());
      }
      List<Played> results = playAll(client, handles, seat -> random(seat));
      MatchRecord record = client.record(created.matchId());
      for (Played played : results) {
        SeatRunner runner = played.runner();
        assertEquals(record.getMovesCount(), runner.history().size(), "replayed history is complete");
        long ownLater =
            record.getMovesList().subList(6, record.getMovesCount()).stream()
                .filter(m -> m.getSeat() == runner.handle().seat())
                .count();
        assertEquals(ownLater, runner.decisions(), "asked only about turns after it connected");
        assertEquals(List.of(), runner.rejections(), "never answered a past turn");
      }
    }
  }

  @Test
  void survivesTheServerKilledAndRestartedMidMatch() throws Exception {
    try (ServerProcess server = new ServerProcess(dir);
        ZigguratClient client = ZigguratClient.connect(server.address)) {
      CreatedMatch created = client.createMatch(ZigguratClient.kabaleo(3));
      Future<List<Event>> watching =
          threads.submit(
              () -> {
                List<Event> events = new ArrayList<>();
                try (EventStream stream = client.follow(created.matchId(), null, 0, quick())) {
                  stream.forEachRemaining(events::add);
                }
                return events;
              });
      List<MatchHandle> handles = joinAll(client, created.matchId(), 3);
      AtomicInteger played = new AtomicInteger();
      List<SeatRunner> runners = new ArrayList<>();
      for (MatchHandle handle : handles) {
        Bot inner = random(200 + handle.seat());
        Bot slow =
            turn -> {
              try {
                Thread.sleep(40);
              } catch (InterruptedException interrupted) {
                Thread.currentThread().interrupt();
              }
              return inner.choose(turn);
            };
        runners.add(
            new SeatRunner(client, handle, slow)
                .backoff(quick())
                .onEvent(
                    event -> {
                      if (event.hasMovePlayed()) {
                        played.incrementAndGet();
                      }
                    }));
      }
      List<Future<MatchEndedEvent>> futures = new ArrayList<>();
      for (SeatRunner runner : runners) {
        futures.add(threads.submit(runner::run));
      }
      while (played.get() < 8) {
        Thread.sleep(10);
      }
      server.kill9();
      Thread.sleep(500);
      server.restart();
      for (Future<MatchEndedEvent> future : futures) {
        assertNotNull(future.get(120, TimeUnit.SECONDS).getOutcome());
      }
      MatchRecord record = client.record(created.matchId());
      for (SeatRunner runner : runners) {
        assertEquals(moves(record), runner.history(), "no move lost or repeated");
        // A move sent just before the kill may be refused as stale after the restart; never an illegal one.
        assertTrue(
            runner.rejections().stream()
                .allMatch(r -> r.getReason().equals("STALE_PLY") || r.getReason().equals("NOT_YOUR_TURN")),
            runner.rejections().toString());
      }
      assertTrue(record.getMovesList().stream().noneMatch(RecordedMove::getSubstituted));
      List<Event> events = watching.get(60, TimeUnit.SECONDS);
      for (int i = 0; i < events.size(); i++) {
        assertEquals(i + 1, events.get(i).getSeq(), "the spectator saw every event once");
      }
      assertTrue(events.get(events.size() - 1).hasMatchEnded());
      server.verify(created.matchId());
    }
  }

  @Test
  void playsOverTls() throws Exception {
    // A private CA and a server certificate it signs, made as an operator makes them for a LAN.
    Process init =
        new ProcessBuilder(ServerProcess.ziggurat(), "tls", "init", "--dir", dir.toString(), "--host", "ziggurat.lan")
            .redirectErrorStream(true)
            .start();
    String made = new String(init.getInputStream().readAllBytes());
    assertEquals(0, init.waitFor(), made);
    Path serverDir = Files.createDirectory(dir.resolve("server"));
    try (ServerProcess server =
            new ServerProcess(
                serverDir, "--tls-cert", dir.resolve("server.pem").toString(), "--tls-key", dir.resolve("server.key").toString());
        ZigguratClient client = ZigguratClient.connectTls(server.address, Files.readAllBytes(dir.resolve("ca.pem")));
        ZigguratClient plaintext = ZigguratClient.connect(server.address)) {
      CreatedMatch created = client.createMatch(ZigguratClient.pylos());
      List<Played> results = playAll(client, joinAll(client, created.matchId(), 2), seat -> random(seat));
      assertTrue(results.get(0).ended().hasOutcome());
      ZigguratException refused =
          assertThrows(ZigguratException.class, () -> plaintext.listMatches(MatchStatus.MATCH_STATUS_UNSPECIFIED, Game.GAME_UNSPECIFIED));
      assertEquals(Status.Code.UNAVAILABLE, refused.code());
    }
  }

  @Test
  void theCreatorCancelsAWaitingMatch() throws Exception {
    try (ServerProcess server = new ServerProcess(dir);
        ZigguratClient client = ZigguratClient.connect(server.address)) {
      CreatedMatch created = client.createMatch(ZigguratClient.kabaleo(3));
      assertFalse(created.creatorToken().isEmpty());
      client.join(created.matchId(), "early");

      ZigguratException forged =
          assertThrows(ZigguratException.class, () -> client.cancelMatch(created.matchId(), "not-the-creator"));
      assertEquals(Status.Code.PERMISSION_DENIED, forged.code());
      assertEquals(Reason.BAD_TOKEN, forged.reason());
      Match cancelled = client.cancelMatch(created.matchId(), created.creatorToken());
      assertEquals(MatchStatus.MATCH_STATUS_FINISHED, cancelled.getStatus());
      assertFalse(cancelled.getRevealedSeed().isEmpty());
      assertEquals(Termination.TERMINATION_ABORTED, client.record(created.matchId()).getOutcome().getTermination());
      ZigguratException late = assertThrows(ZigguratException.class, () -> client.join(created.matchId(), "late"));
      assertEquals(Status.Code.FAILED_PRECONDITION, late.code());

      CreatedMatch started = client.createMatch(ZigguratClient.pylos());
      joinAll(client, started.matchId(), 2);
      ZigguratException refused =
          assertThrows(ZigguratException.class, () -> client.cancelMatch(started.matchId(), started.creatorToken()));
      assertEquals(Status.Code.FAILED_PRECONDITION, refused.code());
      assertEquals(Reason.NOT_WAITING, refused.reason());
    }
  }

  @Test
  void aRemoteBotIsInvitedIntoAMatch() throws Exception {
    try (ServerProcess server = new ServerProcess(dir);
        ZigguratClient client = ZigguratClient.connect(server.address);
        RemoteBot bot = new RemoteBot(client, "java-invited", "invited-secret").games(Game.GAME_KABALEO)) {
      java.util.concurrent.CompletableFuture<Object[]> finished = new java.util.concurrent.CompletableFuture<>();
      bot.onFinished((assignment, ended, error) -> finished.complete(new Object[] {assignment, ended, error}));
      threads.submit(
          () -> {
            bot.run(assignment -> random(assignment.getBotSeed()));
            return null;
          });
      while (client.listBots().stream().noneMatch(b -> b.getName().equals("java-invited"))) {
        Thread.sleep(50);
      }
      CreatedMatch pylos = client.createMatch(ZigguratClient.pylos());
      CreatedMatch created = client.createMatch(ZigguratClient.kabaleo(2));
      ZigguratException missing =
          assertThrows(ZigguratException.class, () -> client.inviteBot(pylos.matchId(), null, "java-invited", 0));
      assertEquals(Reason.MISSING_TOKEN, missing.reason());
      ZigguratException wrong =
          assertThrows(
              ZigguratException.class,
              () -> client.inviteBot(pylos.matchId(), created.creatorToken(), "java-invited", 0));
      assertEquals(Reason.BAD_TOKEN, wrong.reason());
      ZigguratException refused =
          assertThrows(
              ZigguratException.class,
              () -> client.inviteBot(pylos.matchId(), pylos.creatorToken(), "java-invited", 0));
      assertEquals(Reason.BOT_GAME, refused.reason());
      ZigguratException nobody =
          assertThrows(
              ZigguratException.class, () -> client.inviteBot(pylos.matchId(), pylos.creatorToken(), "nobody", 0));
      assertEquals(Reason.BOT_NOT_CONNECTED, nobody.reason());

      int seat = client.inviteBot(created.matchId(), created.creatorToken(), "java-invited", 0).getSeat();
      MatchHandle me = client.join(created.matchId(), "me");
      assertTrue(me.seat() != seat);
      MatchEndedEvent ended = client.play(me, random(1));
      Object[] result = finished.get(30, TimeUnit.SECONDS);
      org.ziggurat.v1.Assignment assignment = (org.ziggurat.v1.Assignment) result[0];
      assertEquals(created.matchId(), assignment.getMatchId());
      assertEquals(seat, assignment.getSeat());
      assertEquals(null, result[2]);
      assertEquals(ended.getOutcome(), ((MatchEndedEvent) result[1]).getOutcome());
      MatchRecord record = client.record(created.matchId());
      assertTrue(record.getMovesList().stream().anyMatch(m -> m.getSeat() == seat && !m.getSubstituted()));
      server.verify(created.matchId());
    }
  }

  /** Every reason this client names is in the server's registry (later ones arrive as OTHER). */
  @Test
  void reasonsAreTheServers() throws Exception {
    List<String> listed =
        Files.readAllLines(Path.of("../../server/ziggurat/wire/reasons.py")).stream()
            .filter(line -> line.matches("    [A-Z_]+ = \\(.*"))
            .map(line -> line.strip().split(" ")[0])
            .toList();
    assertTrue(listed.size() > 20, listed.toString());
    for (Reason reason : Reason.values()) {
      assertEquals(reason, Reason.parse(reason.name()));
      if (reason != Reason.GAVE_UP && reason != Reason.OTHER) {
        assertTrue(listed.contains(reason.name()), reason + " is not in the server's registry");
      }
    }
    assertEquals(Reason.OTHER, Reason.parse("SOMETHING_NEW"));
  }

  /**
   * A bot that connects (or reconnects) mid-turn reads its TurnStarted from the backlog: it is
   * given what is left of the turn (measured on the server's clock), not the whole turn.
   */
  @Test
  void aTurnReadFromTheBacklogHasOnlyTheTimeLeft() throws Exception {
    try (ServerProcess server = new ServerProcess(dir);
        ZigguratClient client = ZigguratClient.connect(server.address)) {
      TimeControl timed = TimeControl.newBuilder().setPerMoveMs(30_000).build();
      CreatedMatch created =
          client.createMatch(ZigguratClient.pylos(), timed, SeatAssignment.SEAT_ASSIGNMENT_CHOSEN, null);
      MatchHandle first = client.join(created.matchId(), "first", 1);
      long before = System.nanoTime();
      client.join(created.matchId(), "second", 2); // seat 1's turn starts
      Thread.sleep(2_000);
      long[] asked = new long[2];
      class Asked extends RuntimeException {}
      assertThrows(
          Asked.class,
          () ->
              new SeatRunner(
                      client,
                      first,
                      turn -> {
                        asked[0] = turn.timeLeftMs();
                        asked[1] = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - before);
                        throw new Asked();
                      })
                  .run());
      long given = asked[0];
      long ran = asked[1];
      // At most 28 s is left after the 2 s sleep; at least what the turn had not yet run.
      assertTrue(
          given >= 26_000 && given <= 28_100 && given >= 30_000 - ran - 100,
          "the bot was given " + given + " ms of a 30 s turn that had run about " + ran + " ms");
    }
  }
}
