// TLS: a server with a certificate from `ziggurat tls init`, its private CA trusted through `ca`.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { ZigguratClient, ZigguratError, pylos } from "../src/index.js";
import { TestServer, ZIGGURAT, randomChooser } from "./server.js";

test("plays over TLS, and refuses an untrusted certificate", { timeout: 180_000 }, async () => {
  const scratch = new TestServer(); // only for its temporary directory
  execFileSync(ZIGGURAT, ["tls", "init", "--dir", scratch.dir, "--host", "ziggurat.lan"], { stdio: "ignore" });
  const [ca, cert, key] = ["ca.pem", "server.pem", "server.key"].map((name) => join(scratch.dir, name));
  const server = await TestServer.start(["--tls-cert", cert, "--tls-key", key]);
  const untrusting = new ZigguratClient(server.address, { tls: true });
  const client = new ZigguratClient(server.address, { ca: readFileSync(ca) });
  try {
    await assert.rejects(untrusting.createMatch(pylos()), (error: unknown) => error instanceof ZigguratError);
    const match = await client.createMatch(pylos());
    const seats = [await client.join(match.matchId, "a"), await client.join(match.matchId, "b")];
    const results = await Promise.all(seats.map((seat, i) => client.play(seat, randomChooser(i).choose)));
    const record = await client.record(match.matchId);
    assert.deepEqual(results[0].history, record.moves.map((m) => m.move));
  } finally {
    untrusting.close();
    client.close();
    await server.kill();
  }
});
