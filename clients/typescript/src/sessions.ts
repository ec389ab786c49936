// The HTTP/2 connections of a client: connect-node's session manager, with every connection
// it hands a request guarded against an error raised after the manager has let go of it.
import type * as http2 from "node:http2";

import { Http2SessionManager } from "@connectrpc/connect-node";

/**
 * connect-node's Http2SessionManager (2.2.0) destroys a connection that receives a GOAWAY with
 * no stream open, with an error that Node.js raises as an "error" event only once the socket
 * has closed. If the manager has moved on by then (a new call saw the dead connection and
 * reconnected), it has removed its listeners, and that late event is an uncaught exception:
 * the whole process dies (connectrpc/connect-es#1768, fixed upstream by #1769, not released).
 * A server that restarts sends exactly that GOAWAY to every idle client, so a bot died with
 * it. Each connection a request goes out on gets one listener of its own here, which outlives
 * the manager's: what the manager no longer hears, nobody needs (the next call reconnects).
 */
export class GuardedSessionManager extends Http2SessionManager {
  private readonly guarded = new WeakSet<http2.Http2Session>();

  override async request(
    method: string,
    path: string,
    headers: http2.OutgoingHttpHeaders,
    options: Omit<http2.ClientSessionRequestOptions, "signal">,
  ): Promise<http2.ClientHttp2Stream> {
    const stream = await super.request(method, path, headers, options);
    const session = stream.session;
    if (session !== undefined && !this.guarded.has(session)) {
      this.guarded.add(session);
      session.on("error", () => {});
    }
    return stream;
  }
}
