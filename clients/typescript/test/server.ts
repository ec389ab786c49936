// A real `ziggurat serve` subprocess on a loopback port with its own database file:
// $ZIGGURAT, or the repository's .venv/bin/ziggurat.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, openSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";

import type { Turn } from "../src/index.js";

const here = new URL(".", import.meta.url).pathname;
export const ZIGGURAT = process.env.ZIGGURAT ?? resolve(here, "../../../../.venv/bin/ziggurat");

export class TestServer {
  address = "";
  private process: ChildProcess | undefined;
  readonly dir = mkdtempSync(join(tmpdir(), "ziggurat-ts-"));

  /** More `serve` arguments (e.g. --tls-cert). */
  private extra: string[] = [];

  static async start(extra: string[] = []): Promise<TestServer> {
    const server = new TestServer();
    server.extra = extra;
    await server.launch("0", join(server.dir, "z.db"));
    return server;
  }

  /** A server on an existing database (e.g. a tournament's), on a free port. */
  static async on(db: string): Promise<TestServer> {
    const server = new TestServer();
    await server.launch("0", db);
    return server;
  }

  private db = "";

  async launch(port: string, db: string): Promise<void> {
    this.db = db;
    const log = openSync(join(this.dir, "server.log"), "a");
    const child = spawn(ZIGGURAT, ["serve", "--host", "127.0.0.1", "--port", port, "--db", db, "--no-mdns", ...this.extra], {
      stdio: ["ignore", "pipe", log],
    });
    this.process = child;
    const lines = createInterface({ input: child.stdout! });
    this.address = await new Promise<string>((ok, fail) => {
      const timer = setTimeout(() => fail(new Error("server did not start in 60 s")), 60_000);
      child.once("exit", (code) => fail(new Error(`server exited (${code}); see ${this.dir}/server.log`)));
      lines.on("line", (line) => {
        if (line.startsWith("ziggurat listening on ")) {
          clearTimeout(timer);
          ok(line.slice("ziggurat listening on ".length).trim());
        }
      });
    });
  }

  /** SIGKILL: no chance to flush or say goodbye. */
  async kill(): Promise<void> {
    const child = this.process;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((ok) => child.once("exit", ok));
    child.kill("SIGKILL");
    await exited;
  }

  /** Starts again on the same database and the same port. */
  async restart(): Promise<void> {
    await this.launch(this.address.split(":")[1], this.db);
  }

  /** `ziggurat verify`: the independent check of a finished match's record. */
  async verify(matchId: string): Promise<void> {
    await promisify(execFile)(ZIGGURAT, ["verify", matchId, "--server", this.address]);
  }
}

/** A seeded random bot (mulberry32) that records the plies it was asked about. */
export function randomChooser(seed: number): { choose: (turn: Turn) => string; asked: number[] } {
  let state = seed >>> 0;
  const asked: number[] = [];
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    asked,
    choose: (turn: Turn) => {
      asked.push(turn.ply);
      return turn.legalMoves[Math.floor(next() * turn.legalMoves.length)];
    },
  };
}
