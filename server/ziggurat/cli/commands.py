"""The table of ``ziggurat`` commands: name, one-line summary, and the module that implements it.

Why a table apart from the command modules: ``ziggurat --version`` and ``ziggurat --help``
need only the names and summaries, while the modules import grpc, textual, the server and
the rules (over a second of imports). :mod:`ziggurat.cli.main` lists every command from this
table and imports only the module of the command being run; each module takes its summary (:func:`summary_of`)
from here, so the top-level help and a command's own parser always agree.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Command:
    """One sub-command: ``module`` has ``register(commands)`` adding its parser."""

    name: str
    summary: str
    module: str


COMMANDS: tuple[Command, ...] = (
    Command("serve", "run the match server", "ziggurat.cli.serve_cmd"),
    Command("rules", "legal moves, apply, perft, seeded set-ups", "ziggurat.cli.rules_cmd"),
    Command(
        "verify", "verify a finished match: seed commitment, seats, moves, outcome", "ziggurat.cli.verify_cmd"
    ),
    Command(
        "check",
        "check a server database: SQLite integrity, every match rebuilt, every record verified",
        "ziggurat.cli.check_cmd",
    ),
    Command("bot", "play with a bot (built-in, or your own class)", "ziggurat.cli.bot_cmd"),
    Command(
        "bridge",
        "play a seat with a program speaking the stdio protocol (any language)",
        "ziggurat.cli.bridge_cmd",
    ),
    Command("demo", "play a random game of each game and print it", "ziggurat.cli.demo_cmd"),
    Command("play", "play in the terminal (finds servers on the LAN)", "ziggurat.cli.play_cmd"),
    Command("watch", "spectate a match in the terminal", "ziggurat.cli.watch_cmd"),
    Command(
        "tournament",
        "run headless tournaments (round robin, gauntlet, Swiss, duplicate Kabaleo deals)",
        "ziggurat.cli.tournament_cmd",
    ),
    Command(
        "arena",
        "run a standing arena: bots connect any time, are paired by rating, a lasting ladder",
        "ziggurat.cli.arena_cmd",
    ),
    Command("replay", "play back exported games (JSONL) in the terminal", "ziggurat.cli.replay_cmd"),
    Command(
        "tls",
        "make TLS files for a LAN server (a CA and a server certificate it signs)",
        "ziggurat.cli.tls_cmd",
    ),
)

_SUMMARIES = {command.name: command.summary for command in COMMANDS}


def summary_of(name: str) -> str:
    """The one-line help of command ``name`` (as the top-level ``--help`` lists it)."""
    return _SUMMARIES[name]
