// A server of two worker processes (`ziggurat serve --workers 2`, docs/scaling.md): a match
// owned by worker 1 is joined, played, watched and verified through worker 0 and the public
// address; the client follows MATCH_ELSEWHERE and Match.serverAddress by itself.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, openSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";

import { Reason, ZigguratClient, ZigguratError, pylos } from "../src/index.js";
import { ZIGGURAT, randomChooser } from "./server.js";

let child: ChildProcess;
let publicAddress = "";
let own: string[] = [];

before(async () => {
  const dir = mkdtempSync(join(tmpdir(), "ziggurat-ts-workers-"));
  const log = openSync(join(dir, "server.log"), "a");
  child = spawn(
    ZIGGURAT,
    ["serve", "--workers", "2", "--host", "127.0.0.1", "--port", "0", "--db", join(dir, "z.db"), "--no-mdns"],
    { stdio: ["ignore", "pipe", log] },
  );
  const lines = createInterface({ input: child.stdout! });
  await new Promise<void>((ok, fail) => {
    const timer = setTimeout(() => fail(new Error(`workers did not start; see ${dir}/server.log`)), 120_000);
    lines.on("line", (line) => {
      if (line.startsWith("ziggurat listening on ")) publicAddress = line.slice("ziggurat listening on ".length).trim();
      const ports = line.split("own ports ")[1];
      if (ports !== undefined) {
        own = ports.replace(")", "").split(", ").map((port) => `127.0.0.1:${port}`);
        clearTimeout(timer);
        ok();
      }
    });
  });
});
after(() => {
  child.kill("SIGKILL");
});

test("the client follows the worker that owns the match", async () => {
  const owner = new ZigguratClient(own[1]);
  const other = new ZigguratClient(own[0]);
  const viaPublic = new ZigguratClient(publicAddress);
  try {
    const match = await owner.createMatch(pylos());
    assert.equal(match.serverAddress, own[1]);
    // The raw call through worker 0 is refused, naming the owner: what the client follows.
    await assert.rejects(other.matches.joinMatch({ matchId: match.matchId, playerName: "raw" }), (error: unknown) => {
      const refusal = ZigguratError.from(error) as ZigguratError;
      assert.equal(refusal.reason, Reason.MatchElsewhere);
      assert.equal(refusal.metadata.address, own[1]);
      return true;
    });
    const first = await other.join(match.matchId, "first");
    assert.equal(other.routes.get(match.matchId), own[1]);
    const second = await viaPublic.join(match.matchId, "second");
    const watched: bigint[] = [];
    const watching = (async () => {
      for await (const event of new ZigguratClient(own[0]).watch(match.matchId)) watched.push(event.seq);
    })();
    const results = await Promise.all([
      other.play(first, randomChooser(1).choose),
      viaPublic.play(second, randomChooser(2).choose),
    ]);
    assert.equal(results.length, 2);
    await watching;
    const record = await other.record(match.matchId);
    assert.ok(record.moves.length > 0);
    assert.ok(watched.length >= record.moves.length, `${watched.length} events for ${record.moves.length} moves`);
  } finally {
    owner.close();
    other.close();
    viaPublic.close();
  }
});
