// The seed check anyone can make after the end: SHA-256("ziggurat/v1/commit/" + seed) must be
// the commitment the server published when the match was created (docs/setup-derivation.md).
// @noble/hashes rather than crypto.subtle: a LAN address over plain HTTP is not a secure
// context, and there crypto.subtle does not exist.
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, hexToBytes, utf8ToBytes } from "@noble/hashes/utils.js";

export function seedMatches(seedHex: string, commitment: string): boolean {
  if (!/^[0-9a-f]{64}$/.test(seedHex) || !commitment) return false;
  const prefix = utf8ToBytes("ziggurat/v1/commit/");
  const seed = hexToBytes(seedHex);
  const data = new Uint8Array(prefix.length + seed.length);
  data.set(prefix);
  data.set(seed, prefix.length);
  return bytesToHex(sha256(data)) === commitment;
}
