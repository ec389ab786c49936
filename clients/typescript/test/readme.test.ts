// The README's programs ("the smallest bot", "any game by its name") run here against a real
// server, importing the package by its name, so the documented code cannot rot.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";

import { ZigguratClient, pylos } from "../src/index.js";
import { TestServer, randomChooser } from "./server.js";

const PACKAGE = resolve(new URL(".", import.meta.url).pathname, "../..");

/** The README's TypeScript block containing `marker` (each is a whole program), written into a
 * fresh directory inside the package, so that Node resolves "@ziggurat-games/client" to it. */
function readmeProgram(marker: string): { file: string; dir: string } {
  const readme = readFileSync(join(PACKAGE, "README.md"), "utf8");
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  const found = blocks.filter((block) => block.includes(marker));
  assert.equal(blocks.length, 2, "two TypeScript programs in README.md");
  assert.equal(found.length, 1, `one README program contains ${marker}`);
  const dir = mkdtempSync(join(PACKAGE, "readme-bot-"));
  writeFileSync(join(dir, "bot.mjs"), found[0]);
  return { file: join(dir, "bot.mjs"), dir };
}

test("the README's smallest bot plays a match", { timeout: 180_000 }, async () => {
  const { file, dir } = readmeProgram('client.join(matchId, "my-bot")');
  const server = await TestServer.start();
  const client = new ZigguratClient(server.address);
  try {
    const match = await client.createMatch(pylos());
    const opponent = client.join(match.matchId, "opponent").then((h) => client.play(h, randomChooser(3).choose));
    const { stdout } = await promisify(execFile)("node", [file, server.address, match.matchId]);
    assert.match(stdout, /^rank [12]$/m);
    await opponent;
    await server.verify(match.matchId);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    client.close();
    await server.kill();
  }
});

test("the README's any-game program plays phantom-ttt to a verified end", { timeout: 180_000 }, async () => {
  const { file, dir } = readmeProgram("client.listGames()");
  const server = await TestServer.start();
  try {
    const { stdout } = await promisify(execFile)("node", [file, server.address, "phantom-ttt"]);
    assert.ok(stdout.includes("phantom-ttt (Phantom tic-tac-toe): 2 to 2 seats, 0 options\n"), stdout);
    assert.match(stdout, /^seat 1 sees \S+$/m);
    assert.match(stdout, /^seat 2 sees \S+$/m);
    assert.equal(stdout.match(/^seat [12] ranked [12]$/gm)?.length, 2, stdout);
    const created = stdout.match(/^created match (\S+)$/m);
    assert.ok(created, stdout);
    await server.verify(created[1]);
    await assert.rejects(promisify(execFile)("node", [file, server.address, "chess"]), (error: { stderr: string }) => {
      assert.ok(error.stderr.includes('unknown game "chess": this server hosts pylos, kabaleo, phantom-ttt'), error.stderr);
      return true;
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await server.kill();
  }
});
