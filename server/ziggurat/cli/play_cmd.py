"""``ziggurat play``: the terminal UI to find a server, join or create a match, and play it.

The UI lives in the client package (``ziggurat.tui``); this module only
parses the command line, so ``ziggurat --help`` stays fast (textual is imported
when the command runs) and works without the ``tui`` extra (then ``play`` says, in one
line, what to install).
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from ziggurat.cli import exits, terminal_ui
from ziggurat.cli.commands import summary_of
from ziggurat.cli.tls_options import TlsOptionError, add_tls_arguments, tls_from_args


def register(commands: Any) -> None:
    """Add ``play``."""
    parser = commands.add_parser(
        "play",
        help=summary_of("play"),
        description=(
            "Open the terminal UI: without --server, search the LAN for ziggurat servers (mDNS) "
            "or type an address; then join or create a match and play it."
        ),
    )
    parser.add_argument("--server", metavar="HOST:PORT", help="connect here instead of searching the LAN")
    parser.add_argument(
        "--name", type=_name, default=_default_name(), help="your player name (default: your login)"
    )
    terminal_ui.add_language_argument(parser)
    add_tls_arguments(parser)
    parser.set_defaults(handler=_play)


def _name(text: str) -> str:
    """A player name as the server takes it: outer spaces trimmed, not empty (else BAD_NAME)."""
    name = text.strip()
    if not name:
        raise argparse.ArgumentTypeError("a player name cannot be empty")
    return name


def _default_name() -> str:
    try:
        return getpass.getuser()[:32] or "player"
    except (OSError, KeyError):
        return "player"


def _play(args: argparse.Namespace) -> int:
    problem = terminal_ui.missing("play")
    if problem is not None:
        print(problem, file=sys.stderr)
        return exits.FAILED
    from ziggurat.cli.interrupt import run_app
    from ziggurat.tui import ZigguratApp

    try:
        tls = tls_from_args(args)
    except TlsOptionError as error:
        print(f"error: {error}", file=sys.stderr)
        return exits.USAGE
    return run_app(
        ZigguratApp(server=args.server, player_name=args.name, tls=tls, language=terminal_ui.language(args))
    )
