"""``ziggurat rules``: legal moves, move application, perft and seeded set-ups from the shell.

Made for bot authors in any language to check their own move generators against
ours. Positions given here are full (Kabaleo's objectives visible), for any registered game.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ziggurat.cli.commands import summary_of
from ziggurat.cli.gameopts import add_game_options, game_options
from ziggurat.rules.core import RulesError
from ziggurat.rules.registry import GAMES, AnyRules, get_rules

EXIT_RULES_ERROR = 2


def register(commands: Any) -> None:
    """Add ``rules`` and its sub-commands."""
    parser = commands.add_parser(
        "rules",
        help=summary_of("rules"),
        description="Query the rules engine. Positions use the notations of the rules pages; quote them.",
    )
    sub = parser.add_subparsers(dest="rules_command", metavar="ACTION", required=True)

    moves = sub.add_parser("moves", help="print the legal moves of a position, one per line, sorted")
    _position_args(moves)
    moves.set_defaults(handler=_moves)

    apply = sub.add_parser("apply", help="apply moves and print the resulting position")
    _position_args(apply)
    apply.add_argument("moves", nargs="*", metavar="MOVE")
    apply.set_defaults(handler=_apply)

    perft = sub.add_parser("perft", help="count the sequences of DEPTH legal moves")
    _position_args(perft)
    perft.add_argument("depth", type=int, metavar="DEPTH")
    perft.add_argument("--divide", action="store_true", help="print the count below each first move")
    perft.set_defaults(handler=_perft)

    new = sub.add_parser("new", help="print the initial full position derived from a seed")
    new.add_argument("game", choices=sorted(GAMES), metavar="GAME")
    new.add_argument("--seats", type=int, default=2)
    new.add_argument("--seed", required=True, metavar="HEX", help="the 32-byte seed as 64 hex digits")
    add_game_options(new)
    new.set_defaults(handler=_new)


def _position_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("game", choices=sorted(GAMES), metavar="GAME", help=", ".join(sorted(GAMES)))
    parser.add_argument("position", metavar="POSITION", help="a full position string, quoted")
    add_game_options(parser)


def _load(args: argparse.Namespace) -> tuple[AnyRules, Any]:
    """The rules and the state of the position given, read at the seat count it is written for.

    A position says its number of seats only in the game's own notation (Kabaleo: one hand per
    seat), so each seat count the game declares is tried, fewest first; the first whose
    configuration reads the position wins. When none does, the error says what each one said.
    """
    rules = get_rules(args.game)
    options = game_options(args)
    said: dict[str, list[int]] = {}
    for seats in range(rules.min_seats, rules.max_seats + 1):
        try:
            return rules, rules.parse_position(args.position, rules.parse_config(options, seats))
        except RulesError as error:
            said.setdefault(str(error), []).append(seats)
    if len(said) == 1:
        raise RulesError(next(iter(said)))
    raise RulesError("; ".join(f"as {'/'.join(map(str, n))} seats: {text}" for text, n in said.items()))


def _fail(error: Exception) -> int:
    print(f"error: {error}", file=sys.stderr)
    return EXIT_RULES_ERROR


def _moves(args: argparse.Namespace) -> int:
    try:
        rules, state = _load(args)
    except RulesError as error:
        return _fail(error)
    for move in rules.legal_moves(state):
        print(move)
    return 0


def _apply(args: argparse.Namespace) -> int:
    try:
        rules, state = _load(args)
    except RulesError as error:
        return _fail(error)
    for number, move in enumerate(args.moves, start=1):
        try:
            state = rules.apply(state, move)
        except RulesError as error:
            print(f"error: move {number} {move!r}: {error} [{error.reason}]", file=sys.stderr)
            return EXIT_RULES_ERROR
    print(rules.format_position(state))
    return 0


def _perft(args: argparse.Namespace) -> int:
    if args.depth < 0:
        return _fail(ValueError("DEPTH must be 0 or more"))
    try:
        rules, state = _load(args)
    except RulesError as error:
        return _fail(error)
    if args.divide and args.depth > 0:
        total = 0
        for move in rules.legal_moves(state):
            count = rules.perft(rules.apply(state, move), args.depth - 1)
            total += count
            print(f"{move}: {count}")
        print(f"total: {total}")
    else:
        print(rules.perft(state, args.depth))
    return 0


def _new(args: argparse.Namespace) -> int:
    try:
        seed = bytes.fromhex(args.seed)
    except ValueError:
        return _fail(ValueError("--seed must be 64 hex digits"))
    try:
        rules = get_rules(args.game)
        state = rules.new_game(rules.parse_config(game_options(args), args.seats), seed)
    except RulesError as error:
        return _fail(error)
    print(rules.format_position(state))
    return 0
