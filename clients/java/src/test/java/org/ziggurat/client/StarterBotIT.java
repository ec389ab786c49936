package org.ziggurat.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.ziggurat.v1.Assignment;
import org.ziggurat.v1.Game;

/**
 * After {@code package}: the starter bot's fat jar run as a user runs it (which also proves
 * grpc's service files survived the shading), and remote bots — the library's {@link RemoteBot}
 * in this process and the jar launched by the tournament — handed seats by {@code ziggurat
 * tournament run}.
 */
class StarterBotIT {
  @TempDir Path dir;

  static String jar() {
    return System.getProperty("starter.jar", "target/ziggurat-client-0.1.0-random-bot.jar");
  }

  static String java() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  @Test
  void theStarterBotCreatesAndJoinsAMatch() throws Exception {
    try (ServerProcess server = new ServerProcess(dir)) {
      Process creator =
          new ProcessBuilder(
                  java(), "-jar", jar(), "--server", server.address, "--create", "kabaleo", "--seats", "2",
                  "--name", "creator")
              .redirectError(ProcessBuilder.Redirect.INHERIT)
              .start();
      BufferedReader lines =
          new BufferedReader(new InputStreamReader(creator.getInputStream(), StandardCharsets.UTF_8));
      String created = lines.readLine();
      assertTrue(created != null && created.startsWith("created match "), String.valueOf(created));
      String matchId = created.split(" ")[2];

      Process joiner =
          new ProcessBuilder(
                  java(), "-jar", jar(), "--server", server.address, "--match", matchId, "--name", "joiner",
                  "--seed", "7")
              .redirectErrorStream(true)
              .start();
      String joined = new String(joiner.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertEquals(0, joiner.waitFor(), joined);
      assertTrue(joined.contains("match " + matchId + " over: ranks by seat"), joined);
      List<String> rest = new ArrayList<>();
      for (String line = lines.readLine(); line != null; line = lines.readLine()) {
        rest.add(line);
      }
      assertTrue(creator.waitFor(60, TimeUnit.SECONDS));
      assertEquals(0, creator.exitValue());
      assertTrue(rest.stream().anyMatch(l -> l.startsWith("match " + matchId + " over")), rest.toString());
      server.verify(matchId);
    }
  }

  /**
   * {@code --create NAME} takes any game the server lists: phantom tic-tac-toe, which this client
   * has no helper for, to a verified end; an unknown name exits non-zero with one line naming
   * the server's games, and creates nothing.
   */
  @Test
  void theStarterBotCreatesAnyGameByItsName() throws Exception {
    try (ServerProcess server = new ServerProcess(dir);
        ZigguratClient client = ZigguratClient.connect(server.address)) {
      Process creator =
          new ProcessBuilder(java(), "-jar", jar(), "--server", server.address, "--create", "phantom-ttt")
              .redirectError(ProcessBuilder.Redirect.INHERIT)
              .start();
      BufferedReader lines =
          new BufferedReader(new InputStreamReader(creator.getInputStream(), StandardCharsets.UTF_8));
      String created = lines.readLine();
      assertTrue(created != null && created.startsWith("created match "), String.valueOf(created));
      String matchId = created.split(" ")[2];
      Process joiner =
          new ProcessBuilder(java(), "-jar", jar(), "--server", server.address, "--match", matchId)
              .redirectErrorStream(true)
              .start();
      String joined = new String(joiner.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertEquals(0, joiner.waitFor(), joined);
      lines.transferTo(java.io.Writer.nullWriter());
      assertTrue(creator.waitFor(60, TimeUnit.SECONDS));
      assertEquals(0, creator.exitValue());
      server.verify(matchId);
      org.ziggurat.v1.MatchRecord record = client.record(matchId);
      assertEquals(Game.GAME_PHANTOM_TIC_TAC_TOE, record.getConfig().getGame());
      assertFalse(record.getMovesList().stream().anyMatch(org.ziggurat.v1.RecordedMove::getSubstituted));

      Process unknown =
          new ProcessBuilder(java(), "-jar", jar(), "--server", server.address, "--create", "chess").start();
      String err = new String(unknown.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
      assertTrue(unknown.waitFor(60, TimeUnit.SECONDS));
      assertTrue(unknown.exitValue() != 0, err);
      assertTrue(err.startsWith("error: unknown game \"chess\": this server hosts pylos, kabaleo, phantom-ttt"), err);
      assertEquals(1, err.lines().count(), err);
      assertEquals(1, client.listMatches(org.ziggurat.v1.MatchStatus.MATCH_STATUS_UNSPECIFIED, Game.GAME_UNSPECIFIED).size());
    }
  }

  @Test
  void remoteBotsAreHandedSeatsByATournament() throws Exception {
    Path config = dir.resolve("tournament.toml");
    Files.writeString(
        config,
        """
        name = "java-remote-bots"
        seed = "java-remote-bots-1"
        game = "pylos"
        seats = 2
        format = "round_robin"
        concurrency = 2

        [time_control]
        per_move_ms = 20000
        disconnect_grace_ms = 20000

        [[participants]]
        name = "java-library"
        remote = true
        token_sha256 = "40eefbc922358370ad01cbe476dbc3eea39022976a3c3c201329f4571d5b6504" # printf %%s library-secret | sha256sum

        [[participants]]
        name = "java-starter"
        # The tournament's sandbox caps each process's address space (4 GiB): size the JVM.
        command = ["%s", "-Xmx256m", "-XX:+UseSerialGC", "-XX:ReservedCodeCacheSize=64m",
                   "-XX:MaxMetaspaceSize=128m", "-XX:CompressedClassSpaceSize=64m", "-jar", "%s"]
        env = { MALLOC_ARENA_MAX = "2" }
        keep_alive = true

        [[participants]]
        name = "random"
        builtin = "random"
        """
            .formatted(java(), Path.of(jar()).toAbsolutePath()));
    Process tournament =
        new ProcessBuilder(
                ServerProcess.ziggurat(), "tournament", "run", config.toString(), "--db",
                dir.resolve("t.db").toString(), "--quiet")
            .start();
    CompletableFuture<String> address = new CompletableFuture<>();
    Thread reader =
        new Thread(
            () -> {
              try (BufferedReader err =
                  new BufferedReader(new InputStreamReader(tournament.getErrorStream(), StandardCharsets.UTF_8))) {
                for (String line = err.readLine(); line != null; line = err.readLine()) {
                  System.err.println("tournament: " + line);
                  int at = line.indexOf(" — server ");
                  if (at >= 0) {
                    address.complete(line.substring(at + " — server ".length()).trim());
                  }
                }
              } catch (java.io.IOException ignored) {
                // the process ended
              }
            });
    reader.setDaemon(true);
    reader.start();
    CompletableFuture<String> standings =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                return new String(tournament.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
              } catch (java.io.IOException error) {
                return error.toString();
              }
            });

    List<Assignment> played = Collections.synchronizedList(new ArrayList<>());
    List<String> failures = Collections.synchronizedList(new ArrayList<>());
    try (ZigguratClient client = ZigguratClient.connect(address.get(60, TimeUnit.SECONDS));
        RemoteBot bot =
            new RemoteBot(client, "java-library", "library-secret")
                .games(Game.GAME_PYLOS)
                .maxMatches(2)
                .onFinished(
                    (assignment, ended, error) -> {
                      if (error != null || !ended.hasOutcome()) {
                        failures.add(assignment.getMatchId() + ": " + error);
                      }
                      played.add(assignment);
                    })) {
      Thread serving =
          new Thread(
                  () -> {
                    try {
                      bot.run(
                          assignment -> {
                            Random random = new Random(assignment.getBotSeed());
                            return turn -> turn.legalMoves().get(random.nextInt(turn.legalMoves().size()));
                          });
                    } catch (InterruptedException | ZigguratException stopped) {
                      // closed at the end of the test
                    }
                  });
      serving.start();
      assertTrue(tournament.waitFor(300, TimeUnit.SECONDS), "the tournament finishes");
      String table = standings.get(10, TimeUnit.SECONDS);
      assertEquals(0, tournament.exitValue(), table);
      bot.close();
      serving.join(10_000);

      // Round robin of three: each bot plays both colours against both others.
      assertEquals(List.of(), failures);
      assertEquals(4, played.size(), table);
      assertEquals(List.of(1, 1, 2, 2), played.stream().map(Assignment::getSeat).sorted().toList());
      for (String name : List.of("java-library", "java-starter", "random")) {
        // The standings row: rank, bot, games, …
        String row =
            table
                .lines()
                .filter(l -> l.trim().matches("\\d+\\s+" + name + "\\s.*"))
                .findFirst()
                .orElseThrow(() -> new AssertionError(table));
        assertEquals("4", row.trim().split("\\s+")[2], name + " played 4 games:\n" + table);
        assertFalse(row.contains("DISQUALIFIED"), table);
      }
    }
  }
}
