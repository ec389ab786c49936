// The README's "smallest bot" is a whole program: it runs here against a real server,
// importing the package by its name, so the documented code cannot rot.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";

import { ZigguratClient, pylos } from "../src/index.js";
import { TestServer, randomChooser } from "./server.js";

const PACKAGE = resolve(new URL(".", import.meta.url).pathname, "../..");

test("the README's smallest bot plays a match", { timeout: 180_000 }, async () => {
  const readme = readFileSync(join(PACKAGE, "README.md"), "utf8");
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.equal(blocks.length, 1, "one TypeScript program in README.md");
  // Inside the package directory, so that Node resolves "@ziggurat-games/client" to it.
  const dir = mkdtempSync(join(PACKAGE, "readme-bot-"));
  const server = await TestServer.start();
  const client = new ZigguratClient(server.address);
  try {
    writeFileSync(join(dir, "bot.mjs"), blocks[0]);
    const match = await client.createMatch(pylos());
    const opponent = client.join(match.matchId, "opponent").then((h) => client.play(h, randomChooser(3).choose));
    const { stdout } = await promisify(execFile)("node", [join(dir, "bot.mjs"), server.address, match.matchId]);
    assert.match(stdout, /^rank [12]$/m);
    await opponent;
    await server.verify(match.matchId);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    client.close();
    await server.kill();
  }
});
