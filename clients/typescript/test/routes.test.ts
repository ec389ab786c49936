// A match whose learnt owner address stopped answering (its worker came back on another port,
// or the server restarted) is still served: the client forgets the route and asks its own
// address, for unary calls at once, for play() and watch() on their next reconnection. Here
// that address is a single server that serves the match itself.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { after, before, test } from "node:test";

import { Reason, ZigguratClient, type ZigguratError, pylos, type v1 } from "../src/index.js";
import { TestServer, randomChooser } from "./server.js";

/** A loopback address nothing listens on (connections to it are refused). */
async function deadAddress(): Promise<string> {
  const listener = createServer();
  await new Promise<void>((ok) => listener.listen(0, "127.0.0.1", ok));
  const { port } = listener.address() as { port: number };
  await new Promise<void>((ok) => listener.close(() => ok()));
  return `127.0.0.1:${port}`;
}

/** A loopback address where another program accepts each connection and hangs up at once (a
 * worker's old port, taken by something else): node's HTTP/2 says "stream closed with CANCEL". */
async function hangingUpAddress(): Promise<{ address: string; close: () => Promise<void> }> {
  const listener = createServer((socket) => socket.destroy());
  await new Promise<void>((ok) => listener.listen(0, "127.0.0.1", ok));
  const { port } = listener.address() as { port: number };
  return { address: `127.0.0.1:${port}`, close: () => new Promise<void>((ok) => listener.close(() => ok())) };
}

let server: TestServer;
before(async () => {
  server = await TestServer.start();
});
after(async () => {
  await server.kill();
});

const quick = { initialMs: 50, maxMs: 500, attempts: 5 };

test("a dead route falls back to the client's own address", { timeout: 120_000 }, async () => {
  const seats = [new ZigguratClient(server.address), new ZigguratClient(server.address)];
  const watcher = new ZigguratClient(server.address);
  try {
    const match = await seats[0].createMatch(pylos());
    seats[0].learnRoute(match.matchId, await deadAddress());
    const first = await seats[0].join(match.matchId, "first");
    assert.equal(seats[0].routes.get(match.matchId), undefined, "the dead route is forgotten");
    const second = await seats[1].join(match.matchId, "second");
    for (const client of [...seats, watcher]) client.learnRoute(match.matchId, await deadAddress());
    const plays = [first, second].map((handle, i) =>
      seats[i].play(handle, randomChooser(i + 1).choose, { backoff: quick }),
    );
    const seen: v1.Event[] = [];
    for await (const event of watcher.watch(match.matchId, { backoff: quick })) seen.push(event);
    await Promise.all(plays);
    assert.deepEqual(
      seen.map((e) => e.seq),
      seen.map((_, i) => BigInt(i + 1)),
      "every event once, in order",
    );
    assert.equal(seen.at(-1)?.kind.case, "matchEnded");
    watcher.learnRoute(match.matchId, await deadAddress());
    const record = await watcher.record(match.matchId);
    assert.equal(record.moves.length, seen.filter((e) => e.kind.case === "movePlayed").length);
  } finally {
    for (const client of [...seats, watcher]) client.close();
  }
});

test("a route to a port that hangs up is forgotten like a dead one", { timeout: 120_000 }, async () => {
  const taker = await hangingUpAddress();
  const seats = [new ZigguratClient(server.address), new ZigguratClient(server.address)];
  try {
    const match = await seats[0].createMatch(pylos());
    seats[0].learnRoute(match.matchId, taker.address);
    const first = await seats[0].join(match.matchId, "first");
    assert.equal(seats[0].routes.get(match.matchId), undefined, "the route is forgotten");
    const second = await seats[1].join(match.matchId, "second");
    for (const client of seats) client.learnRoute(match.matchId, taker.address);
    const results = await Promise.all(
      [first, second].map((handle, i) => seats[i].play(handle, randomChooser(i + 1).choose, { backoff: quick })),
    );
    assert.ok(results.every((r) => r.ended.outcome !== undefined), "both seats played to the end");
  } finally {
    for (const client of seats) client.close();
    await taker.close();
  }
});

test("a refusal from the owner keeps its route", { timeout: 60_000 }, async () => {
  const client = new ZigguratClient(server.address);
  try {
    const match = await client.createMatch(pylos());
    // The owner is the server itself under another name: it answers, and refuses.
    const alias = `localhost:${server.address.split(":")[1]}`;
    client.learnRoute(match.matchId, alias);
    await assert.rejects(client.submitMove({ matchId: match.matchId, seat: 1, token: "forged" }, "x"), (error: unknown) => {
      assert.equal((error as ZigguratError).reason, Reason.BadToken);
      return true;
    });
    assert.equal(client.routes.get(match.matchId), alias);
  } finally {
    client.close();
  }
});
