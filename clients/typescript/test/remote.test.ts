// A tournament (`ziggurat tournament run`) hands the TypeScript remote bot its seats.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { test } from "node:test";

import { Reason, type Result, ZigguratClient, ZigguratError, pylos, v1 } from "../src/index.js";
import { TestServer, ZIGGURAT, randomChooser } from "./server.js";

const CONFIG = `
name = "ts-remote"
seed = "ts-remote-seed"
game = "pylos"
concurrency = 2

[options]
max_moves = 60

[time_control]
per_move_ms = 10000

[[participants]]
name = "ts-bot"
remote = true
token_sha256 = "c52c92a53ebfe02517a51468f3f990a2685f54fdfe9ef14fbc8902f77b4d9899" # printf %s ts-secret | sha256sum

[[participants]]
name = "house"
builtin = "random"
`;

async function freeAddress(): Promise<string> {
  return new Promise((ok) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const port = (probe.address() as { port: number }).port;
      probe.close(() => ok(`127.0.0.1:${port}`));
    });
  });
}

test("plays the seats a tournament hands it as a remote bot", { timeout: 180_000 }, async () => {
  const scratch = new TestServer(); // only for its temporary directory
  const config = join(scratch.dir, "t.toml");
  const db = join(scratch.dir, "t.db");
  writeFileSync(config, CONFIG);
  const address = await freeAddress();
  const tournament = spawn(ZIGGURAT, ["tournament", "run", config, "--db", db, "--listen", address, "--quiet"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  tournament.stdout.on("data", (d) => (output += d));
  tournament.stderr.on("data", (d) => (output += d));
  const finished = new Promise<number | null>((ok) => tournament.once("exit", ok));
  const client = new ZigguratClient(address);
  const stop = new AbortController();
  const registered: string[] = [];
  const assignments: v1.Assignment[] = [];
  const results: Result[] = [];
  const errors: unknown[] = [];
  const bot = client.runRemoteBot({
    name: "ts-bot",
    token: "ts-secret",
    games: [v1.Game.PYLOS],
    maxMatches: 2,
    backoff: { initialMs: 100, maxMs: 1000, attempts: 300 },
    chooser: (a) => randomChooser(Number(a.botSeed % 1000n)).choose,
    onRegistered: (name) => registered.push(name),
    onAssignment: (a) => assignments.push(a),
    onMatchEnded: (_, result, error) => (result ? results.push(result) : errors.push(error)),
    signal: stop.signal,
  });
  try {
    assert.equal(await finished, 0, output);
    stop.abort();
    await bot;
  } finally {
    stop.abort();
    tournament.kill("SIGKILL");
    client.close();
  }
  assert.deepEqual(errors, []);
  assert.equal(registered[0], "ts-bot");
  assert.equal(assignments.length, 2, output);
  assert.equal(results.length, 2);
  assert.deepEqual(new Set(assignments.map((a) => a.seat)), new Set([1, 2]), "colours swapped");
  const verifier = await TestServer.on(db);
  try {
    for (const a of assignments) await verifier.verify(a.matchId);
  } finally {
    await verifier.kill();
  }
});

test("a person invites the connected bot into a match and plays it", { timeout: 180_000 }, async () => {
  const server = await TestServer.start();
  const client = new ZigguratClient(server.address);
  const stop = new AbortController();
  try {
    let registered!: () => void;
    const isRegistered = new Promise<void>((ok) => (registered = ok));
    let ended!: (result: Result | undefined) => void;
    const botResult = new Promise<Result | undefined>((ok) => (ended = ok));
    const bot = client.runRemoteBot({
      name: "ts-invitee",
      token: "secret",
      chooser: () => randomChooser(5).choose,
      onRegistered: () => registered(),
      onMatchEnded: (_, result) => ended(result),
      signal: stop.signal,
    });
    await isRegistered;
    const match = await client.createMatch(pylos());
    const other = await client.createMatch(pylos());
    for (const [token, reason] of [
      ["", Reason.MissingToken], // only the match's creator invites
      [other.creatorToken, Reason.BadToken], // another match's creator token
    ] as const) {
      await assert.rejects(client.inviteBot(match.matchId, token, "ts-invitee"), (error: unknown) => {
        assert.ok(error instanceof ZigguratError && error.reason === reason, String(error));
        return true;
      });
    }
    await assert.rejects(client.inviteBot(match.matchId, match.creatorToken, "nobody"), (error: unknown) => {
      assert.ok(error instanceof ZigguratError && error.reason === Reason.BotNotConnected, String(error));
      return true;
    });
    const botSeat = await client.inviteBot(match.matchId, match.creatorToken, "ts-invitee");
    const me = await client.join(match.matchId, "person");
    assert.notEqual(me.seat, botSeat);
    const mine = await client.play(me, randomChooser(6).choose);
    const theirs = await botResult;
    assert.equal(theirs?.seat, botSeat);
    assert.deepEqual(theirs?.history, mine.history);
    stop.abort();
    await bot;
    await server.verify(match.matchId);
  } finally {
    stop.abort();
    client.close();
    await server.kill();
  }
});
