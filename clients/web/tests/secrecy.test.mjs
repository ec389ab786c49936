// The secrecy checker used by the browser tests reports a leak when there is one.
import assert from "node:assert/strict";
import { test } from "node:test";
import { loadSecrecy } from "./harness.mjs";

test("the byte-level secrecy check catches another seat's objective", async () => {
  const { check, leakingChunk } = await loadSecrecy();
  const seed = "ab".repeat(32);
  const leak = check([leakingChunk("m1")], 1, "m1", seed);
  assert.ok(leak.violations.some((v) => /objective of seat 2 \(B\)/.test(v)), JSON.stringify(leak));
  assert.ok(leak.violations.some((v) => /position text shows seat 2/.test(v)));
  // The same bytes are fine for seat 2 itself, whose objective it is.
  assert.deepEqual(check([leakingChunk("m1")], 2, "m1", seed).violations, []);
  // And the seed, hex, anywhere before the end is reported.
  const withSeed = check([leakingChunk("m1", `RR/G/B/O RRR/GGG 2 1 ?B+?? ${seed}`)], 2, "m1", seed);
  assert.ok(withSeed.violations.some((v) => /the seed \(hex\)/.test(v)), JSON.stringify(withSeed));
});
