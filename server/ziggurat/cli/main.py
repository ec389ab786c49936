"""Entry point of the ``ziggurat`` command: one sub-command per module of this package."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ziggurat import __version__
from ziggurat.cli import (
    bot_cmd,
    bridge_cmd,
    check_cmd,
    demo_cmd,
    play_cmd,
    replay_cmd,
    rules_cmd,
    serve_cmd,
    tournament_cmd,
    verify_cmd,
    watch_cmd,
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (kept separate so tests can inspect the help text)."""
    parser = argparse.ArgumentParser(
        prog="ziggurat",
        description="Authoritative game server for Kabaleo and Pylos: bring your bot, in any language.",
    )
    parser.add_argument("--version", action="version", version=f"ziggurat {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    serve_cmd.register(commands)
    rules_cmd.register(commands)
    verify_cmd.register(commands)
    check_cmd.register(commands)
    bot_cmd.register(commands)
    bridge_cmd.register(commands)
    demo_cmd.register(commands)
    play_cmd.register(commands)
    watch_cmd.register(commands)
    tournament_cmd.register(commands)
    replay_cmd.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
