"""``ziggurat serve``: the main job — the match server on an embedded SQLite database."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from dataclasses import replace
from typing import Any

from ziggurat.api.access import Access
from ziggurat.api.bots import DEFAULT_INVITATION_TTL_S, DEFAULT_MAX_PENDING_INVITATIONS
from ziggurat.cli import exits
from ziggurat.cli.commands import summary_of
from ziggurat.core.manager import DEFAULT_WAITING_TTL_S
from ziggurat.core.timecontrol import MAX_MS
from ziggurat.hosting.gate import default_binary
from ziggurat.hosting.lograte import RepeatFilter
from ziggurat.hosting.ports import bind_failure
from ziggurat.hosting.server import ServeOptions, ServerFailed, ZigguratServer, browser_host, run
from ziggurat.hosting.shards import WorkerOptions, stray_shards
from ziggurat.hosting.supervisor import WORKER_SECRET_ENV, Supervisor
from ziggurat.store.startup import StartupError

DEFAULT_PORT = 50051
DEFAULTS = ServeOptions()


def port_number(text: str) -> int:
    """A TCP port 0..65535 (0 picks a free one); anything else is refused, never wrapped."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0..65535; 0 picks a free one)")
    return port


def _count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must be 0 or more")
    return value


def _seconds(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError("must be 0 or more seconds")
    return value


DEFAULT_HTTP_PORT = 8080


def register(commands: Any) -> None:
    """Add ``serve``."""
    parser = commands.add_parser(
        "serve",
        help=summary_of("serve"),
        description=(
            "Run the authoritative match server. Every match and event is stored in an SQLite "
            "database file (WAL); unfinished matches resume after a restart."
        ),
    )
    parser.add_argument(
        "--host",
        default=os.environ.get("ZIGGURAT_HOST", "0.0.0.0"),
        help="address to listen on (default 0.0.0.0: all interfaces, for LAN play)",
    )
    parser.add_argument(
        "--port",
        type=port_number,
        default=os.environ.get("ZIGGURAT_PORT", str(DEFAULT_PORT)),
        help=f"port to listen on; 0 picks a free one (default {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--http-port",
        type=port_number,
        default=os.environ.get("ZIGGURAT_HTTP_PORT") or None,
        help=(
            f"port of the web client (browser UI and MatchService over Connect); 0 picks a free one "
            f"(default {DEFAULT_HTTP_PORT} with the default --port; with another --port, a free one)"
        ),
    )
    parser.add_argument("--no-web", dest="web", action="store_false", help="serve no web client")
    parser.add_argument(
        "--db",
        default=os.environ.get("ZIGGURAT_DB", "ziggurat.db"),
        help="SQLite database file (default ./ziggurat.db, or $ZIGGURAT_DB)",
    )
    parser.add_argument(
        "--durable",
        action="store_true",
        help="fsync every commit (survives power loss, slower); default survives crashes",
    )
    parser.add_argument("--grace", type=float, default=5.0, help="seconds to drain calls on shutdown")
    parser.add_argument(
        "--rate", type=float, default=200.0, help="requests per second per seat (0 = unlimited)"
    )
    parser.add_argument("--max-matches", type=int, default=20_000, help="maximum live matches")
    parser.add_argument(
        "--no-mdns",
        dest="mdns",
        action="store_false",
        help="do not announce the server on the LAN (mDNS _ziggurat._tcp; default: announce)",
    )
    parser.add_argument(
        "--tls-cert",
        metavar="PEM",
        help=(
            "serve TLS with this certificate chain (with --tls-key), on every port: gRPC, and the "
            "web port as HTTPS (`ziggurat tls init` makes a LAN CA and certificate)"
        ),
    )
    parser.add_argument("--tls-key", metavar="PEM", help="the private key of --tls-cert")
    parser.add_argument(
        "--insecure-web",
        action="store_true",
        help=(
            "with --tls-cert: serve the web port as plain HTTP all the same (it carries the whole "
            "API, seat tokens included; a warning is logged)"
        ),
    )
    parser.add_argument(
        "--waiting-ttl",
        type=float,
        default=DEFAULT_WAITING_TTL_S,
        metavar="SECONDS",
        help=f"cancel a waiting match with no seat taken for this long (default {DEFAULT_WAITING_TTL_S:.0f})",
    )
    parser.add_argument(
        "--max-pending-invitations",
        type=int,
        default=DEFAULT_MAX_PENDING_INVITATIONS,
        metavar="N",
        help="invitations (InviteBot) one remote bot may have waiting to be played "
        f"(default {DEFAULT_MAX_PENDING_INVITATIONS})",
    )
    parser.add_argument(
        "--invitation-ttl",
        type=float,
        default=DEFAULT_INVITATION_TTL_S,
        metavar="SECONDS",
        help="cancel the match of an invitation not played within this time and release the bot "
        f"(default {DEFAULT_INVITATION_TTL_S:.0f})",
    )
    parser.add_argument(
        "--admin-token-file", metavar="FILE", help="operator token (AdminService: abort, close creation)"
    )
    parser.add_argument(
        "--create-token-file", metavar="FILE", help="require this token (Bearer) to create matches"
    )
    parser.add_argument(
        "--max-streams-per-match",
        type=int,
        default=2000,
        metavar="N",
        help="open Play/WatchMatch streams per match (default 2000; beyond: TOO_MANY_STREAMS)",
    )
    parser.add_argument(
        "--max-streams-per-seat",
        type=int,
        default=8,
        metavar="N",
        help="open streams with one seat's token (default 8)",
    )
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    parser.add_argument(
        "--workers",
        type=_workers,
        default=1,
        metavar="N",
        help=(
            "serve with N worker processes (one core each) on one public address, matches sharded "
            "over N database files: --db and <stem>.shardK<suffix> beside it (docs/scaling.md)"
        ),
    )
    parser.add_argument(
        "--worker-ports",
        type=port_number,
        default=None,
        metavar="FIRST",
        help=(
            "with --workers N: worker K listens on its own port FIRST+K (for a firewall); by default "
            "each worker keeps the port it had last time, a free one at its first start (docs/scaling.md)"
        ),
    )
    parser.add_argument(
        "--gate",
        action="store_true",
        help=(
            "put ziggurat-gate (Rust; built by ./scripts/serve --gate) on the public port: it takes the "
            "connections, enforces the connection limits and the first-message timeout, terminates "
            "TLS, and forwards calls to this server over a private Unix socket (docs/operations.md, "
            "'The gate'); with --workers each worker runs one, on the shared port and its own"
        ),
    )
    parser.add_argument(
        "--gate-binary",
        metavar="PATH",
        default=None,
        help=f"the ziggurat-gate program to run with --gate (default {default_binary()})",
    )
    # Set by the supervisor on the command line of each worker it starts.
    parser.add_argument("--shard", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--own-port", type=port_number, default=0, help=argparse.SUPPRESS)
    _limits(parser)
    parser.set_defaults(handler=_serve)


def _limits(parser: argparse.ArgumentParser) -> None:
    """The operator's limits; docs/operations.md says what happens when each is reached."""
    group = parser.add_argument_group("limits (docs/operations.md; 0 = no limit unless said)")
    d = DEFAULTS
    group.add_argument(
        "--max-message-bytes",
        type=_count,
        default=d.max_message_bytes,
        help=f"largest request a client may send (default {d.max_message_bytes})",
    )
    group.add_argument(
        "--max-streams-per-connection",
        type=_count,
        default=d.max_streams_per_connection,
        help=f"concurrent calls on one connection (HTTP/2; default {d.max_streams_per_connection})",
    )
    group.add_argument(
        "--max-connections-per-address",
        type=_count,
        default=d.max_connections_per_address,
        help=f"connections with calls open from one IP address (default {d.max_connections_per_address})",
    )
    group.add_argument(
        "--max-streams-per-address",
        type=_count,
        default=d.max_streams_per_address,
        help=f"calls open at once from one IP address (default {d.max_streams_per_address})",
    )
    group.add_argument(
        "--max-streams",
        type=_count,
        default=d.max_streams,
        metavar="N",
        help=(
            f"calls open at once from all clients together, on every port (default {d.max_streams}; "
            f"beyond: SERVER_BUSY)"
        ),
    )
    group.add_argument(
        "--max-memory-percent",
        type=_percent,
        default=d.max_memory_percent,
        metavar="PERCENT",
        help=(
            f"refuse new calls (SERVER_BUSY) while the server's resident memory is at this share of "
            f"the machine's memory or its cgroup's limit (default {d.max_memory_percent:g}; 0 = no ceiling)"
        ),
    )
    group.add_argument(
        "--max-open-connections-per-address",
        type=_count,
        action=_GateOnly,
        default=d.max_open_connections_per_address,
        metavar="N",
        help=(
            f"with --gate only: connections open from one IP address, with calls or not, counted "
            f"from accept; one more is closed at once (default {d.max_open_connections_per_address})"
        ),
    )
    group.add_argument(
        "--max-web-connections-per-address",
        type=_count,
        default=d.max_web_connections_per_address,
        metavar="N",
        help=(
            f"web-port connections open from one IP address, counted from accept; one more is "
            f"closed at once (default {d.max_web_connections_per_address})"
        ),
    )
    group.add_argument(
        "--max-web-connections",
        type=_count,
        default=d.max_web_connections,
        metavar="N",
        help=f"web-port connections open from all clients together (default {d.max_web_connections})",
    )
    group.add_argument(
        "--ipv6-prefix-length",
        type=_ipv6_prefix,
        default=d.ipv6_prefix_length,
        metavar="BITS",
        help=(
            f"IPv6 clients count as one address per this prefix, for every per-address cap and "
            f"the per-address create rate (1-128; 128: each address alone; default {d.ipv6_prefix_length})"
        ),
    )
    group.add_argument(
        "--max-matches-per-address",
        type=_count,
        default=d.max_matches_per_address,
        metavar="N",
        help=(
            f"live (waiting or active) matches one IP address may have created "
            f"(default {d.max_matches_per_address}; beyond: TOO_MANY_MATCHES_CREATED)"
        ),
    )
    group.add_argument(
        "--create-rate",
        type=_rate,
        default=d.create_rate,
        metavar="PER_SECOND",
        help=(
            f"matches one IP address may create (and built-in bots it may seat) per second, "
            f"bursts of twice as many (default {d.create_rate:g}; 0 = no limit)"
        ),
    )
    group.add_argument(
        "--untimed-move-limit",
        type=_move_limit,
        default=d.untimed_move_limit_s,
        metavar="SECONDS",
        help=(
            f"the per-move limit of a match created with neither a move limit nor a clock, so that "
            f"an abandoned one ends (default {d.untimed_move_limit_s:g}; 0 = such matches stay untimed)"
        ),
    )
    group.add_argument(
        "--claim-after",
        type=_seconds,
        default=d.claim_after_s,
        metavar="SECONDS",
        help=(
            f"a player may claim a match (ClaimAbandoned) against the seats that have had no stream "
            f"open this long (default {d.claim_after_s:g}; 0 = no claims)"
        ),
    )
    group.add_argument(
        "--first-message-timeout",
        type=_seconds,
        default=d.first_message_timeout,
        metavar="SECONDS",
        help=f"a Play stream must send its first message within this (default {d.first_message_timeout:g})",
    )
    group.add_argument(
        "--keepalive",
        type=_seconds,
        default=d.keepalive_time,
        metavar="SECONDS",
        help=f"ping a quiet connection this often (default {d.keepalive_time:g})",
    )
    group.add_argument(
        "--keepalive-timeout",
        type=_seconds,
        default=d.keepalive_timeout,
        metavar="SECONDS",
        help=f"close a connection whose ping is unanswered this long (default {d.keepalive_timeout:g})",
    )
    group.add_argument(
        "--max-connection-idle",
        type=_seconds,
        default=d.max_connection_idle,
        metavar="SECONDS",
        help=f"close a connection without calls after this (default {d.max_connection_idle:g})",
    )
    group.add_argument(
        "--max-connection-age",
        type=_seconds,
        default=d.max_connection_age,
        metavar="SECONDS",
        help=f"ask every connection to reconnect after this (default {d.max_connection_age:g})",
    )
    group.add_argument(
        "--max-connection-age-grace",
        type=_seconds,
        default=d.max_connection_age_grace,
        metavar="SECONDS",
        help=f"then cut its calls still open after this (default {d.max_connection_age_grace:g})",
    )
    group.add_argument(
        "--handshake-timeout",
        type=_seconds,
        default=d.handshake_timeout,
        metavar="SECONDS",
        help=f"a new connection must finish its set-up within this (default {d.handshake_timeout:g})",
    )


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError("must be 0 or more per second")
    return value


def _percent(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError("must be 0 to 100")
    return value


def _move_limit(text: str) -> float:
    value = _seconds(text)
    if value * 1000 > MAX_MS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_MS // 1000} seconds")
    return value


def _ipv6_prefix(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a prefix length") from None
    if not 1 <= value <= 128:
        raise argparse.ArgumentTypeError("must be 1 to 128")
    return value


class _GateOnly(argparse.Action):
    """Stores an option that only the gate can enforce, and notes that it was given: gRPC Python
    is told nothing of a connection before its first call, so without --gate such an option
    would be accepted and silently do nothing (:func:`_gate_only_without_gate` refuses it)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        spelt = option or "--" + self.dest.replace("_", "-")
        namespace.gate_only_given = [*getattr(namespace, "gate_only_given", []), spelt]


def _gate_only_without_gate(args: argparse.Namespace) -> str | None:
    """The first gate-only option given without ``--gate``, as spelt on the command line."""
    given: list[str] = getattr(args, "gate_only_given", [])
    return None if args.gate or not given else given[0]


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of workers") from None
    if not 1 <= value <= 64:
        raise argparse.ArgumentTypeError("must be 1 to 64")
    return value


def _http_port(args: argparse.Namespace) -> int | None:
    """The web client's port: as given; else 8080 beside the default gRPC port, and a free one
    beside any other (servers started on chosen ports, as tests and tournaments do, must not
    all reach for 8080).
    """
    if not args.web:
        return None
    if args.http_port is not None:
        return int(args.http_port)
    return DEFAULT_HTTP_PORT if int(args.port) == DEFAULT_PORT else 0


def _serve(args: argparse.Namespace) -> int:
    if args.shard is None:
        stray = stray_shards(args.db, args.workers)
        if stray:
            print(
                f"error: {stray[0]} is a shard of more than {args.workers} workers: its matches would "
                f"have no owner; serve with --workers {_shard_number(stray[-1]) + 1} or more",
                file=sys.stderr,
            )
            return 2
    gate_only = _gate_only_without_gate(args)
    if gate_only is not None:
        print(
            f"error: {gate_only} applies to the gate only, and would do nothing without it: add "
            "--gate (docs/operations.md, 'Limits')",
            file=sys.stderr,
        )
        return 2
    if bool(args.tls_cert) != bool(args.tls_key):
        print("error: --tls-cert and --tls-key go together", file=sys.stderr)
        return 2
    if args.insecure_web and not args.tls_cert:
        print(
            "error: --insecure-web only applies with --tls-cert/--tls-key (without TLS the web "
            "port speaks plain HTTP already)",
            file=sys.stderr,
        )
        return 2
    if args.shard is None and args.worker_ports is not None:
        problem = _worker_ports_problem(args)
        if problem:
            print(f"error: {problem}", file=sys.stderr)
            return 2
    if args.workers > 1 and args.shard is None:
        return _supervise(args)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    repeats = RepeatFilter()  # repeated warnings and errors counted, not printed (docs/operations.md)
    for handler in logging.getLogger().handlers:
        handler.addFilter(repeats)
    options = ServeOptions(
        host=args.host,
        port=args.port,
        db_path=args.db,
        durable=args.durable,
        grace_seconds=args.grace,
        rate_per_seat=args.rate,
        burst_per_seat=max(1.0, 2 * args.rate),
        max_live_matches=args.max_matches,
        max_matches_per_address=args.max_matches_per_address,
        create_rate=args.create_rate,
        untimed_move_limit_s=args.untimed_move_limit,
        claim_after_s=args.claim_after,
        max_streams_per_match=max(1, args.max_streams_per_match),
        max_streams_per_seat=max(1, args.max_streams_per_seat),
        mdns=args.mdns,
        tune_gc=True,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        insecure_web=args.insecure_web,
        waiting_ttl_s=args.waiting_ttl,
        max_pending_invitations=args.max_pending_invitations,
        invitation_ttl_s=args.invitation_ttl,
        admin_token_file=args.admin_token_file,
        create_token_file=args.create_token_file,
        max_message_bytes=args.max_message_bytes,
        max_streams_per_connection=args.max_streams_per_connection,
        max_connections_per_address=args.max_connections_per_address,
        max_streams_per_address=args.max_streams_per_address,
        max_streams=args.max_streams,
        max_memory_percent=args.max_memory_percent,
        first_message_timeout=args.first_message_timeout,
        keepalive_time=args.keepalive,
        keepalive_timeout=args.keepalive_timeout,
        max_connection_idle=args.max_connection_idle,
        max_connection_age=args.max_connection_age,
        max_connection_age_grace=args.max_connection_age_grace,
        handshake_timeout=args.handshake_timeout,
        max_open_connections_per_address=args.max_open_connections_per_address,
        ipv6_prefix_length=args.ipv6_prefix_length,
        max_web_connections_per_address=args.max_web_connections_per_address,
        max_web_connections=args.max_web_connections,
        http_port=_http_port(args),
        gate=args.gate,
        gate_binary=args.gate_binary,
        log_level=args.log_level,
    )
    if args.shard is not None:
        worker = WorkerOptions(index=args.shard, count=args.workers, base_db=args.db, own_port=args.own_port)
        options = replace(
            options,
            worker=worker,
            worker_secret=os.environ.get(WORKER_SECRET_ENV) or None,
            db_path=worker.db_path,
            mdns=args.mdns and args.shard == 0,
        )

    if not args.waiting_ttl > 0:
        print("error: --waiting-ttl must be a positive number of seconds", file=sys.stderr)
        return 2
    if not args.invitation_ttl > 0:
        print("error: --invitation-ttl must be a positive number of seconds", file=sys.stderr)
        return 2
    if args.max_pending_invitations < 1:
        print("error: --max-pending-invitations must be at least 1", file=sys.stderr)
        return 2
    try:
        Access.from_files(args.admin_token_file, args.create_token_file)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2

    def ready(port: int, http_port: int | None) -> None:
        if args.shard is not None:  # read by the supervisor (ziggurat.hosting.supervisor)
            web = f", web port {http_port}" if http_port is not None else ""
            print(
                f"ziggurat worker {args.shard} listening on {args.host}:{port}{web}, own port {own()}",
                flush=True,
            )
            return
        print(f"ziggurat listening on {args.host}:{port}", flush=True)
        if http_port is not None:
            print(
                f"ziggurat web client on {options.web_scheme}://{browser_host(args.host)}:{http_port}/",
                flush=True,
            )

    servers: list[ZigguratServer] = []

    def own() -> int:
        return servers[0].own_port if servers else 0

    try:
        from ziggurat.bots.house import HouseBots

        stopped_by = asyncio.run(run(options, on_ready=ready, house_bots=HouseBots, on_server=servers.append))
    except StartupError as error:
        print(f"error: {error}", file=sys.stderr)
        return exits.FAILED
    except ServerFailed:  # its gate exited: said in one ERROR line already
        return exits.FAILED
    except KeyboardInterrupt:
        return exits.INTERRUPTED
    finally:
        repeats.flush(logging.getLogger("ziggurat.server"))
    # SIGTERM is how a supervisor stops a server (exit 0); Ctrl-C (SIGINT) is an interruption,
    # except for a worker of `--workers`, which drains as told whichever signal reached it.
    interrupted = stopped_by == signal.SIGINT and args.shard is None
    return exits.INTERRUPTED if interrupted else exits.OK


def _supervise(args: argparse.Namespace) -> int:
    """``--workers N``: start N workers, one per shard, on one public port, and keep them up."""
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if args.port:
        # Workers bind with SO_REUSEPORT, which would let them share a port that another server
        # started with it holds: ask the OS first, as a single server does.
        problem = bind_failure(args.host, args.port)
        if problem:
            print(f"error: cannot listen on {args.host}:{args.port}: {problem}", file=sys.stderr)
            return 1
    if args.web and args.http_port:
        problem = bind_failure(args.host, args.http_port)
        if problem:
            print(
                f"error: cannot listen on {args.host}:{args.http_port} (web client): {problem}",
                file=sys.stderr,
            )
            return 1
    base = _worker_arguments(sys.argv)

    web_port = _http_port(args)

    def command(index: int, port: int, own_port: int) -> list[str]:
        # Worker 0 binds the web port asked for (0: a free one); the others bind the one it got.
        http_port = supervisor.http_port if supervisor.http_port is not None else web_port
        web = ["--no-web"] if http_port is None else ["--http-port", str(http_port)]
        return [
            sys.executable,
            "-m",
            "ziggurat.cli.main",
            "serve",
            *base,
            "--workers",
            str(args.workers),
            "--shard",
            str(index),
            "--port",
            str(port),
            "--own-port",
            str(own_port),
            "--host",
            args.host,
            "--db",
            args.db,
            *web,
        ]

    def ready(port: int, own_ports: list[int]) -> None:
        print(f"ziggurat listening on {args.host}:{port}", flush=True)
        owns = ", ".join(str(p) for p in own_ports)
        print(f"ziggurat workers: {args.workers} (own ports {owns})", flush=True)
        if supervisor.http_port is not None:
            scheme = "https" if args.tls_cert and not args.insecure_web else "http"
            print(
                f"ziggurat web client on {scheme}://{browser_host(args.host)}:{supervisor.http_port}/",
                flush=True,
            )

    supervisor = Supervisor(
        args.workers,
        command,
        host=args.host,
        port=args.port,
        grace=args.grace,
        on_ready=ready,
        first_own_port=args.worker_ports or 0,
    )
    status = supervisor.run()
    # Ctrl-C drained the workers as SIGTERM does; it is still an interruption (README, exit codes)
    return exits.INTERRUPTED if status == 0 and supervisor.stopped_by == signal.SIGINT else status


def _worker_ports_problem(args: argparse.Namespace) -> str:
    """Why ``--worker-ports FIRST`` cannot be served as given ("" when it can)."""
    first, count = int(args.worker_ports), int(args.workers)
    if count < 2:
        return "--worker-ports gives each worker of --workers N (2 or more) its own port; add --workers"
    last = first + count - 1
    if first == 0 or last > 65535:
        return (
            f"--worker-ports {first} with --workers {count} needs ports {first}..{last}: "
            f"use 1..{65536 - count}"
        )
    for option, port in (("--port", int(args.port)), ("the web port", _http_port(args) or 0)):
        if first <= port <= last:
            return f"{option} {port} is one of the workers' own ports ({first}..{last}): pick apart"
    return ""


def _shard_number(path: Any) -> int:
    return int(str(path.name).split(".shard", 1)[1].split(".", 1)[0])


def _worker_arguments(argv: list[str]) -> list[str]:
    """The options ``serve`` was given (after the word ``serve``), passed on to every worker;
    the supervisor appends what differs per worker (argparse keeps the last value)."""
    words = list(argv[1:])
    return words[words.index("serve") + 1 :] if "serve" in words else []
