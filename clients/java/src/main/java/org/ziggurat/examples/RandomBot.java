package org.ziggurat.examples;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.ziggurat.client.Bot;
import org.ziggurat.client.CreatedMatch;
import org.ziggurat.client.MatchHandle;
import org.ziggurat.client.RemoteBot;
import org.ziggurat.client.Turn;
import org.ziggurat.client.ZigguratClient;
import org.ziggurat.client.ZigguratException;
import org.ziggurat.v1.GameConfig;
import org.ziggurat.v1.MatchEndedEvent;

/**
 * The starter bot: plays uniformly random legal moves.
 *
 * <pre>
 * java -jar ziggurat-random-bot.jar --server 127.0.0.1:50051 --create kabaleo --seats 4
 * java -jar ziggurat-random-bot.jar --server 127.0.0.1:50051 --create phantom-ttt
 * java -jar ziggurat-random-bot.jar --server 127.0.0.1:50051 --match MATCH_ID
 * java -jar ziggurat-random-bot.jar --server 127.0.0.1:50051 --remote --name NAME --token SECRET
 * </pre>
 *
 * Copy it and change {@link #choose}: everything else is the client's job.
 */
public final class RandomBot {
  private static final String USAGE =
      "usage: java -jar ziggurat-random-bot.jar [--server HOST:PORT] (--create GAME [--seats N]"
          + " | --match ID | --remote --name NAME --token SECRET) [--name NAME] [--seed N] [--tls] [--ca PEM]";

  private RandomBot() {}

  /** The whole bot: pick one of the legal moves. */
  static String choose(Random random, Turn turn) {
    List<String> moves = turn.legalMoves();
    return moves.get(random.nextInt(moves.size()));
  }

  public static void main(String[] argv) throws Exception {
    Map<String, String> env = System.getenv();
    // A tournament launching this program passes its seat (or its bot identity) in the environment.
    String server = env.getOrDefault("ZIGGURAT_SERVER", "127.0.0.1:50051");
    String create = null;
    int seats = 0;
    String matchId = env.get("ZIGGURAT_MATCH");
    boolean remote = env.containsKey("ZIGGURAT_BOT_NAME");
    String name = env.getOrDefault("ZIGGURAT_BOT_NAME", "random-java");
    String token = env.getOrDefault("ZIGGURAT_TOKEN", env.get("ZIGGURAT_BOT_TOKEN"));
    int seat = Integer.parseInt(env.getOrDefault("ZIGGURAT_SEAT", "0"));
    Long seed = env.containsKey("ZIGGURAT_BOT_SEED") ? Long.parseUnsignedLong(env.get("ZIGGURAT_BOT_SEED")) : null;
    boolean tls = false;
    String ca = null;
    try {
      for (int i = 0; i < argv.length; i++) {
        String flag = argv[i];
        switch (flag) {
          case "--server" -> server = value(argv, ++i, flag);
          case "--create" -> create = value(argv, ++i, flag);
          case "--seats" -> seats = Integer.parseInt(value(argv, ++i, flag));
          case "--match" -> matchId = value(argv, ++i, flag);
          case "--remote" -> remote = true;
          case "--name" -> name = value(argv, ++i, flag);
          case "--token" -> token = value(argv, ++i, flag);
          case "--seed" -> seed = Long.parseUnsignedLong(value(argv, ++i, flag));
          case "--tls" -> tls = true;
          case "--ca" -> ca = value(argv, ++i, flag);
          default -> throw new IllegalArgumentException("unknown argument " + flag);
        }
      }
    } catch (IllegalArgumentException bad) {
      System.err.println(bad.getMessage() + "\n" + USAGE);
      System.exit(2);
    }
    long baseSeed = seed != null ? seed : new Random().nextLong();
    byte[] caPem = ca != null ? Files.readAllBytes(Path.of(ca)) : null;
    try (ZigguratClient client =
        tls || caPem != null ? ZigguratClient.connectTls(server, caPem) : ZigguratClient.connect(server)) {
      if (remote) {
        if (token == null) {
          throw new IllegalArgumentException("--remote needs --token (or ZIGGURAT_BOT_TOKEN)");
        }
        System.out.println("connecting as remote bot \"" + name + "\"");
        new RemoteBot(client, name, token)
            .maxMatches(4)
            .run(
                assignment -> {
                  System.out.println(
                      "playing seat " + assignment.getSeat() + " of match " + assignment.getMatchId());
                  Random random = new Random(baseSeed ^ assignment.getBotSeed());
                  return turn -> choose(random, turn);
                });
        return;
      }
      MatchHandle handle;
      if (create != null) {
        // Any game the server hosts, by its name (--seats 0: the game's fewest): resolved through
        // ListGames, so this bot plays games added after it was written. An unknown name throws
        // UnknownGameException, whose message names the server's games.
        GameConfig config = client.gameConfig(create, seats, Map.of());
        CreatedMatch created = client.createMatch(config);
        System.out.println(
            "created match " + created.matchId() + " (commitment " + created.match().getSeedCommitment() + ")");
        handle = client.join(created.matchId(), name);
      } else if (matchId != null && token != null && seat > 0) {
        handle = new MatchHandle(matchId, seat, token);
      } else if (matchId != null) {
        handle = client.join(matchId, name);
      } else {
        throw new IllegalArgumentException(USAGE);
      }
      System.out.println("playing seat " + handle.seat() + " of match " + handle.matchId() + " with " + name);
      Random random = new Random(baseSeed);
      Bot bot = turn -> choose(random, turn);
      MatchEndedEvent ended = client.play(handle, bot);
      List<Integer> ranks = ended.getOutcome().getRanksList();
      System.out.println(
          "match " + handle.matchId() + " over: ranks by seat " + ranks + "; this seat ranked "
              + ranks.get(handle.seat() - 1));
    } catch (ZigguratException | IllegalArgumentException error) {
      System.err.println("error: " + error.getMessage());
      System.exit(1);
    }
  }

  private static String value(String[] argv, int i, String flag) {
    if (i >= argv.length) {
      throw new IllegalArgumentException(flag + " needs a value");
    }
    return argv[i];
  }
}
