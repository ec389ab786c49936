// The client: one connection to a ziggurat server, with the calls a bot needs, a play loop
// that survives dropped connections, spectating, and the remote-bot loop.
import { create } from "@bufbuild/protobuf";
import { type Client as RpcClient, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

import { BackoffState, type Backoff, DEFAULT_BACKOFF } from "./backoff.js";
import {
  Code,
  Reason,
  RejectedError,
  type Rejection,
  UnknownGameError,
  ZigguratError,
  isRetryable,
  rejectionFrom,
} from "./errors.js";
import { BotService, type Assignment } from "./gen/ziggurat/v1/bot_service_pb.js";
import { type GameConfig, GameConfigSchema, Game, type GameInfo, type GameView } from "./gen/ziggurat/v1/game_pb.js";
import {
  type Event,
  type Match,
  type MatchEndedEvent,
  MatchStatus,
  SeatAssignment,
  type TimeControl,
  type TurnStartedEvent,
} from "./gen/ziggurat/v1/match_pb.js";
import {
  MatchService,
  type MatchRecord,
  type MoveRejected,
  type PlayRequest,
  PlayRequestSchema,
  type SubmitMoveResponse,
} from "./gen/ziggurat/v1/match_service_pb.js";
import { GuardedSessionManager } from "./sessions.js";

/** A joined seat: the match, the 1-based seat and its secret token. */
export interface Handle {
  matchId: string;
  seat: number;
  token: string;
}

/** One decision: everything the seat may know when it must move. */
export interface Turn {
  matchId: string;
  /** The game and its options. */
  config: GameConfig | undefined;
  seat: number;
  /** Moves played so far; the move chosen is the (ply+1)-th. */
  ply: number;
  /** This seat's view (view.position: hidden parts as "?"). */
  view: GameView | undefined;
  /** Every legal move, sorted: answer with one of them. */
  legalMoves: string[];
  /**
   * What is left of this turn's time when the bot is asked, in milliseconds; 0 = untimed. A
   * turn read from a resumed stream's backlog (the bot connected or reconnected mid-turn) has
   * been running for PlayResponse.serverTimeMs - Event.timeMs already, both on the server's
   * clock; the time since that message arrived is counted on this machine's monotonic clock,
   * never compared with the server's. At least 1 when timed.
   */
  timeLeftMs: number;
  /** Moves played so far, in order. */
  history: string[];
  /** Moves already refused for this turn (empty on the first ask). */
  rejected: Rejection[];
}

/** The bot: returns the move to play. A thrown error stops play() and is rethrown by it. */
export type Choose = (turn: Turn, signal: AbortSignal) => string | Promise<string>;

export interface PlayOptions {
  /** Every event of the match once, in order (the seat's own view). */
  onEvent?: (event: Event) => void;
  /** A move refused on the stream (the turn is then asked again). */
  onRejected?: (rejection: Rejection) => void;
  backoff?: Backoff;
  /** Refused moves in a row on one turn before play() gives up with RejectedError (default 3). */
  maxRejections?: number;
  signal?: AbortSignal;
}

/** How a played match ended for the seat. */
export interface Result {
  seat: number;
  /** Outcome, revealed seed and the revealing final view. */
  ended: MatchEndedEvent;
  lastSeq: bigint;
  /** Every move of the match, in order. */
  history: string[];
  /** The seat's rank (1 is best). */
  rank: number;
}

export interface ConnectOptions {
  /** Speak TLS, trusting the system's roots (or `ca`). */
  tls?: boolean;
  /** PEM of a certificate authority to trust (e.g. a LAN server's self-signed certificate). */
  ca?: string | Buffer;
}

export interface WatchOptions {
  /** Watch as this seat (its view); default: as a spectator. */
  handle?: Handle;
  /** Start after this event (default 0n: from the beginning). */
  afterSeq?: bigint;
  backoff?: Backoff;
  signal?: AbortSignal;
}

export interface RemoteBotOptions {
  /** 1–64 printable characters; registered with `token` on the first connection. */
  name: string;
  token: string;
  /** Games it plays; empty: all. */
  games?: Game[];
  /** Matches at once (default 1). */
  maxMatches?: number;
  /** The bot for one assignment (called once per assignment). */
  chooser: (assignment: Assignment) => Choose;
  onRegistered?: (name: string) => void;
  onAssignment?: (assignment: Assignment) => void;
  onMatchEnded?: (assignment: Assignment, result: Result | undefined, error: unknown) => void;
  /** Reconnection pacing (default: DEFAULT_BACKOFF without a limit on attempts). */
  backoff?: Backoff;
  playOptions?: Omit<PlayOptions, "signal">;
  signal?: AbortSignal;
}

/** The configuration of a standard two-player Pylos game. */
export function pylos(): GameConfig {
  return create(GameConfigSchema, { game: Game.PYLOS, seats: 2 });
}

/** The configuration of a Kabaleo game for `seats` players (2 to 4). */
export function kabaleo(seats: number): GameConfig {
  return create(GameConfigSchema, { game: Game.KABALEO, seats });
}

function bearer(token: string | undefined): Record<string, string> {
  return token ? { authorization: `Bearer ${token}` } : {};
}

/** An open connection to a server; call close() when done. */
export class ZigguratClient {
  /** The raw generated clients, for anything the helpers do not cover. */
  readonly matches: RpcClient<typeof MatchService>;
  readonly bots: RpcClient<typeof BotService>;
  private readonly sessions: GuardedSessionManager;
  /** Where each match is served when the server runs several worker processes
   * (`ziggurat serve --workers N`, docs/scaling.md): learnt from Match.serverAddress and
   * MATCH_ELSEWHERE refusals; that match's calls then go there. An address that stops
   * answering (its worker restarted on another port, or the whole server did) is forgotten
   * and the match's calls go to `address` again, which serves it or names its owner now: a
   * unary call is retried there at once, play() and watch() on their next reconnection. */
  readonly routes = new Map<string, string>();
  private readonly owners = new Map<string, ZigguratClient>();

  /** Connects to address (HOST:PORT) lazily; gRPC over HTTP/2, plain text unless TLS. */
  constructor(
    readonly address: string,
    private readonly options: ConnectOptions = {},
  ) {
    const secure = options.tls === true || options.ca !== undefined;
    const baseUrl = `${secure ? "https" : "http"}://${address}`;
    this.sessions = new GuardedSessionManager(
      baseUrl,
      { pingIntervalMs: 20_000, pingTimeoutMs: 10_000 },
      options.ca !== undefined ? { ca: options.ca } : {},
    );
    const transport = createGrpcTransport({ baseUrl, sessionManager: this.sessions });
    this.matches = createClient(MatchService, transport);
    this.bots = createClient(BotService, transport);
  }

  /** Closes the connection, and those to the processes that own matches (pending calls fail). */
  close(): void {
    for (const owner of this.owners.values()) owner.close();
    this.owners.clear();
    this.sessions.abort();
  }

  /** The MatchService of the process that serves matchId (this connection unless a route is known). */
  matchesFor(matchId: string): RpcClient<typeof MatchService> {
    const address = this.routes.get(matchId);
    if (address === undefined || address === this.address) return this.matches;
    let owner = this.owners.get(address);
    if (owner === undefined) {
      owner = new ZigguratClient(address, this.options);
      this.owners.set(address, owner);
    }
    return owner.matches;
  }

  /** Sends matchId's calls to address (":PORT" = the host of this client's address). */
  learnRoute(matchId: string, address: string): void {
    if (!matchId || !address) return;
    if (address.startsWith(":")) address = this.address.slice(0, this.address.lastIndexOf(":")) + address;
    this.routes.set(matchId, address);
  }

  /** Forgets that matchId is served at address when `failure` says that address, where the
   * failed call went, did not answer (Unavailable or DeadlineExceeded with no reason from a
   * server); a refusal from the owner (it answered) keeps the route. True when forgotten. */
  forgetRoute(matchId: string, address: string | undefined, failure: unknown): boolean {
    if (address === undefined || address === this.address || this.routes.get(matchId) !== address) return false;
    if (!(failure instanceof ZigguratError) || failure.reason) return false;
    if (failure.code !== Code.Unavailable && failure.code !== Code.DeadlineExceeded) return false;
    this.routes.delete(matchId);
    return true;
  }

  private note(match: Match): Match {
    this.learnRoute(match.matchId, match.serverAddress);
    return match;
  }

  private async call<T>(promise: Promise<T>): Promise<T> {
    try {
      return await promise;
    } catch (error) {
      throw ZigguratError.from(error);
    }
  }

  /** A unary call on the process that serves matchId, following MATCH_ELSEWHERE (twice at
   * most), and on `address` again when the owner's address does not answer. */
  private async routed<T>(matchId: string, call: (matches: RpcClient<typeof MatchService>) => Promise<T>): Promise<T> {
    let silent: unknown; // the owner's address did not answer
    for (let hop = 0; ; hop++) {
      const route = this.routes.get(matchId);
      try {
        return await call(this.matchesFor(matchId));
      } catch (error) {
        const failure = ZigguratError.from(error);
        if (this.forgetRoute(matchId, route, failure)) {
          // Retried: the owner did not answer, so the call did not run there, or ran and was
          // lost with the process (as after any connection loss). DeadlineExceeded: the
          // caller's time is spent.
          silent = failure;
          if ((failure as ZigguratError).code === Code.Unavailable && hop < 2) continue;
          throw failure;
        }
        const address = failure instanceof ZigguratError && failure.reason === Reason.MatchElsewhere ? failure.metadata.address : "";
        if (!address) throw failure;
        this.learnRoute(matchId, address);
        // Sent back to an owner that did not answer: that is the failure, a retryable one.
        if (hop === 2) throw silent ?? failure;
      }
    }
  }

  /** Every game the server hosts (MatchService.ListGames), in the order a lobby should offer
   * them: name, title, seat counts, rule options and whether anything is hidden. A bot written
   * before a game existed can still create and play it from this. */
  async listGames(): Promise<GameInfo[]> {
    return (await this.call(this.matches.listGames({}))).games;
  }

  /** The configuration of the game the server lists under `name` ("pylos", "kabaleo",
   * "phantom-ttt", or one added since), resolved through listGames, so it needs no per-game
   * code. `seats` 0 takes the game's fewest seats; `options` are its rule options by name, as
   * GameInfo.options spells them (GameConfig.ruleOptions), judged by the server when the match
   * is created (INVALID_CONFIG). A name the server does not list throws UnknownGameError. */
  async gameConfig(name: string, seats = 0, options: Record<string, string> = {}): Promise<GameConfig> {
    const games = await this.listGames();
    const game = games.find((info) => info.name === name);
    if (game === undefined) throw new UnknownGameError(name, games.map((info) => info.name));
    return create(GameConfigSchema, { game: game.game, seats: seats || game.minSeats, ruleOptions: { ...options } });
  }

  /** Creates a match with open seats: the match as a spectator sees it, plus the creator
   * token that lets its holder cancel it while it waits for players (keep it secret). */
  async createMatch(
    config: GameConfig,
    options: { timeControl?: TimeControl; seatAssignment?: SeatAssignment } = {},
  ): Promise<Match & { creatorToken: string }> {
    const response = await this.call(
      this.matches.createMatch({ config, timeControl: options.timeControl, seatAssignment: options.seatAssignment }),
    );
    return Object.assign(this.note(response.match!), { creatorToken: response.creatorToken });
  }

  /** Cancels a match still waiting for players, with the creator token createMatch returned;
   * it ends as aborted. A started match is refused with NOT_WAITING. */
  async cancelMatch(matchId: string, creatorToken: string): Promise<Match> {
    const response = await this.routed(matchId, (m) => m.cancelMatch({ matchId }, { headers: bearer(creatorToken) }));
    return this.note(response.match!);
  }

  /** Takes a seat; seat 0 takes the one the match gives, another asks for it (chosen seating). */
  async join(matchId: string, name: string, seat = 0): Promise<Handle> {
    const response = await this.routed(matchId, (m) => m.joinMatch({ matchId, playerName: name, seat }));
    if (response.match) this.note(response.match);
    return { matchId, seat: response.seat, token: response.token };
  }

  /** The match as the handle's seat sees it (no handle: as a spectator). */
  async getMatch(matchId: string, handle?: Handle): Promise<Match> {
    const response = await this.routed(matchId, (m) => m.getMatch({ matchId }, { headers: bearer(handle?.token) }));
    return this.note(response.match!);
  }

  /** Matches, newest first. */
  async listMatches(status: MatchStatus = MatchStatus.UNSPECIFIED): Promise<Match[]> {
    return (await this.call(this.matches.listMatches({ status }))).matches.map((match) => this.note(match));
  }

  /** Plays a move outside the Play stream; `ply` guards it (refused with STALE_PLY on another turn). */
  async submitMove(handle: Handle, move: string, ply?: number): Promise<SubmitMoveResponse> {
    return this.routed(handle.matchId, (m) =>
      m.submitMove({ matchId: handle.matchId, move, ply }, { headers: bearer(handle.token) }),
    );
  }

  async resign(handle: Handle): Promise<void> {
    await this.routed(handle.matchId, (m) => m.resign({ matchId: handle.matchId }, { headers: bearer(handle.token) }));
  }

  /** The verifiable record of a finished match. */
  async record(matchId: string): Promise<MatchRecord> {
    return (await this.routed(matchId, (m) => m.getMatchRecord({ matchId }))).record!;
  }

  /**
   * Every event of the match after options.afterSeq, in order and exactly once, until the
   * match ends; a dropped stream is resumed after the last event yielded, with backoff.
   */
  async *watch(matchId: string, options: WatchOptions = {}): AsyncGenerator<Event> {
    const backoff = new BackoffState(options.backoff ?? DEFAULT_BACKOFF);
    let last = options.afterSeq ?? 0n;
    let redirects = 0;
    for (;;) {
      let failure: unknown;
      const route = this.routes.get(matchId);
      try {
        const stream = this.matchesFor(matchId).watchMatch(
          { matchId, afterSeq: last },
          { headers: bearer(options.handle?.token), signal: options.signal },
        );
        for await (const response of stream) {
          backoff.reset();
          for (const event of response.events) {
            if (event.seq <= last) continue;
            last = event.seq;
            yield event;
            if (event.kind.case === "matchEnded") return;
          }
        }
        failure = new ZigguratError(Code.Unavailable, "", "the server closed the stream before the match ended");
      } catch (error) {
        failure = ZigguratError.from(error);
        const address = failure instanceof ZigguratError && failure.reason === Reason.MatchElsewhere ? failure.metadata.address : "";
        if (address) {
          // Another worker owns it: go there, at once a few times in a row, then with backoff
          // (the owner may still be starting).
          this.learnRoute(matchId, address);
          if (redirects++ < 2) continue;
          failure = new ZigguratError(Code.Unavailable, Reason.MatchElsewhere, `the match is served at ${address}`);
        }
      }
      redirects = 0;
      // The owner's address stopped answering: the next attempt asks this client's address.
      this.forgetRoute(matchId, route, failure);
      if (options.signal?.aborted || !isRetryable(failure)) throw failure;
      if (!(await backoff.wait(options.signal))) {
        if (options.signal?.aborted) throw failure;
        throw new ZigguratError(Code.Unavailable, Reason.GaveUp, `could not reconnect: ${String(failure)}`);
      }
    }
  }

  /**
   * Plays the handle's seat with `choose` until the match ends, on the bidirectional Play
   * stream. Only the current turn is ever asked: after a reconnection the events missed are
   * replayed (resuming after the last one handled: none lost, none twice) and a TurnStarted
   * is answered only once nothing has followed it. A move sent just before the connection
   * dropped is sent again with its ply guard, which makes a duplicate harmless. Dropped
   * connections and server restarts are retried with backoff; other refusals are thrown.
   */
  async play(handle: Handle, choose: Choose, options: PlayOptions = {}): Promise<Result> {
    return new Player(this, handle, choose, options).run();
  }

  /** Seats a connected remote bot in a match waiting for players (seat 0: the seat the
   * match gives, as join); the bot gets the seat as an Assignment. Resolves to its seat.
   * Only the match's creator may invite: creatorToken is the one createMatch returned.
   * Refusals: MISSING_TOKEN, BAD_TOKEN (not that match's creator token), BOT_NOT_CONNECTED,
   * BOT_GAME, BOT_BUSY, TOO_MANY_INVITATIONS (the bot has as many invitations waiting to be
   * played as the server allows), and those of join. */
  async inviteBot(matchId: string, creatorToken: string, botName: string, seat = 0): Promise<number> {
    const request = this.bots.inviteBot({ matchId, botName, seat }, { headers: bearer(creatorToken) });
    return (await this.call(request)).seat;
  }

  /**
   * Connects as a remote bot (BotService.ConnectBot) and plays every seat it is handed,
   * each Assignment with its own play(); reconnects with backoff (matches in play carry on).
   * Resolves when options.signal aborts, once its matches have stopped; throws on a refusal
   * that reconnecting cannot fix (e.g. BAD_TOKEN: the name belongs to another token).
   */
  async runRemoteBot(options: RemoteBotOptions): Promise<void> {
    const backoff = new BackoffState(options.backoff ?? { ...DEFAULT_BACKOFF, attempts: Number.MAX_SAFE_INTEGER });
    const matches = new Set<Promise<void>>();
    try {
      for (;;) {
        let failure: unknown;
        try {
          const stream = this.bots.connectBot(
            { name: options.name, games: options.games ?? [], maxMatches: options.maxMatches ?? 1 },
            { headers: bearer(options.token), signal: options.signal },
          );
          for await (const response of stream) {
            backoff.reset();
            if (response.kind.case === "registered") {
              options.onRegistered?.(response.kind.value.name);
            } else if (response.kind.case === "assignment") {
              const assignment = response.kind.value;
              options.onAssignment?.(assignment);
              const handle = { matchId: assignment.matchId, seat: assignment.seat, token: assignment.token };
              const game = this.play(handle, options.chooser(assignment), { ...options.playOptions, signal: options.signal })
                .then(
                  (result) => options.onMatchEnded?.(assignment, result, undefined),
                  (error: unknown) => options.onMatchEnded?.(assignment, undefined, error),
                )
                .finally(() => matches.delete(game));
              matches.add(game);
            }
          }
          failure = new ZigguratError(Code.Unavailable, "", "the server closed the bot stream");
        } catch (error) {
          failure = ZigguratError.from(error);
        }
        if (options.signal?.aborted) return;
        if (!isRetryable(failure)) throw failure;
        if (!(await backoff.wait(options.signal))) {
          if (options.signal?.aborted) return;
          throw new ZigguratError(Code.Unavailable, Reason.GaveUp, `could not reconnect: ${String(failure)}`);
        }
      }
    } finally {
      await Promise.allSettled([...matches]);
    }
  }
}

/** The outgoing half of the Play stream: requests pushed by the loop, pulled by the transport
 * through an async generator (which gives connect the full iterator protocol it needs). */
class Outbox {
  private readonly items: PlayRequest[] = [];
  private wake: (() => void) | undefined;
  private closed = false;

  push(request: PlayRequest): void {
    if (this.closed) return;
    this.items.push(request);
    this.wake?.();
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  async *requests(): AsyncGenerator<PlayRequest> {
    for (;;) {
      const item = this.items.shift();
      if (item !== undefined) {
        yield item;
      } else if (this.closed) {
        return;
      } else {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
      }
    }
  }
}

class Player {
  private readonly backoff: BackoffState;
  private readonly maxRejections: number;
  private config: GameConfig | undefined;
  private lastSeq = 0n;
  private view: GameView | undefined;
  private readonly history: string[] = [];
  /** This seat's turn, not yet followed by its move. */
  private pending: TurnStartedEvent | undefined;
  /** The move chosen for `pending` (sent again after a reconnection). */
  private chosen = "";
  /** `chosen` was sent on the current stream. */
  private sent = false;
  private rejections: Rejection[] = [];
  /** When `pending`'s time runs out, on this machine's monotonic clock (performance.now()). */
  private deadline = 0;
  /**
   * The message being applied: the server's clock when it was sent (0n from a server that does
   * not say) and this machine's monotonic clock when it arrived.
   */
  private sentMs = 0n;
  private receivedAt = 0;

  constructor(
    private readonly client: ZigguratClient,
    private readonly handle: Handle,
    private readonly choose: Choose,
    private readonly options: PlayOptions,
  ) {
    this.backoff = new BackoffState(options.backoff ?? DEFAULT_BACKOFF);
    this.maxRejections = options.maxRejections ?? 3;
  }

  async run(): Promise<Result> {
    for (;;) {
      let failure: unknown;
      try {
        const ended = await this.session();
        const ranks = ended.outcome?.ranks ?? [];
        return {
          seat: this.handle.seat,
          ended,
          lastSeq: this.lastSeq,
          history: [...this.history],
          rank: ranks[this.handle.seat - 1] ?? 0,
        };
      } catch (error) {
        failure = ZigguratError.from(error);
      }
      // The owner's address stopped answering: the next session asks the client's address.
      this.client.forgetRoute(this.handle.matchId, this.client.routes.get(this.handle.matchId), failure);
      if (this.options.signal?.aborted || !isRetryable(failure)) throw failure;
      if (!(await this.backoff.wait(this.options.signal))) {
        if (this.options.signal?.aborted) throw failure;
        throw new ZigguratError(Code.Unavailable, Reason.GaveUp, `could not reconnect: ${String(failure)}`);
      }
    }
  }

  /** One Play stream: catch up, then play live until the match ends (or the stream fails). */
  private async session(): Promise<MatchEndedEvent> {
    const match = await this.client.getMatch(this.handle.matchId, this.handle);
    this.config = match.config;
    const caughtUpAt = match.lastSeq; // events up to here are history, not turns to answer
    const abort = new AbortController();
    const onOuterAbort = () => abort.abort();
    this.options.signal?.addEventListener("abort", onOuterAbort, { once: true });
    const outbox = new Outbox();
    this.sent = false;
    outbox.push(create(PlayRequestSchema, { matchId: this.handle.matchId, afterSeq: this.lastSeq }));
    try {
      const matches = this.client.matchesFor(this.handle.matchId);
      const stream = matches.play(outbox.requests(), { headers: bearer(this.handle.token), signal: abort.signal });
      for await (const response of stream) {
        this.backoff.reset();
        this.sentMs = response.serverTimeMs;
        this.receivedAt = performance.now();
        if (response.moveRejected) this.rejected(response.moveRejected);
        for (const event of response.events) {
          const ended = this.apply(event);
          if (ended) return ended;
        }
        if (this.pending && !this.sent && this.lastSeq >= caughtUpAt) {
          await this.answer(outbox, abort.signal);
        }
      }
      throw new ZigguratError(Code.Unavailable, "", "the server closed the stream before the match ended");
    } finally {
      this.options.signal?.removeEventListener("abort", onOuterAbort);
      outbox.close();
      abort.abort();
    }
  }

  private apply(event: Event): MatchEndedEvent | undefined {
    if (event.seq <= this.lastSeq) return undefined;
    this.lastSeq = event.seq;
    this.options.onEvent?.(event);
    switch (event.kind.case) {
      case "matchStarted":
        this.view = event.kind.value.view;
        break;
      case "movePlayed":
        this.view = event.kind.value.view;
        this.history.push(event.kind.value.move);
        this.pending = undefined;
        this.chosen = "";
        this.sent = false;
        this.rejections = [];
        break;
      case "turnStarted": {
        const turn = event.kind.value;
        if (turn.seat === this.handle.seat) {
          if (this.pending === undefined || this.pending.ply !== turn.ply) {
            this.chosen = "";
            this.rejections = [];
          }
          this.pending = turn;
          this.sent = false;
          this.deadline = this.receivedAt + this.leftOnArrival(turn, event.timeMs);
        } else {
          this.pending = undefined;
          this.chosen = "";
          this.sent = false;
        }
        break;
      }
      case "matchEnded":
        return event.kind.value;
    }
    return undefined;
  }

  /**
   * The milliseconds of a turn's time that were left when the message carrying it was sent:
   * time_left_ms less what had run since the event on the server's clock (a turn read from a
   * resumed stream's backlog started long before; a live one just now).
   */
  private leftOnArrival(turn: TurnStartedEvent, eventMs: bigint): number {
    const ran = this.sentMs === 0n || this.sentMs < eventMs ? 0n : this.sentMs - eventMs;
    return Number(turn.timeLeftMs - ran);
  }

  private rejected(message: MoveRejected): void {
    const rejection = rejectionFrom(message, this.pending?.ply ?? 0);
    this.options.onRejected?.(rejection);
    if (this.pending === undefined || message.move !== this.chosen) return; // a late verdict
    this.rejections.push(rejection);
    if (this.rejections.length >= this.maxRejections) throw new RejectedError([...this.rejections]);
    this.chosen = ""; // ask the bot again, showing it the refusal
    this.sent = false;
  }

  private async answer(outbox: Outbox, signal: AbortSignal): Promise<void> {
    const turn = this.pending!;
    if (this.chosen === "") {
      const timeLeftMs = turn.timeLeftMs === 0n ? 0 : Math.max(1, Math.floor(this.deadline - performance.now()));
      this.chosen = await this.choose(
        {
          matchId: this.handle.matchId,
          config: this.config,
          seat: this.handle.seat,
          ply: turn.ply,
          view: this.view,
          legalMoves: [...turn.legalMoves],
          timeLeftMs,
          history: [...this.history],
          rejected: [...this.rejections],
        },
        signal,
      );
    }
    outbox.push(create(PlayRequestSchema, { move: this.chosen, ply: turn.ply }));
    this.sent = true;
  }
}

export { SeatAssignment, MatchStatus, Game };
