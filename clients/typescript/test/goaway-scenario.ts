// Run by sessions.test.ts in a process of its own: `node goaway-scenario.js guarded|plain`.
// A raw HTTP/2 server answers one request, then sends GOAWAY (no error, no stream open) and
// keeps the socket open a moment; the client calls again as soon as it hears the GOAWAY, so
// the session manager reconnects while the old socket is still closing. Exits 0 and prints
// "survived" if the process lives through it.
import assert from "node:assert/strict";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";

import { Http2SessionManager } from "@connectrpc/connect-node";

import { GuardedSessionManager } from "../src/sessions.js";

async function answerOnce(manager: Http2SessionManager): Promise<http2.Http2Session> {
  const stream = await manager.request("POST", "/x", {}, {});
  const session = stream.session; // (a closed stream forgets it)
  assert.ok(session);
  stream.end();
  const status = await new Promise<number>((resolve) => stream.once("response", (h) => resolve(Number(h[":status"]))));
  assert.equal(status, 200);
  stream.resume();
  await new Promise((resolve) => stream.once("close", resolve));
  return session;
}

const serverSessions = new Set<http2.ServerHttp2Session>();
const server = http2.createServer();
server.on("session", (session) => {
  serverSessions.add(session);
  session.on("close", () => serverSessions.delete(session));
});
server.on("stream", (stream) => {
  stream.respond({ ":status": 200 });
  stream.end("ok");
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

const manager = process.argv[2] === "plain" ? new Http2SessionManager(url) : new GuardedSessionManager(url);
const session = await answerOnce(manager);
const reconnected = new Promise<void>((resolve, reject) => {
  // the manager destroyed the connection in its own "goaway" listener, registered first
  session.once("goaway", () => answerOnce(manager).then(() => resolve(), reject));
});
for (const serverSession of serverSessions) {
  serverSession.goaway(http2.constants.NGHTTP2_NO_ERROR);
  setTimeout(() => serverSession.destroy(), 100);
}
await reconnected;
await new Promise((resolve) => setTimeout(resolve, 300)); // the closed socket's late error, if any
manager.abort();
server.close();
console.log("survived");
