"""``ziggurat bot``: run a bot (built-in or your own class) for a seat on a server."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from typing import Any

from ziggurat.cli.gameopts import add_game_options, game_options
from ziggurat.rules.core import InvalidConfigError
from ziggurat.v1 import match_pb2
from ziggurat.wire.codec import config_to_proto
from ziggurat_client.client import ZigguratClient, ZigguratError
from ziggurat_client.loader import BotLoadError, load_bot
from ziggurat_client.runner import SeatRunner


def register(commands: Any) -> None:
    """Add ``bot``."""
    parser = commands.add_parser(
        "bot",
        help="play a seat with a bot (built-in, or your own class)",
        description=(
            "Join a match (--match) or create one (--create GAME) and play a seat with BOT until the "
            "match ends. BOT is a built-in name (random, greedy, mcts, alphabeta), package.module:Class "
            "or path/to/file.py:Class; a bot is any object with a `name` and a `choose(turn)` method."
        ),
    )
    parser.add_argument("bot", metavar="BOT")
    parser.add_argument("--server", default="127.0.0.1:50051", help="HOST:PORT (default 127.0.0.1:50051)")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--match", metavar="ID", help="join this match")
    where.add_argument("--create", metavar="GAME", choices=("pylos", "kabaleo"), help="create a match first")
    parser.add_argument("--seats", type=int, default=2, help="seats of a created match (default 2)")
    parser.add_argument("--seat", type=int, default=0, help="seat wanted, if the match lets joiners choose")
    parser.add_argument("--name", help="player name shown to others (default: the bot's name)")
    parser.add_argument("--per-move-ms", type=int, default=0, help="created match: per-move limit")
    parser.add_argument(
        "--bot-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="keyword option for the bot's constructor (numbers are converted)",
    )
    add_game_options(parser)
    parser.set_defaults(handler=_bot)


def _parse_value(text: str) -> Any:
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def _bot(args: argparse.Namespace) -> int:
    logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        options = {k: _parse_value(v) for k, _, v in (o.partition("=") for o in args.bot_option)}
        bot = load_bot(args.bot, options)
    except (BotLoadError, TypeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_run(args, bot))
    except (ZigguratError, InvalidConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


async def _run(args: argparse.Namespace, bot: Any) -> int:
    async with ZigguratClient(args.server) as client:
        match_id = args.match
        if args.create:
            config = config_to_proto(args.create, args.seats, game_options(args))
            time_control = match_pb2.TimeControl(per_move_ms=args.per_move_ms)
            match = await client.create_match(config, time_control=time_control)
            match_id = match.match_id
            print(f"created match {match_id} (commitment {match.seed_commitment})", flush=True)
        handle = await client.join(match_id, args.name or bot.name, args.seat)
        print(f"playing seat {handle.seat} of match {match_id} with {bot.name}", flush=True)
        ended = await SeatRunner(client, handle, bot).run()
        ranks = list(ended.outcome.ranks)
        print(f"match {match_id} over: ranks by seat {ranks}; this seat ranked {ranks[handle.seat - 1]}")
        return 0
