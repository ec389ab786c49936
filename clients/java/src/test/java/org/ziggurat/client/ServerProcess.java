package org.ziggurat.client;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** A real {@code ziggurat serve} subprocess on a loopback port with its own database file. */
final class ServerProcess implements AutoCloseable {
  final Path dir;
  final List<String> extra;
  String address;
  private int port;
  private Process process;

  ServerProcess(Path dir, String... extra) throws Exception {
    this.dir = dir;
    this.extra = List.of(extra);
    launch();
  }

  /** The {@code ziggurat} command: {@code $ZIGGURAT}, else the repository's {@code .venv/bin/ziggurat}. */
  static String ziggurat() {
    String configured = System.getenv("ZIGGURAT");
    if (configured != null && !configured.isEmpty()) {
      return configured;
    }
    return Path.of("../../.venv/bin/ziggurat").toAbsolutePath().normalize().toString();
  }

  private void launch() throws Exception {
    List<String> command = new ArrayList<>(List.of(ziggurat(), "serve", "--host", "127.0.0.1"));
    command.addAll(List.of("--port", Integer.toString(port), "--no-mdns", "--db", dir.resolve("z.db").toString()));
    command.addAll(extra);
    ProcessBuilder builder = new ProcessBuilder(command);
    builder.environment().put("PYTHONUNBUFFERED", "1");
    builder.redirectError(ProcessBuilder.Redirect.appendTo(dir.resolve("server.log").toFile()));
    process = builder.start();
    CompletableFuture<String> listening =
        CompletableFuture.supplyAsync(
            () -> {
              try {
                BufferedReader lines =
                    new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
                String line;
                while ((line = lines.readLine()) != null) {
                  if (line.startsWith("ziggurat listening on ")) {
                    return line.substring("ziggurat listening on ".length()).trim();
                  }
                }
              } catch (IOException ignored) {
                // the process died; reported below
              }
              return null;
            });
    String bound = null;
    try {
      bound = listening.get(60, TimeUnit.SECONDS);
    } catch (java.util.concurrent.TimeoutException late) {
      // reported below
    }
    if (bound == null) {
      process.destroyForcibly();
      throw new IllegalStateException("the server did not start:\n" + Files.readString(dir.resolve("server.log")));
    }
    address = bound;
    port = Integer.parseInt(bound.substring(bound.lastIndexOf(':') + 1));
  }

  /** SIGKILL: no shutdown, nothing flushed beyond what SQLite committed. */
  void kill9() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor();
  }

  /** Starts the server again on the same port and database. */
  void restart() throws Exception {
    launch();
  }

  /** Runs {@code ziggurat verify MATCH_ID --server ADDRESS}; fails unless it succeeds. */
  String verify(String matchId) throws Exception {
    Process verify =
        new ProcessBuilder(ziggurat(), "verify", matchId, "--server", address).redirectErrorStream(true).start();
    String output = new String(verify.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (verify.waitFor() != 0) {
      throw new AssertionError("ziggurat verify " + matchId + " failed:\n" + output);
    }
    return output;
  }

  @Override
  public void close() throws InterruptedException {
    kill9();
  }
}
