"""``ziggurat demo``: play one random game of each game in-process and print it."""

from __future__ import annotations

import argparse
import random
import secrets
from typing import Any

from ziggurat.cli.commands import summary_of
from ziggurat.rules.registry import GAMES


def register(commands: Any) -> None:
    """Add ``demo``."""
    parser = commands.add_parser("demo", help=summary_of("demo"))
    parser.add_argument("--seed", type=int, help="random seed for reproducible games")
    parser.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    rng = random.Random(args.seed)
    for name, rules in sorted(GAMES.items()):
        seats = rules.max_seats
        seed = rng.randbytes(32) if args.seed is not None else secrets.token_bytes(32)
        state = rules.new_game(rules.parse_config({}, seats), seed)
        print(f"== {name}, {seats} seats, seed {seed.hex()}")
        print(f"   start: {rules.format_position(state)}")
        moves: list[str] = []
        while rules.outcome(state) is None:
            move = rules.random_move(state, rng)
            moves.append(move)
            state = rules.apply(state, move)
        print(f"   moves: {' '.join(moves)}")
        print(f"   end:   {rules.format_position(state)}")
        outcome = rules.outcome(state)
        assert outcome is not None
        print(f"   outcome: {outcome.termination.value}, ranks by seat {list(outcome.ranks)}")
    return 0
