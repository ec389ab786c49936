// A GOAWAY on an idle connection while the next call reconnects must not kill the process
// (src/sessions.ts; connectrpc/connect-es#1768). The scenario runs in a process of its own
// (test/goaway-scenario.ts), since what is tested is whether that process dies: with
// connect-node's own session manager it does, which shows that the scenario reproduces the
// crash; with the client's it lives.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

const SCENARIO = fileURLToPath(new URL("./goaway-scenario.js", import.meta.url));

function run(manager: "guarded" | "plain"): { status: number | null; output: string } {
  const done = spawnSync(process.execPath, [SCENARIO, manager], { encoding: "utf8", timeout: 30_000 });
  return { status: done.status, output: done.stdout + done.stderr };
}

test("connect-node's own session manager dies of the late error (the scenario reproduces it)", () => {
  const { status, output } = run("plain");
  assert.notEqual(status, 0, output);
  assert.match(output, /received GOAWAY without any open streams/);
  assert.doesNotMatch(output, /survived/);
});

test("the client's session manager lives through it and reconnects", () => {
  const { status, output } = run("guarded");
  assert.equal(status, 0, output);
  assert.match(output, /survived/);
});
