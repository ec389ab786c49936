"""Command-line flags that select a game's rule options, shared by every sub-command."""

from __future__ import annotations

import argparse

from ziggurat.rules.core import InvalidConfigError


def add_game_options(parser: argparse.ArgumentParser) -> None:
    """Add the rule-option flags of both games (each game ignores nothing: unknown ones are errors)."""
    group = parser.add_argument_group("rule options")
    group.add_argument("--variant", choices=("standard", "beginner", "advanced"), help="Pylos variant")
    group.add_argument("--max-moves", type=int, metavar="N", help="Pylos: draw after N moves")
    group.add_argument("--deal", choices=("random", "equal"), help="Kabaleo: how pieces are dealt")
    group.add_argument("--last-stack", action="store_true", help="Kabaleo: forbid the previous move's stack")
    group.add_argument("--colours", metavar="LETTERS", help="Kabaleo: colours in play, e.g. RGBO")
    group.add_argument(
        "-o", "--option", action="append", default=[], metavar="KEY=VALUE", help="any other rule option"
    )


def game_options(args: argparse.Namespace) -> dict[str, str]:
    """The string options selected by the flags of :func:`add_game_options`."""
    options: dict[str, str] = {}
    if args.variant:
        options["variant"] = args.variant
    if args.max_moves is not None:
        options["max_moves"] = str(args.max_moves)
    if args.deal:
        options["deal"] = args.deal
    if args.last_stack:
        options["last_stack"] = "true"
    if args.colours:
        options["colours"] = args.colours
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep:
            raise InvalidConfigError(f"-o expects KEY=VALUE, got {item!r}")
        options[key] = value
    return options
