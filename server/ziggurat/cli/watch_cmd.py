"""``ziggurat watch MATCH_ID``: spectate a match in the terminal UI (no seat, no input).

A spectator sees the public view only (no secret objective) until the end, when
the reveal and the seed check are shown as for players.
"""

from __future__ import annotations

import argparse
from typing import Any


def register(commands: Any) -> None:
    """Add ``watch``."""
    parser = commands.add_parser(
        "watch",
        help="spectate a match in the terminal",
        description="Follow a match live as a spectator; without --server, pick a server found on the LAN.",
    )
    parser.add_argument("match_id", help="the match to watch")
    parser.add_argument("--server", metavar="HOST:PORT", help="connect here instead of searching the LAN")
    parser.set_defaults(handler=_watch)


def _watch(args: argparse.Namespace) -> int:
    from ziggurat.tui import ZigguratApp

    ZigguratApp(server=args.server, watch_match=args.match_id).run()
    return 0
