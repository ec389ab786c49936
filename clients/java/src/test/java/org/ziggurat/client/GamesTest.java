package org.ziggurat.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.ziggurat.v1.Game;
import org.ziggurat.v1.GameConfig;
import org.ziggurat.v1.GameInfo;
import org.ziggurat.v1.KabaleoDeal;
import org.ziggurat.v1.MatchRecord;
import org.ziggurat.v1.MatchStatus;
import org.ziggurat.v1.PylosVariant;
import org.ziggurat.v1.RecordedMove;
import org.ziggurat.v1.Termination;

/**
 * Any game by its name, through {@code ListGames}, on a real server: the listing, options by
 * name, an unknown name, and phantom tic-tac-toe (a game with no helper here, private moves and a
 * hidden board) played to a verified end by bots that read only the generic view.
 */
class GamesTest {
  @TempDir Path dir;
  private final ExecutorService threads = Executors.newCachedThreadPool();

  @AfterEach
  void stopThreads() {
    threads.shutdownNow();
  }

  @Test
  void anyGameByItsName() throws Exception {
    try (ServerProcess server = new ServerProcess(dir);
        ZigguratClient client = ZigguratClient.connect(server.address)) {
      // ListGames names every game.
      List<GameInfo> games = client.listGames();
      List<String> names = games.stream().map(GameInfo::getName).toList();
      assertEquals(List.of("pylos", "kabaleo", "phantom-ttt"), names.subList(0, Math.min(3, names.size()))); // games added later follow
      for (GameInfo game : games) {
        assertTrue(!game.getTitle().isEmpty() && game.getMinSeats() > 0 && game.getMinSeats() <= game.getMaxSeats(), game.toString());
      }
      assertEquals(Game.GAME_PHANTOM_TIC_TAC_TOE, games.get(2).getGame());
      assertTrue(games.get(2).getPrivateMoves() && games.get(2).getHiddenInformation());

      // Options by name reach the match (a game with a typed message answers in it).
      GameConfig got = client.createMatch(client.gameConfig("pylos", 0, Map.of("variant", "beginner"))).match().getConfig();
      assertEquals(2, got.getSeats());
      assertEquals(PylosVariant.PYLOS_VARIANT_BEGINNER, got.getPylos().getVariant());
      got = client.createMatch(client.gameConfig("kabaleo", 3, Map.of("deal", "equal"))).match().getConfig();
      assertEquals(3, got.getSeats());
      assertEquals(KabaleoDeal.KABALEO_DEAL_EQUAL, got.getKabaleo().getDeal());

      // An option the game refuses creates nothing.
      int before = client.listMatches(MatchStatus.MATCH_STATUS_UNSPECIFIED, Game.GAME_UNSPECIFIED).size();
      GameConfig refusedConfig = client.gameConfig("phantom-ttt", 0, Map.of("size", "4"));
      ZigguratException refused = assertThrows(ZigguratException.class, () -> client.createMatch(refusedConfig));
      assertEquals(Reason.INVALID_CONFIG, refused.reason());
      assertEquals(before, client.listMatches(MatchStatus.MATCH_STATUS_UNSPECIFIED, Game.GAME_UNSPECIFIED).size());

      // An unknown name says the known ones.
      UnknownGameException unknown = assertThrows(UnknownGameException.class, () -> client.gameConfig("chess", 2, Map.of()));
      assertEquals("chess", unknown.game());
      assertEquals(names, unknown.known());
      assertEquals("unknown game \"chess\": this server hosts " + String.join(", ", names), unknown.getMessage());

      // Phantom tic-tac-toe, played to a verified end from the generic view alone.
      GameConfig config = client.gameConfig("phantom-ttt", 0, Map.of());
      assertEquals(Game.GAME_PHANTOM_TIC_TAC_TOE, config.getGame());
      assertEquals(2, config.getSeats());
      CreatedMatch created = client.createMatch(config);
      AtomicInteger positions = new AtomicInteger();
      List<SeatRunner> runners = new ArrayList<>();
      List<Future<?>> futures = new ArrayList<>();
      for (int seed = 0; seed < 2; seed++) {
        Random random = new Random(seed);
        SeatRunner runner =
            new SeatRunner(
                client,
                client.join(created.matchId(), "java"),
                turn -> {
                  if (!turn.position().isEmpty() && turn.game() == Game.GAME_PHANTOM_TIC_TAC_TOE) {
                    positions.incrementAndGet();
                  }
                  return turn.legalMoves().get(random.nextInt(turn.legalMoves().size()));
                });
        runners.add(runner);
        futures.add(threads.submit(runner::run));
      }
      for (Future<?> future : futures) {
        future.get(120, TimeUnit.SECONDS);
      }
      MatchRecord record = client.record(created.matchId());
      assertEquals(Termination.TERMINATION_NORMAL, record.getOutcome().getTermination());
      assertEquals(record.getMovesCount(), positions.get(), "every turn had the generic view");
      assertTrue(record.getMovesList().stream().noneMatch(RecordedMove::getSubstituted));
      for (SeatRunner runner : runners) {
        List<String> seen = runner.history();
        assertEquals(record.getMovesCount(), seen.size());
        int own = 0; // private moves: a seat sees its own, the others' as ""
        for (int i = 0; i < seen.size(); i++) {
          if (!seen.get(i).isEmpty()) {
            assertEquals(record.getMoves(i).getMove(), seen.get(i));
            own++;
          }
        }
        assertTrue(own > 0 && own < seen.size(), "seat " + runner.handle().seat() + " saw " + own + " moves");
      }
      assertTrue(server.verify(created.matchId()).contains("verified"));
    }
  }
}
