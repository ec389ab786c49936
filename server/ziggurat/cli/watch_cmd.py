"""``ziggurat watch MATCH_ID``: spectate a match in the terminal UI (no seat, no input).

A spectator sees the public view only (no secret objective) until the end, when
the reveal and the seed check are shown as for players. An unknown match, or a server
that does not answer within a few seconds, is reported on stderr with exit status 1
(before the screen opens when ``--server`` is given).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from ziggurat.cli import exits, terminal_ui
from ziggurat.cli.commands import summary_of
from ziggurat.cli.tls_options import Tls, TlsOptionError, add_tls_arguments, tls_from_args


def register(commands: Any) -> None:
    """Add ``watch``."""
    parser = commands.add_parser(
        "watch",
        help=summary_of("watch"),
        description="Follow a match live as a spectator; without --server, pick a server found on the LAN.",
    )
    parser.add_argument("match_id", help="the match to watch")
    parser.add_argument("--server", metavar="HOST:PORT", help="connect here instead of searching the LAN")
    terminal_ui.add_language_argument(parser)
    add_tls_arguments(parser)
    parser.set_defaults(handler=_watch)


def _watch(args: argparse.Namespace) -> int:
    problem = terminal_ui.missing("watch")
    if problem is not None:
        print(problem, file=sys.stderr)
        return exits.FAILED
    from ziggurat.cli.interrupt import run_app
    from ziggurat.tui import ZigguratApp
    from ziggurat.tui.watching import WatchError

    try:
        tls = tls_from_args(args)
    except TlsOptionError as error:
        print(f"ziggurat watch: {error}", file=sys.stderr)
        return exits.USAGE
    if args.server:
        try:
            asyncio.run(_check(args.server, args.match_id, tls))
        except WatchError as error:
            print(f"ziggurat watch: {error}", file=sys.stderr)
            return exits.FAILED
    return run_app(
        ZigguratApp(
            server=args.server, watch_match=args.match_id, tls=tls, language=terminal_ui.language(args)
        )
    )


async def _check(address: str, match_id: str, tls: Tls) -> None:
    from ziggurat.tui.watching import check_watchable
    from ziggurat_client.client import ZigguratClient

    async with ZigguratClient(address, **tls.client_options()) as client:
        await check_watchable(client, match_id)
