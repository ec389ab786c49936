"""Entry point of the ``ziggurat`` command: one sub-command per module of this package.

Only the module of the command being run is imported (the table of commands is
:mod:`ziggurat.cli.commands`): the others would import grpc, textual, the server and the
rules, and ``ziggurat --version`` or ``--help`` would take a second or more.

Each command handles the errors a user can cause (bad files, servers down, unknown
matches) with one line of its own. :func:`main` is the last line of defence: Ctrl-C
anywhere exits 130 quietly, and an exception no command expected (a bug) prints one
line that says where its traceback was written; ``--debug`` (or ``ZIGGURAT_DEBUG=1``)
shows the traceback itself instead.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from pathlib import Path

from ziggurat import __version__
from ziggurat.cli import exits
from ziggurat.cli.commands import COMMANDS


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser (kept separate so tests can inspect the help text).

    ``only``: the command about to run; only its module is imported and its parser built,
    every other command is listed by name and summary (all that ``ziggurat --help`` shows).
    None (the default) builds every command's parser.
    """
    parser = argparse.ArgumentParser(
        prog="ziggurat",
        description="Authoritative game server for Kabaleo and Pylos: bring your bot, in any language.",
        epilog="Exit codes: 0 done, 1 failed, 2 bad usage or input, 130 interrupted (Ctrl-C), "
        "70 a bug in ziggurat (see README.md).",
    )
    parser.add_argument("--version", action="version", version=f"ziggurat {__version__}")
    parser.add_argument(
        "--debug",
        action="store_true",
        default=os.environ.get("ZIGGURAT_DEBUG", "") not in ("", "0"),
        help="show the traceback of an unexpected error (default: one line; also ZIGGURAT_DEBUG=1)",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in COMMANDS:
        if only is None or command.name == only:
            importlib.import_module(command.module).register(commands)
        else:  # listed only: never parsed, since the command line names another
            commands.add_parser(command.name, help=command.summary)
    return parser


def _command_named(argv: Sequence[str]) -> str:
    """The command ``argv`` runs: its first word that is not an option ("" when none is a
    command; then every command is only listed, and argparse says what is wrong)."""
    for word in argv:
        if word == "--":
            continue
        if not word.startswith("-"):
            return word if any(command.name == word for command in COMMANDS) else ""
    return ""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(only=_command_named(words))
    args = parser.parse_args(words)
    try:
        code: int = args.handler(args)
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return exits.INTERRUPTED
    except BrokenPipeError:
        # Python would complain again while flushing stdout at exit: point it at /dev/null.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return exits.BROKEN_PIPE
    except Exception as error:  # the last line of defence: a bug, told in one line
        if args.debug:
            raise
        print(f"error: {_unexpected(error, args.command)}", file=sys.stderr)
        return exits.INTERNAL
    return code


def _unexpected(error: Exception, command: str) -> str:
    """One line for an exception no command expected; its traceback goes to a file."""
    what = f"{type(error).__name__}: {error}".splitlines()[0][:300]
    where = _write_traceback(error, command)
    pointer = f"traceback in {where}" if where else "run again with --debug for the traceback"
    return f"unexpected {what} (a bug in ziggurat `{command}`; {pointer})"


def _write_traceback(error: Exception, command: str) -> Path | None:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = Path(tempfile.gettempdir()) / f"ziggurat-{command}-{stamp}-{os.getpid()}.txt"
    try:
        path.write_text("".join(traceback.format_exception(error)))
    except OSError:
        return None
    return path


if __name__ == "__main__":
    sys.exit(main())
