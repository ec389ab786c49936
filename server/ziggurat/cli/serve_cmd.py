"""``ziggurat serve``: the main job — the match server on an embedded SQLite database."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from typing import Any

from ziggurat.service.access import Access
from ziggurat.service.manager import DEFAULT_WAITING_TTL_S
from ziggurat.service.server import ServeOptions, run

DEFAULT_PORT = 50051


def register(commands: Any) -> None:
    """Add ``serve``."""
    parser = commands.add_parser(
        "serve",
        help="run the match server",
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
        type=int,
        default=int(os.environ.get("ZIGGURAT_PORT", DEFAULT_PORT)),
        help=f"port to listen on; 0 picks a free one (default {DEFAULT_PORT})",
    )
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
        "--tls-cert", metavar="PEM", help="serve TLS with this certificate chain (with --tls-key)"
    )
    parser.add_argument("--tls-key", metavar="PEM", help="the private key of --tls-cert")
    parser.add_argument(
        "--waiting-ttl",
        type=float,
        default=DEFAULT_WAITING_TTL_S,
        metavar="SECONDS",
        help=f"cancel a waiting match with no seat taken for this long (default {DEFAULT_WAITING_TTL_S:.0f})",
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
    parser.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    options = ServeOptions(
        host=args.host,
        port=args.port,
        db_path=args.db,
        durable=args.durable,
        grace_seconds=args.grace,
        rate_per_seat=args.rate,
        burst_per_seat=max(1.0, 2 * args.rate),
        max_live_matches=args.max_matches,
        max_streams_per_match=max(1, args.max_streams_per_match),
        max_streams_per_seat=max(1, args.max_streams_per_seat),
        mdns=args.mdns,
        tune_gc=True,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        waiting_ttl_s=args.waiting_ttl,
        admin_token_file=args.admin_token_file,
        create_token_file=args.create_token_file,
    )

    if not args.waiting_ttl > 0:
        print("error: --waiting-ttl must be a positive number of seconds", file=sys.stderr)
        return 2
    try:
        Access.from_files(args.admin_token_file, args.create_token_file)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if bool(args.tls_cert) != bool(args.tls_key):
        print("error: --tls-cert and --tls-key go together", file=sys.stderr)
        return 2

    def ready(port: int) -> None:
        print(f"ziggurat listening on {args.host}:{port}", flush=True)

    try:
        asyncio.run(run(options, on_ready=ready))
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0
