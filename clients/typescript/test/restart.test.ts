// The server is SIGKILLed mid-match and restarted on the same database and port: the
// players and a spectator carry on, and no move is lost or played twice.
import assert from "node:assert/strict";
import { setTimeout as sleep } from "node:timers/promises";
import { test } from "node:test";

import { type Turn, ZigguratClient, kabaleo } from "../src/index.js";
import { TestServer, randomChooser } from "./server.js";

test("survives the server being killed and restarted mid-match", { timeout: 180_000 }, async () => {
  const server = await TestServer.start();
  const client = new ZigguratClient(server.address);
  const fast = { initialMs: 50, maxMs: 500, attempts: 200 };
  try {
    const match = await client.createMatch(kabaleo(3));
    const handles = [];
    for (let i = 0; i < 3; i++) handles.push(await client.join(match.matchId, "ts"));
    let restarted: Promise<void> | undefined;
    const sentAsItDied: string[] = [];
    const players = handles.map((handle, i) => {
      const bot = randomChooser(10 + i);
      // The seat to move at ply 8 kills the server and answers anyway: the move is lost in
      // flight and must be sent again after the restart, and played exactly once.
      const choose = async (turn: Turn) => {
        const move = bot.choose(turn);
        if (turn.ply === 8 && restarted === undefined) {
          sentAsItDied.push(move);
          await server.kill();
          restarted = sleep(700).then(() => server.restart());
        }
        return move;
      };
      return client.play(handle, choose, { backoff: fast });
    });
    const seqs: bigint[] = [];
    for await (const event of client.watch(match.matchId, { backoff: fast })) seqs.push(event.seq);
    const results = await Promise.all(players);
    assert.ok(restarted, "the server was killed");
    await restarted;
    assert.deepEqual(seqs, seqs.map((_, i) => BigInt(i + 1)), "the spectator saw every event once");
    const record = await client.record(match.matchId);
    assert.equal(record.moves[8].move, sentAsItDied[0]);
    for (const result of results) assert.deepEqual(result.history, record.moves.map((m) => m.move));
    assert.ok(record.moves.every((m) => !m.substituted));
    await server.verify(match.matchId);
  } finally {
    client.close();
    await server.kill();
  }
});
