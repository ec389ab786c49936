"""The server process: gRPC server with health and reflection, restore, graceful shutdown.

Start-up refuses, with one line, what it cannot serve safely: a database path it could not
write (:mod:`ziggurat.store.startup`), a database another process owns
(:mod:`ziggurat.store.owner`), an address it cannot bind. It then runs SQLite's integrity
check and rebuilds every unfinished match, quarantining the ones that cannot be rebuilt.

Shutdown order (SIGTERM or Ctrl-C): health → NOT_SERVING, end every stream with UNAVAILABLE
``SERVER_SHUTTING_DOWN`` (clients resume from their last sequence number after a restart),
stop accepting and drain unary calls for ``grace`` seconds, close the database (WAL
checkpoint), release the database. A second signal forces an immediate exit.

With ``--gate`` (``ServeOptions.gate``, docs/operations.md "The gate") the public port is the
``ziggurat-gate`` child's (:mod:`ziggurat.hosting.gate`): this server listens only on a
private Unix socket in a directory of its own (mode 0700), starts the gate as soon as that is
bound (so that a gate that cannot start is said in one line before the long checks; calls it
takes meanwhile wait until the server serves), and reports the gate's address as its own.
Shutdown then starts by telling the gate (which refuses new calls from then on), ends the
streams as above (the gate passes their status on), and waits for the gate to exit before it
stops serving on the socket. A gate that exits while serving stops the server with one
ERROR line (exit code 1: a supervisor restarts it).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import shutil
import signal
import socket
import sqlite3
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
from google.protobuf.descriptor import ServiceDescriptor
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio  # type: ignore[attr-defined]
from grpc_reflection.v1alpha import reflection

from ziggurat import extras
from ziggurat.api.access import Access
from ziggurat.api.admin_servicer import AdminServicer
from ziggurat.api.bot_servicer import BotServicer
from ziggurat.api.bots import DEFAULT_INVITATION_TTL_S, DEFAULT_MAX_PENDING_INVITATIONS, BotRegistry
from ziggurat.api.competition import CALLS_PER_CREDENTIAL, Competition, CompetitionInterceptor
from ziggurat.api.guard import Guard, GuardLimits
from ziggurat.api.house_bots import HouseBotFactory, HouseBotSeater, NoHouseBots
from ziggurat.api.peer import Peers, new_secret
from ziggurat.api.servicer import MatchServicer, method_handlers
from ziggurat.api.status_guard import StatusGuard
from ziggurat.core.manager import (
    DEFAULT_CLAIM_AFTER_MS,
    DEFAULT_MAX_MATCHES_PER_ADDRESS,
    DEFAULT_WAITING_TTL_S,
    MatchManager,
)
from ziggurat.core.match import StreamLimits
from ziggurat.core.timecontrol import DEFAULT_UNTIMED_MOVE_LIMIT_S
from ziggurat.hosting import memory
from ziggurat.hosting.gate import (
    BINARY_NAME,
    SHUTDOWN_MARGIN_S,
    Gate,
    GateLimits,
    check_binary,
    default_binary,
    listen_address,
)
from ziggurat.hosting.memory_ceiling import MemoryCeiling
from ziggurat.hosting.openfiles import raise_open_files_limit
from ziggurat.hosting.ports import bind_failure
from ziggurat.hosting.private_dir import make_private_dir, remove_stale_private_dirs
from ziggurat.hosting.shard_listing import ShardLister
from ziggurat.hosting.shards import (
    WorkerOptions,
    advertised_address,
    bind_own,
    bind_worker_socket,
    own_port_for_gate,
    remembered_port,
    warn_own_port_moved,
)
from ziggurat.store.owner import DatabaseOwner, lost_wal_message
from ziggurat.store.sqlite import Store
from ziggurat.store.startup import StartupError, check_database_path, directory_exposure
from ziggurat.v1 import (
    admin_service_pb2,
    admin_service_pb2_grpc,
    bot_service_pb2,
    bot_service_pb2_grpc,
    match_service_pb2,
)

if TYPE_CHECKING:
    from ziggurat.hosting.mdns import Advertiser
    from ziggurat.web.serving import WebServer

log = logging.getLogger("ziggurat.server")

SERVICE_NAME = match_service_pb2.DESCRIPTOR.services_by_name["MatchService"].full_name
BOT_SERVICE_NAME = bot_service_pb2.DESCRIPTOR.services_by_name["BotService"].full_name
ADMIN_SERVICE_NAME = admin_service_pb2.DESCRIPTOR.services_by_name["AdminService"].full_name
MAX_MESSAGE_BYTES = 64 * 1024
MAX_SOCKET_PATH = 107  # sun_path is 108 bytes on Linux, the last one a NUL


@dataclass(frozen=True, slots=True)
class ExtraService:
    """A service a host program adds to its server (:meth:`ZigguratServer.add_service`)."""

    service: ServiceDescriptor  # from the generated ``*_pb2.DESCRIPTOR.services_by_name``
    servicer: Any
    add_to_server: Callable[[Any, grpc.aio.Server], None]  # the generated ``add_XServicer_to_server``


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """Everything ``ziggurat serve`` can be told."""

    host: str = "0.0.0.0"
    port: int = 50051
    db_path: str = "ziggurat.db"
    durable: bool = False
    grace_seconds: float = 5.0
    rate_per_seat: float = 200.0
    burst_per_seat: float = 400.0
    max_live_matches: int = 20_000
    # Live matches one client address may have created (0 = no cap), and the matches it may
    # create per second (bursts of twice as many; 0 = no limit): its own rate, not rate_per_seat.
    max_matches_per_address: int = DEFAULT_MAX_MATCHES_PER_ADDRESS
    create_rate: float = 50.0
    # The per-move limit of matches created untimed (0: they stay untimed).
    untimed_move_limit_s: float = DEFAULT_UNTIMED_MOVE_LIMIT_S
    # How long a seat must be away before another seat may claim the match (ClaimAbandoned);
    # 0 = never. A competition server never allows claims, whatever this says.
    claim_after_s: float = DEFAULT_CLAIM_AFTER_MS / 1000
    # Open streams (Play and WatchMatch) at once: per match, and per seat of a match.
    max_streams_per_match: int = 2000
    max_streams_per_seat: int = 8
    # Announce the server on the LAN by mDNS (``ziggurat serve`` turns it on unless --no-mdns).
    mdns: bool = False
    # Tune the garbage collector for a long-running server process (see _tune_gc), and give
    # memory back to the OS after bursts of connections (ziggurat.hosting.memory); off for
    # servers embedded in another program, whose heap is not ours to tune.
    tune_gc: bool = False
    # TLS: PEM files of the server's certificate chain and private key (both or neither).
    tls_cert: str | None = None
    tls_key: str | None = None
    # With TLS on, the web port speaks HTTPS with the same files unless this says plain HTTP
    # (``--insecure-web``): it serves the whole MatchService, seat tokens included.
    insecure_web: bool = False
    # Also serve (without TLS) on this Unix socket path: a tournament's sandboxed programs have
    # no network, only this socket bound into their sandbox.
    unix_socket: str | None = None
    # Match lifetime and access (docs/protocol.md): waiting matches with no seat taken for
    # this long are cancelled; files holding the operator token and the create token.
    waiting_ttl_s: float = DEFAULT_WAITING_TTL_S
    # Invitations (BotService.InviteBot): how many one bot may have waiting to be played, and
    # how long one may wait before its match is cancelled and the bot released.
    max_pending_invitations: int = DEFAULT_MAX_PENDING_INVITATIONS
    invitation_ttl_s: float = DEFAULT_INVITATION_TTL_S
    admin_token_file: str | None = None
    create_token_file: str | None = None
    # Limits (docs/operations.md lists each, what happens when it is reached, and its tests).
    max_message_bytes: int = MAX_MESSAGE_BYTES
    max_streams_per_connection: int = 10_000
    max_connections_per_address: int = 500  # connections with calls on them; 0 = no cap
    max_streams_per_address: int = 5_000  # calls open at once; 0 = no cap
    max_streams: int = 20_000  # calls open at once from every address together; 0 = no cap
    # New calls are refused (SERVER_BUSY) while the resident memory is at this share of the
    # memory the server may use (memory_ceiling.MemoryCeiling); 0 = no ceiling.
    max_memory_percent: float = 80.0
    first_message_timeout: float = 10.0  # seconds for a Play stream's first message; 0 = none
    keepalive_time: float = 30.0  # seconds between the server's pings on a quiet connection
    keepalive_timeout: float = 10.0  # a ping unanswered this long closes the connection
    max_connection_idle: float = 60.0  # a connection without calls is closed after this; 0 = never
    max_connection_age: float = 3600.0  # every connection is asked to go away after this; 0 = never
    max_connection_age_grace: float = 300.0  # ...and its calls still open are cut this much later
    handshake_timeout: float = 20.0  # a new connection must finish its HTTP/2 (and TLS) set-up
    # The gate's alone (``gate``): connections open from one address, with calls or not, counted
    # from accept (0 = no cap); and the prefix IPv6 addresses are counted by for every
    # per-address cap of the gate. gRPC Python sees no connection before its first call.
    max_open_connections_per_address: int = 1_000
    ipv6_prefix_length: int = 64
    # The web port's connections open at once, counted from accept: from one address, and from
    # all together (0 = no cap; ziggurat.web.limits.OpenConnections).
    max_web_connections_per_address: int = 256
    max_web_connections: int = 4096
    # The web client (browser UI + MatchService over Connect) on this HTTP port of ``host``;
    # 0 picks a free port, None serves no web client.
    http_port: int | None = None
    # One of several worker processes (``ziggurat serve --workers N``, docs/scaling.md): the
    # public port is shared (SO_REUSEPORT), the worker also listens on its own port. The web
    # port is shared too, and a web call about another worker's match is made there
    # (ziggurat.hosting.forward) with the caller's address, which the owner believes next to
    # ``worker_secret`` (the supervisor's, one for all its workers).
    worker: WorkerOptions | None = None
    worker_secret: str | None = None
    # ``--gate``: ziggurat-gate (at ``gate_binary``, default .venv/bin/ziggurat-gate) holds the
    # public port and forwards to this server over a private Unix socket; it logs at ``log_level``.
    gate: bool = False
    gate_binary: str | None = None
    log_level: str = "info"
    # A tournament's own server (set by the tournament runner, never by ``ziggurat serve``):
    # only what participants and spectators need, per listener (ziggurat.api.competition).
    competition: bool = False

    @property
    def tls(self) -> bool:
        """True when the server speaks TLS."""
        return bool(self.tls_cert and self.tls_key)

    @property
    def web_tls(self) -> bool:
        """True when the web port (if any) speaks HTTPS: with TLS, unless ``insecure_web``."""
        return self.tls and not self.insecure_web

    @property
    def web_scheme(self) -> str:
        """The web port's URL scheme."""
        return "https" if self.web_tls else "http"


def grpc_options(options: ServeOptions) -> list[tuple[str, int]]:
    """GRPC's own channel arguments for the limits it enforces itself.

    Behind the gate the connection limits are the gate's, on the clients' connections: here
    they would hit the gate's few shared connections to this server instead, cutting every
    client's calls on one of them at its age, and capping the calls all clients have open
    at once by the streams one client connection may carry.
    """

    def ms(seconds: float) -> int:
        return max(1, int(seconds * 1000))

    out = [
        ("grpc.max_receive_message_length", options.max_message_bytes),
        ("grpc.keepalive_time_ms", ms(options.keepalive_time)),
        ("grpc.keepalive_timeout_ms", ms(options.keepalive_timeout)),
        # gRPC core (1.85) times out an unanswered ping by this one, default 60 s, whatever
        # keepalive_timeout_ms says (found by test_a_peer_that_stops_answering_pings_...).
        ("grpc.http2.ping_timeout_ms", ms(options.keepalive_timeout)),
        ("grpc.http2.min_ping_interval_without_data_ms", 10_000),
        ("grpc.keepalive_permit_without_calls", 1),
        # Keep pinging a quiet stream for as long as it lives (gRPC stops after 2 pings without
        # data by default), so that a peer which vanished is found out and its calls released.
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.max_concurrent_streams", 2**31 - 1 if options.gate else options.max_streams_per_connection),
        ("grpc.server_handshake_timeout_ms", ms(options.handshake_timeout)),
        # Workers share the public port: the kernel spreads new connections over them.
        ("grpc.so_reuseport", 1 if options.worker is not None else 0),
    ]
    if options.gate:
        # The gate's few connections come over a Unix socket, with fixed windows on the gate's
        # side: gRPC's bandwidth-delay probe has no network to measure there, and its PING on
        # every call that brings data costs each call a frame more each way.
        out.append(("grpc.http2.bdp_probe", 0))
        return out
    if options.max_connection_idle > 0:
        out.append(("grpc.max_connection_idle_ms", ms(options.max_connection_idle)))
    if options.max_connection_age > 0:
        out.append(("grpc.max_connection_age_ms", ms(options.max_connection_age)))
        out.append(("grpc.max_connection_age_grace_ms", ms(options.max_connection_age_grace)))
    return out


GC_THRESHOLD_GEN0 = 5_000


def _tune_gc() -> None:
    """Keep the cyclic garbage collector off the latency tail.

    With thousands of live matches the heap holds millions of objects, and CPython's
    default thresholds run full collections often enough to stall every match for
    hundreds of milliseconds (measured: benchmarks/capacity.py, p99 1.1 s → 0.11-0.15 s).
    Our objects are mostly acyclic (reference counting frees them), so the young
    generation may grow larger and full collections can be much rarer; objects alive at
    start-up are frozen out of collections altogether. A larger young generation was
    tried too: its pauses grow faster than they thin out (50,000 gave 130 ms pauses).
    """
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(max(GC_THRESHOLD_GEN0, gc.get_threshold()[0]), gen1, max(gen2, 1000))


class ZigguratServer:
    """A running server; use :meth:`start` and :meth:`stop` (or :func:`run` for the CLI)."""

    def __init__(self, options: ServeOptions, *, house_bots: HouseBotFactory | None = None) -> None:
        """Check the database path, take ownership of the database, open it; ``house_bots``
        builds the seater of built-in bots (AddBot), without it the server has none.

        Raises :class:`StartupError` (a one-line reason) when any of that is impossible.
        """
        self.options = options
        self.access = Access.from_files(options.admin_token_file, options.create_token_file)
        check_database_path(options.db_path)
        exposed = directory_exposure(options.db_path)
        if exposed:
            log.warning("%s", exposed)
        self.owner = DatabaseOwner(options.db_path)
        if self.owner.wal_lost:
            db = options.db_path
            log.warning("%s: run `ziggurat check --db %s`", lost_wal_message(db), db)
        try:
            self.store = Store(options.db_path, durable=options.durable)
        except sqlite3.Error as error:
            self.owner.release()
            raise StartupError(
                f"SQLite cannot use the database {options.db_path} ({error}): "
                f"run `ziggurat check --db {options.db_path}`"
            ) from None
        except BaseException:
            self.owner.release()
            raise
        self.owner.mark_open()
        self.manager = MatchManager(
            self.store,
            max_live_matches=options.max_live_matches,
            max_matches_per_address=options.max_matches_per_address,
            waiting_ttl_s=options.waiting_ttl_s,
            stream_limits=StreamLimits(options.max_streams_per_match, options.max_streams_per_seat),
            claim_after_ms=0 if options.competition else int(options.claim_after_s * 1000),
        )
        self.shards = options.worker.directory() if options.worker is not None else None
        self.manager.shards = self.shards
        self.own_port = 0  # a worker's own port (clients are sent there for its matches)
        self._own_request: tuple[int, str] = (0, "")  # with --gate: the own port to ask its gate for
        self.lister: ShardLister | None = None
        self.bots = BotRegistry(
            self.store,
            max_pending=options.max_pending_invitations,
            invitation_ttl_s=options.invitation_ttl_s,
        )
        self.house_bots: HouseBotSeater = house_bots(self.manager) if house_bots else NoHouseBots()
        self.health = health_aio.HealthServicer()
        # Each call's client address; with --gate, calls the gate forwards carry it.
        # The secret is the gate's word that a call's x-ziggurat-peer is the client's own.
        # A worker's gate is given the secret all workers share (the web port's calls between
        # workers carry it too).
        self._gate_secret = (options.worker_secret or new_secret()) if options.gate else None
        peer_secret = self._gate_secret or (options.worker_secret if options.worker is not None else None)
        self.peers = Peers(peer_secret, options.ipv6_prefix_length)
        self.memory_ceiling = MemoryCeiling(options.max_memory_percent)
        self.guard = Guard(
            GuardLimits(
                max_connections_per_address=options.max_connections_per_address,
                max_streams_per_address=options.max_streams_per_address,
                first_message_timeout=options.first_message_timeout,
                max_streams=options.max_streams,
                # A competition server counts a call with a token as its credential's.
                max_calls_per_credential=CALLS_PER_CREDENTIAL if options.competition else 0,
            ),
            self.peers,
            overloaded=lambda: self.memory_ceiling.over,
        )
        self.gate: Gate | None = None
        self.gate_dir: str | None = None  # holds the private socket the gate forwards to
        # Why the server stopped on its own (the gate exited), and whom to tell (run() stops).
        self.failure: str | None = None
        self.on_failure: Callable[[], None] | None = None
        # The guard is outermost: it admits or refuses a call before anything else runs; a
        # competition server's policy comes next, before any handler runs.
        self.competition = Competition(self.store) if options.competition else None
        interceptors: list[Any] = [self.guard, StatusGuard()]
        if self.competition is not None:
            interceptors.insert(1, CompetitionInterceptor(self.competition, self.peers))
        self.server = grpc.aio.server(interceptors=interceptors, options=grpc_options(options))
        self.port = 0
        self.http_port: int | None = None
        self.web: WebServer | None = None
        self._forward: Any = None  # a worker's ForwardToOwner (ziggurat.hosting.forward)
        self._web_socket: socket.socket | None = None
        self._tls: ssl.SSLContext | None = None  # the TLS files, loaded (also for the web port)
        self.advertiser: Advertiser | None = None
        self.extra_services: list[ExtraService] = []
        self.trimmer = memory.Trimmer(self.guard.open_calls)

    def preregister_bot(self, name: str, token_hash: str) -> None:
        """Bind bot ``name`` to the hash of a token the organiser issued; on a competition server
        it is also one of the only names ConnectBot accepts."""
        self.bots.preregister(name, token_hash)
        if self.competition is not None:
            self.competition.allow_bot(name)

    def add_service(self, extra: ExtraService) -> None:
        """Serve another service (a host's, e.g. a tournament's read-only one) on gRPC and, with
        the web client on, over Connect too; before :meth:`start`."""
        self.extra_services.append(extra)

    async def start(self) -> int:
        """Check the database, restore unfinished matches, bind, start serving; returns the port."""
        try:
            return await self._start()
        except BaseException:
            if self._web_socket is not None and self.web is None:
                self._web_socket.close()
            if self.gate is not None:
                await self.gate.kill()
                self.gate = None
            self.store.close()
            self.remove_gate_dir()
            self.owner.release(closed=True)
            raise

    async def _start(self) -> int:
        self.port = self._bind()  # first: a port in use fails at once, before any long check
        if self.options.http_port is not None:
            from ziggurat.web.serving import bind as bind_web

            try:
                self._web_socket = bind_web(
                    self.options.host, self.options.http_port, reuse_port=self.options.worker is not None
                )
            except OSError as error:
                why = error.strerror or str(error)
                raise StartupError(
                    f"cannot listen on {self.options.host}:{self.options.http_port} (web client): {why}"
                ) from None
        if self.options.gate:
            # Before the long checks too: what stops the gate is said in one line at once. It
            # forwards nothing before the server starts serving its socket (calls wait meanwhile).
            self.port = await self._start_gate()
            self._check_tls_files()  # for the web port: the gate found them usable
        self._check_integrity()
        self._quarantine_orphans()
        restored = self.manager.restore()
        self.house_bots.restore()  # the built-in bots of those matches play on
        if self.options.tune_gc:
            _tune_gc()
            self.trimmer.start()
        if restored:
            log.info("restored %d unfinished matches from %s", restored, self.options.db_path)
        self.manager.start_expiry()
        self.memory_ceiling.start()
        if self.manager.quarantined:
            log.error(
                "%d damaged matches quarantined (run `ziggurat check --db %s` for a full report)",
                len(self.manager.quarantined),
                self.options.db_path,
            )
        servicer = MatchServicer(
            self.manager,
            rate=self.options.rate_per_seat,
            burst=self.options.burst_per_seat,
            create_rate=self.options.create_rate,
            create_burst=max(1.0, 2 * self.options.create_rate),
            untimed_move_limit_ms=int(self.options.untimed_move_limit_s * 1000),
            access=self.access,
            house_bots=self.house_bots,
            peers=self.peers,
        )
        if self.shards is not None:
            servicer.address = advertised_address(self.options.host, self.own_port)
            servicer.lister = self.lister = ShardLister(self.shards, self.manager)
            self.shards.publish(servicer.address)
        # Registered, not generic: gRPC core then queues each method's incoming calls apart, and
        # a GetMatch is not handed to Python behind every Play stream that arrived before it
        # (docs/operations.md, "Memory and bursts of idle load").
        self.server.add_registered_method_handlers(  # type: ignore[attr-defined]  # not in the stubs yet
            SERVICE_NAME, method_handlers(servicer)
        )
        admin_service_pb2_grpc.add_AdminServiceServicer_to_server(
            AdminServicer(self.manager, self.access), self.server
        )
        bot_servicer = BotServicer(self.bots, self.manager, self.peers)
        bot_service_pb2_grpc.add_BotServiceServicer_to_server(bot_servicer, self.server)
        for extra in self.extra_services:
            extra.add_to_server(extra.servicer, self.server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            (
                SERVICE_NAME,
                BOT_SERVICE_NAME,
                ADMIN_SERVICE_NAME,
                *(extra.service.full_name for extra in self.extra_services),
                health.SERVICE_NAME,
                reflection.SERVICE_NAME,
            ),
            self.server,
        )
        await self.server.start()
        if self.options.http_port is not None:
            from ziggurat.web.app import WebApp
            from ziggurat.web.competition import CompetitionConnectInterceptor
            from ziggurat.web.connect import TOURNAMENT_SERVICE, Binding, browser_bindings
            from ziggurat.web.limits import BodyDeadline, ConnectionLimits, GuardInterceptor, OpenConnections
            from ziggurat.web.serving import WebServer

            assert self._web_socket is not None
            tournament = next(
                (e.servicer for e in self.extra_services if e.service == TOURNAMENT_SERVICE), None
            )
            bindings = browser_bindings(servicer, bot_servicer, tournament_servicer=tournament)
            bindings += [
                Binding(extra.service, extra.servicer)
                for extra in self.extra_services
                if extra.service != TOURNAMENT_SERVICE
            ]
            # The web port keeps the gRPC port's limits (docs/operations.md, "The web port").
            web_interceptors: list[Any] = [GuardInterceptor(self.guard)]
            if self.competition is not None:
                web_interceptors.append(CompetitionConnectInterceptor(self.competition))
            if self.shards is not None:
                from ziggurat.hosting.forward import ForwardToOwner

                self._forward = ForwardToOwner(self.shards, self.options.worker_secret)
                web_interceptors.append(self._forward)
            app = WebApp(
                bindings, interceptors=web_interceptors, max_message_bytes=self.options.max_message_bytes
            )
            self.web = WebServer(
                BodyDeadline(app, self.options.first_message_timeout),
                self._web_socket,
                grace_seconds=self.options.grace_seconds,
                handshake_timeout=self.options.handshake_timeout,
                idle_timeout=self.options.max_connection_idle,
                connections=OpenConnections(
                    ConnectionLimits(
                        self.options.max_web_connections_per_address,
                        self.options.max_web_connections,
                        self.options.ipv6_prefix_length,
                    )
                ),
                tls=self._tls if self.options.web_tls else None,
            )
            self.http_port = await self.web.start()
        serving = health_pb2.HealthCheckResponse.SERVING
        await self.health.set("", serving)
        await self.health.set(SERVICE_NAME, serving)
        if self.options.mdns:
            self.advertiser = _advertiser(
                self.options.host, self.port, self.options.tls, self.http_port, self.options.web_tls
            )
            if self.advertiser is not None:
                await self.advertiser.start()
        return self.port

    def _check_tls_files(self) -> None:
        """Load the TLS files as the web port will (kept for it): what is wrong with them is said
        in one line here, before gRPC or the gate would say it in lines of their own (a key that
        is not the certificate's made gRPC report only that it 'could not bind')."""
        if not self.options.tls:
            return
        assert self.options.tls_cert is not None and self.options.tls_key is not None
        from ziggurat.web.tls import server_context

        try:
            self._tls = server_context(self.options.tls_cert, self.options.tls_key)
        except ssl.SSLError as error:  # e.g. KEY_VALUES_MISMATCH: the key is not the certificate's
            raise StartupError(f"cannot use the TLS files (--tls-cert, --tls-key): {error}") from None
        except OSError as error:
            raise StartupError(f"cannot read the TLS files: {error}") from None

    def _check_integrity(self) -> None:
        """SQLite's own integrity check: problems are logged, and the server still starts (the
        matches that cannot be rebuilt are quarantined one by one by the restore that follows).
        """
        started = time.monotonic()
        try:
            problems = self.store.integrity_problems()
        except sqlite3.Error as error:
            problems = [str(error)]
        took = time.monotonic() - started
        if problems:
            log.error(
                "database %s fails SQLite's integrity check (%d problems, first: %s); serving what can "
                "be read; run `ziggurat check --db %s`",
                self.options.db_path,
                len(problems),
                problems[0],
                self.options.db_path,
            )
        else:
            log.info("database %s passed SQLite's integrity check in %.2f s", self.options.db_path, took)

    def _quarantine_orphans(self) -> None:
        """Events whose match row is gone: that match is damaged (DATA_LOSS, not NOT_FOUND)."""
        try:
            orphans = self.store.orphan_event_match_ids()
        except sqlite3.Error as error:
            log.error("cannot look for events without a match: %s", error)
            return
        for match_id in orphans:
            self.manager.quarantine(match_id, "its events are stored but its match row is gone")

    def _bind(self) -> int:
        """Bind the listening port, or raise a one-line StartupError saying why not."""
        address = f"{self.options.host}:{self.options.port}"
        if (self.options.port or self.options.gate) and self.options.worker is None:  # workers share theirs
            # Asked of the OS first: gRPC (or the gate) would say it in lines of its own. With the
            # gate even port 0 is asked here, so that a host that is not this machine's is too.
            problem = bind_failure(self.options.host, self.options.port)
            if problem:
                raise StartupError(f"cannot listen on {address}: {problem}")
        if self.options.gate:
            self._bind_upstream()
            if self.options.worker is not None:  # its gate serves its own port too
                bind_worker_socket(self.server, self.options.worker, self.options.db_path)
                self._own_request = own_port_for_gate(
                    self.options.host, self.options.worker, self.options.db_path
                )
            return 0  # the gate's port, known once it has started
        self._check_tls_files()
        credentials: grpc.ServerCredentials | None = None
        try:
            if self.options.tls:
                assert self.options.tls_cert is not None and self.options.tls_key is not None
                key = Path(self.options.tls_key).read_bytes()
                chain = Path(self.options.tls_cert).read_bytes()
                credentials = grpc.ssl_server_credentials([(key, chain)])
                port = self.server.add_secure_port(address, credentials)
            else:
                port = self.server.add_insecure_port(address)
        except OSError as error:
            raise StartupError(f"cannot read the TLS files: {error}") from None
        except RuntimeError:
            why = bind_failure(self.options.host, self.options.port) or "gRPC could not bind it"
            raise StartupError(f"cannot listen on {address}: {why}") from None
        if self.options.worker is not None:
            # A worker's own port speaks what the public port speaks (TLS too).
            self.own_port = bind_own(
                self.server, self.options.host, self.options.worker, self.options.db_path, credentials
            )
        self._bind_unix_socket()
        return port

    def _bind_unix_socket(self) -> None:
        if self.options.unix_socket:
            try:
                self.server.add_insecure_port(f"unix:{self.options.unix_socket}")
            except RuntimeError:
                raise StartupError(f"cannot listen on unix:{self.options.unix_socket}") from None

    def _gate_binary(self) -> Path:
        return Path(self.options.gate_binary) if self.options.gate_binary else default_binary()

    def _bind_upstream(self) -> None:
        """``--gate``: listen on a private Unix socket only, in a new 0700 directory; what the
        gate needs (its binary, the TLS files it will read) is checked first, in one line."""
        check_binary(self._gate_binary())
        if self.options.tls:  # readable; whether usable is said by the gate (then loaded for the web port)
            assert self.options.tls_cert is not None and self.options.tls_key is not None
            try:
                Path(self.options.tls_key).read_bytes()
                Path(self.options.tls_cert).read_bytes()
            except OSError as error:
                raise StartupError(f"cannot read the TLS files: {error}") from None
        remove_stale_private_dirs()  # left by servers killed with -9
        self.gate_dir = str(make_private_dir())  # mode 0700: this user's only
        upstream = self._upstream_socket()
        if len(upstream.encode()) > MAX_SOCKET_PATH:  # said by gRPC in a line of its own otherwise
            raise StartupError(
                f"the private socket's path {upstream} is longer than a Unix socket's path may be "
                f"({MAX_SOCKET_PATH} bytes): set TMPDIR to a shorter directory"
            )
        try:
            self.server.add_insecure_port(f"unix:{upstream}")
        except RuntimeError:
            raise StartupError(f"cannot listen on unix:{upstream}") from None
        self._bind_unix_socket()

    def _upstream_socket(self) -> str:
        """The private socket the gate forwards to, in ``gate_dir``."""
        assert self.gate_dir is not None
        return os.path.join(self.gate_dir, "upstream.sock")

    async def _start_gate(self) -> int:
        """Start ziggurat-gate on the public address, forwarding to the private socket; its port."""
        o = self.options
        limits = GateLimits(
            max_message_bytes=o.max_message_bytes,
            max_streams_per_connection=o.max_streams_per_connection,
            max_streams_per_address=o.max_streams_per_address,
            max_connections_per_address=o.max_connections_per_address,
            max_open_connections_per_address=o.max_open_connections_per_address,
            ipv6_prefix_length=o.ipv6_prefix_length,
            first_message_timeout=o.first_message_timeout,
            max_connection_idle=o.max_connection_idle,
            max_connection_age=o.max_connection_age,
            max_connection_age_grace=o.max_connection_age_grace,
            keepalive=o.keepalive_time,
            keepalive_timeout=o.keepalive_timeout,
            handshake_timeout=o.handshake_timeout,
            shutdown_timeout=o.grace_seconds + SHUTDOWN_MARGIN_S,
        )
        assert self._gate_secret is not None
        own, moved = self._own_request
        self.gate = Gate(
            self._gate_binary(),
            listen=listen_address(o.host, o.port),
            upstream=f"unix:{self._upstream_socket()}",
            limits=limits,
            secret=self._gate_secret,
            tls=(o.tls_cert, o.tls_key) if o.tls_cert and o.tls_key else None,
            log_level=o.log_level,
            on_exit=self._gate_exited,
            # A worker's gate shares the public port with the other workers' gates, as workers
            # without one share it, and serves the worker's own port.
            reuse_port=o.worker is not None,
            also_listen=listen_address(o.host, own) if o.worker is not None else None,
        )
        port = await self.gate.start()
        if o.worker is not None:
            self.own_port = self.gate.also_port
            if moved:
                warn_own_port_moved(o.worker, o.db_path, remembered_port(o.db_path), moved, self.own_port)
        return port

    def _gate_exited(self, code: int) -> None:
        """The gate exited while serving: nothing reaches this server any more; stop (exit 1)."""
        how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        self.failure = f"{BINARY_NAME} (the public port) {how} while serving: the server stops"
        log.error("%s", self.failure)
        if self.on_failure is not None:
            self.on_failure()

    def remove_gate_dir(self) -> None:
        """Remove the private socket's directory (``--gate``), if any."""
        if self.gate_dir is not None:
            shutil.rmtree(self.gate_dir, ignore_errors=True)
            self.gate_dir = None

    async def stop(self) -> None:
        """Graceful stop: stop advertising, NOT_SERVING, end streams, drain, close the database
        (with --gate: tell the gate first, and wait for it before the socket stops serving)."""
        if self.gate is not None:
            await self.gate.stop()  # from now on it answers new calls SERVER_SHUTTING_DOWN itself
        if self.advertiser is not None:
            await self.advertiser.stop()
            self.advertiser = None
        not_serving = health_pb2.HealthCheckResponse.NOT_SERVING
        await self.health.set("", not_serving)
        await self.health.set(SERVICE_NAME, not_serving)
        await self.trimmer.stop()
        await self.memory_ceiling.stop()
        ended = self.guard.shutdown()
        if ended:
            log.info("ending %d open streams (UNAVAILABLE SERVER_SHUTTING_DOWN)", ended)
        await self.house_bots.close()
        self.manager.close()
        # Unary calls of both ports get the grace period, before the web port stops accepting.
        cut = await self.guard.drain(self.options.grace_seconds)
        if cut:
            log.info("ended %d unary calls still running after the grace period", cut)
        if self.web is not None:
            await self.web.stop()
        if self._forward is not None:
            await self._forward.close()
        if self.gate is not None:
            await self.gate.wait()  # the calls it forwarded have ended (their status passed on)
        await self.server.stop(self.options.grace_seconds)
        self.remove_gate_dir()
        # The final checkpoint waits for readers of old snapshots (a backup, `ziggurat check`):
        # on a thread, so that a second signal can still force the exit meanwhile; the
        # connection is taken out of the event loop's use first (Store.detach).
        await asyncio.to_thread(self.store.detach())
        if self.lister is not None:
            await self.lister.close()
        if self.shards is not None:
            self.shards.close()
        self.owner.release(closed=True)


class ServerFailed(Exception):
    """The server stopped on its own (its gate exited); the reason was logged at ERROR."""


def _advertiser(host: str, port: int, tls: bool, http_port: int | None, web_tls: bool) -> Advertiser | None:
    """The LAN advertiser, or None (said in one line) when the ``mdns`` extra is not installed.

    Why not refuse to start: announcing is the default, and a server installed without the
    extra (``pip install .``, headless) serves all the same; clients reach it by its address.
    """
    try:
        from ziggurat.hosting.mdns import Advertiser
    except ModuleNotFoundError as error:
        missing = extras.missing_from(error, "mdns")
        if missing is None:
            raise
        log.warning(
            "not announcing on the LAN (mDNS): %s is not installed (%s to announce, or --no-mdns)",
            missing,
            extras.install_hint("mdns"),
        )
        return None
    return Advertiser(host, port, tls=tls, http_port=http_port, web_tls=web_tls)


def browser_host(host: str) -> str:
    """The host to type into a browser for a server bound to ``host``: for a wildcard (every
    interface), this machine's LAN address, which other machines can open too (else
    ``localhost``); an IPv6 address in brackets, as a URL writes it."""
    if host in ("", "0.0.0.0", "::", "[::]"):
        host = lan_address() or "localhost"
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def lan_address() -> str | None:
    """The IPv4 address of this machine on its network: the source of its route out (connecting a
    UDP socket only looks the route up, it sends nothing); None without a route."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # TEST-NET-1 (RFC 5737): never a real host
        address: str = probe.getsockname()[0]
        if not address.startswith(("127.", "0.")):
            return address
    return None


async def run(
    options: ServeOptions,
    *,
    on_ready: Callable[[int, int | None], None] | None = None,
    house_bots: HouseBotFactory | None = None,
    on_server: Callable[[ZigguratServer], None] | None = None,
) -> int:
    """Serve until SIGTERM/SIGINT, then shut down in order; a second signal exits at once.

    Returns the signal that stopped it (the command's exit code tells Ctrl-C from SIGTERM).
    Raises :class:`StartupError` when the server cannot start, :class:`ServerFailed` (already
    logged) when it stopped on its own because its gate exited.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    received: list[int] = []

    servers: list[ZigguratServer] = []

    def on_signal(sig: int) -> None:
        if stop.is_set() and options.worker is not None:
            # A worker's supervisor stops it with one SIGTERM and forces with SIGKILL. The
            # repeats come from the kernel: PR_SET_PDEATHSIG fires each time a thread of the
            # dead supervisor exits (its children pass to the next thread first), and exiting
            # at once on the second would skip the drain and the clean close of the shard.
            log.info("signal %d again: already shutting down", sig)
            return
        if stop.is_set():
            log.warning("second signal: exiting now")
            for running in servers:  # its gate dies with it (ziggurat.hosting.gate); not its socket
                running.remove_gate_dir()
            os._exit(1)
        log.info("shutting down (send the signal again to force)")
        received.append(sig)
        stop.set()

    # Before "listening" is printed: a supervisor may signal as soon as it reads that line.
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal, sig)
    open_files = raise_open_files_limit()
    if options.http_port is not None and open_files < 2 * options.max_web_connections:
        log.warning(
            "the open-files limit (%d) is under twice --max-web-connections (%d): the web port's "
            "connections could leave the gRPC port's clients few descriptors",
            open_files,
            options.max_web_connections,
        )
    server = ZigguratServer(options, house_bots=house_bots)
    servers.append(server)
    server.on_failure = stop.set  # the gate exited: stop as if told to, then say so
    port = await server.start()
    if on_server is not None:
        on_server(server)
    log.info(
        "ziggurat listening on %s:%d%s (database %s)",
        options.host,
        port,
        f" through {BINARY_NAME} (pid {server.gate.pid})" if server.gate is not None else "",
        options.db_path,
    )
    if server.http_port is not None:
        web = f"{options.web_scheme}://{browser_host(options.host)}:{server.http_port}/"
        log.info("web client on %s", web)
        if options.tls and not options.web_tls:
            log.warning(
                "the web port %s speaks plain HTTP (--insecure-web) while the gRPC port has TLS: its "
                "calls, seat tokens included, cross the network unencrypted",
                web,
            )
    if on_ready is not None:
        on_ready(port, server.http_port)
    await stop.wait()
    await server.stop()
    log.info("stopped")
    if server.failure is not None:
        raise ServerFailed(server.failure)
    return received[0]
