"""``ziggurat bot``: run a bot (built-in or your own class) on a server.

Three ways to get a seat: create a match (``--create``), join one (``--match``,
optionally with a seat token handed over by an organiser, ``--token``), or connect
as a remote bot (``--remote``) and play every seat the server hands out. The
ZIGGURAT_SERVER / ZIGGURAT_MATCH / ZIGGURAT_TOKEN / ZIGGURAT_SEAT and
ZIGGURAT_BOT_NAME / ZIGGURAT_BOT_TOKEN environment variables, which ziggurat sets
for programs it launches, are the defaults of the matching options.

The built-in search bots (mcts, alphabeta) think in worker processes
(:mod:`ziggurat.bots.workers`), one per match this process plays at once (``--max-matches``),
started before it connects (for at most 30 s): the seats it plays never queue behind one another's searches,
and this process's event loop keeps answering the server while they think.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
from typing import Any

from ziggurat.bots import BOTS, GAMES_OF
from ziggurat.bots.workers import SEARCH_BOTS, SearchPool
from ziggurat.cli import exits
from ziggurat.cli.commands import summary_of
from ziggurat.cli.gameopts import add_game_options, game_options
from ziggurat.cli.tls_options import TlsOptionError, add_tls_arguments, tls_from_args
from ziggurat.core.tokens import new_token, read_token_file
from ziggurat.rules.core import InvalidConfigError
from ziggurat.rules.registry import GAMES
from ziggurat.v1 import match_pb2
from ziggurat.wire.codec import config_to_proto
from ziggurat_client.bot import Bot
from ziggurat_client.client import MatchHandle, ZigguratClient, ZigguratError
from ziggurat_client.loader import BotLoadError, load_bot
from ziggurat_client.remote import RemoteBot
from ziggurat_client.runner import SeatRunner

WARM_UP_SECONDS = 30.0
"""How long ``--remote`` waits for its search workers before it connects anyway."""


class _Help(argparse.Action):
    """``-h``: the help of ``bot``, or of ``bot invite`` when BOT is ``invite`` (which takes
    other arguments: it plays nothing, it seats a connected remote bot)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=dest, default=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, *_: Any) -> None:
        if getattr(namespace, "bot", None) == "invite":
            invite_parser(parser.prog).print_help()
        else:
            parser.print_help()
        parser.exit()


def invite_parser(bot_prog: str) -> argparse.ArgumentParser:
    """The usage of ``bot invite`` (parsed by the ``bot`` parser, whose options it shares)."""
    env = os.environ.get
    parser = argparse.ArgumentParser(
        prog=f"{bot_prog} invite",
        description=(
            "Invite the connected remote bot NAME (one started with `ziggurat bot BOT --remote`, or a bot "
            "on BotService.ConnectBot) into a waiting match you created: it takes a seat and plays it. "
            "Only the match's creator may invite, with the creator token that `ziggurat bot --create` "
            "wrote to --creator-token-file (or from ZIGGURAT_CREATOR_TOKEN; never on the command line)."
        ),
    )
    parser.add_argument("bot_name", metavar="NAME", help="the connected remote bot to invite")
    parser.add_argument("--match", metavar="ID", required=True, help="the waiting match")
    parser.add_argument("--seat", type=int, default=0, help="the seat it takes (default: the match's rule)")
    parser.add_argument("--server", default=env("ZIGGURAT_SERVER", "127.0.0.1:50051"), help="HOST:PORT")
    parser.add_argument(
        "--creator-token-file",
        metavar="FILE",
        help="file holding the match's creator token (default: $ZIGGURAT_CREATOR_TOKEN)",
    )
    add_tls_arguments(parser)
    return parser


def register(commands: Any) -> None:
    """Add ``bot``."""
    env = os.environ.get
    parser = commands.add_parser(
        "bot",
        add_help=False,
        help=summary_of("bot"),
        description=(
            "Play with BOT until the match ends: create a match (--create GAME), join one (--match ID), "
            "or connect as a remote bot that plays every seat it is handed (--remote). "
            "`ziggurat bot invite NAME --match ID` invites the connected remote bot NAME into a waiting "
            "match instead (with the match's creator token from --creator-token-file or "
            "ZIGGURAT_CREATOR_TOKEN). BOT is a built-in "
            "name (random, greedy, mcts, alphabeta), package.module:Class or path/to/file.py:Class; a bot "
            "is any object with a `name` and a `choose(turn)` method."
        ),
    )
    parser.add_argument(
        "-h", "--help", action=_Help, help="show this help message and exit (with BOT = invite: its own)"
    )
    parser.add_argument("bot", metavar="BOT")
    parser.add_argument(
        "bot_name",
        metavar="NAME",
        nargs="?",
        help="with BOT = invite: the connected remote bot to invite into --match ID",
    )
    parser.add_argument("--server", default=env("ZIGGURAT_SERVER", "127.0.0.1:50051"), help="HOST:PORT")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--match", metavar="ID", default=env("ZIGGURAT_MATCH"), help="join this match")
    where.add_argument("--create", metavar="GAME", choices=sorted(GAMES), help="create a match first")
    where.add_argument(
        "--remote", action="store_true", help="connect as a remote bot and play assigned seats"
    )
    parser.add_argument(
        "--token", default=env("ZIGGURAT_TOKEN"), help="seat token handed over by an organiser"
    )
    parser.add_argument(
        "--seat", type=int, default=int(env("ZIGGURAT_SEAT", "0")), help="seat wanted / of --token"
    )
    parser.add_argument("--seats", type=int, default=2, help="seats of a created match (default 2)")
    parser.add_argument(
        "--name", default=env("ZIGGURAT_BOT_NAME"), help="name shown to others (default: the bot's)"
    )
    parser.add_argument(
        "--bot-token", default=env("ZIGGURAT_BOT_TOKEN"), help="remote bot token (default: new one)"
    )
    parser.add_argument(
        "--creator-token-file",
        metavar="FILE",
        help="with BOT = invite: file holding the match's creator token (default: $ZIGGURAT_CREATOR_TOKEN); "
        "with --create: the file to write the created match's creator token to (owner-only)",
    )
    parser.add_argument("--max-matches", type=int, default=1, help="remote bot: matches at once (default 1)")
    parser.add_argument(
        "--games", default="", help="remote bot: games it plays, comma-separated (default all)"
    )
    parser.add_argument("--per-move-ms", type=int, default=0, help="created match: per-move limit")
    parser.add_argument(
        "--bot-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="keyword option for the bot's constructor (numbers are converted)",
    )
    add_game_options(parser)
    add_tls_arguments(parser)
    parser.set_defaults(handler=_bot)


def _parse_value(text: str) -> Any:
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def _bot(args: argparse.Namespace) -> int:
    try:
        args.tls_choice = tls_from_args(args)
    except TlsOptionError as error:
        print(f"error: {error}", file=sys.stderr)
        return exits.USAGE
    if args.bot == "invite":
        return _invite(args)
    if args.bot_name is not None:
        print(
            f"error: unexpected argument {args.bot_name!r} (only `bot invite NAME` takes one)",
            file=sys.stderr,
        )
        return 2
    logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not (args.match or args.create or args.remote):
        print("error: give --create GAME, --match ID or --remote", file=sys.stderr)
        return 2
    if args.create and args.bot in GAMES_OF and args.create not in GAMES_OF[args.bot]:
        print(f"error: the built-in bot {args.bot} does not play {args.create}", file=sys.stderr)
        return exits.USAGE
    try:
        options = {k: _parse_value(v) for k, _, v in (o.partition("=") for o in args.bot_option)}
        # a seat handed over by an organiser (a tournament's per-game program) comes with the
        # seed it suggests for a built-in bot's randomness, so a replayed tournament replays it
        handed = args.token and ":" not in args.bot
        seed = os.environ.get("ZIGGURAT_BOT_SEED", "0") if handed else "0"
        bot = load_bot(args.bot, _seeded(options, int(seed) if seed.isdigit() else 0), BOTS)
    except (BotLoadError, TypeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return exits.USAGE
    except Exception as error:  # the bot's own module or constructor failed
        if args.debug:
            raise
        print(
            f"error: cannot load the bot {args.bot}: {_one_line(error)} (--debug shows where)",
            file=sys.stderr,
        )
        return exits.USAGE
    if args.create and args.creator_token_file:
        try:  # before the match exists: a file that cannot be written is a usage error, nothing created
            _write_secret(args.creator_token_file, "")
        except OSError as error:
            print(
                f"error: cannot write the creator token file {args.creator_token_file}: {error}",
                file=sys.stderr,
            )
            return exits.USAGE
    try:
        return asyncio.run(_remote(args, options) if args.remote else _seat(args, bot, options))
    except (ZigguratError, InvalidConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return exits.FAILED
    except BotFailed as failure:
        if args.debug:
            raise failure.__cause__ or failure from None
        print(f"error: {failure}", file=sys.stderr)
        return exits.FAILED
    except KeyboardInterrupt:
        return exits.INTERRUPTED


class BotFailed(Exception):
    """The bot raised instead of choosing a move; its seat was resigned."""


def _one_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".splitlines()[0][:300]


async def _seat(args: argparse.Namespace, bot: Bot, options: dict[str, Any]) -> int:
    if args.bot not in SEARCH_BOTS:
        return await _play_seat(args, bot)
    pool = SearchPool(1)
    try:
        await pool.warm()
        return await _play_seat(args, pool.open(args.bot, options))
    finally:
        await pool.close()


async def _play_seat(args: argparse.Namespace, bot: Bot) -> int:
    async with ZigguratClient(args.server, **args.tls_choice.client_options()) as client:
        match_id = args.match
        if args.create:
            config = config_to_proto(args.create, args.seats, game_options(args))
            time_control = match_pb2.TimeControl(per_move_ms=args.per_move_ms)
            match = await client.create_match(config, time_control=time_control)
            match_id = match.match_id
            if args.creator_token_file:
                _write_secret(args.creator_token_file, client.creator_tokens[match_id])
            print(f"created match {match_id} (commitment {match.seed_commitment})", flush=True)
        if args.token and not args.create:
            handle = MatchHandle(match_id, args.seat, args.token)
        else:
            handle = await client.join(match_id, args.name or bot.name, 0 if args.create else args.seat)
        print(f"playing seat {handle.seat} of match {match_id} with {bot.name}", flush=True)
        try:
            ended = await SeatRunner(client, handle, bot).run()
        except ZigguratError:
            raise
        except Exception as error:  # the bot's own bug: resign, so the others are not left waiting
            with contextlib.suppress(ZigguratError):
                await client.resign(handle)
            raise BotFailed(
                f"the bot {bot.name} failed on its turn ({_one_line(error)}); "
                f"its seat {handle.seat} resigned (--debug shows where)"
            ) from error
        ranks = list(ended.outcome.ranks)
        print(f"match {match_id} over: ranks by seat {ranks}; this seat ranked {ranks[handle.seat - 1]}")
        return 0


def _invite(args: argparse.Namespace) -> int:
    """``ziggurat bot invite NAME --match ID``: seat a connected remote bot in a waiting match.

    Only the match's creator may invite: its creator token comes from --creator-token-file or
    ZIGGURAT_CREATOR_TOKEN, never from the command line (``ps`` shows that to every user).
    """
    if not args.bot_name or not args.match:
        print(
            "error: usage: ziggurat bot invite NAME --match ID [--seat N] [--creator-token-file FILE]",
            file=sys.stderr,
        )
        return exits.USAGE
    try:
        creator_token = _creator_token(args.creator_token_file)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return exits.USAGE

    async def invite() -> int:
        async with ZigguratClient(args.server, **args.tls_choice.client_options()) as client:
            seat = await client.invite_bot(args.match, args.bot_name, args.seat, creator_token=creator_token)
        print(f"bot {args.bot_name!r} took seat {seat} of match {args.match}", flush=True)
        return exits.OK

    try:
        return asyncio.run(invite())
    except ZigguratError as error:
        print(f"error: {error}", file=sys.stderr)
        return exits.FAILED


def _write_secret(path: str, token: str) -> None:
    """Write ``token`` to a new file only its owner may read (what ``bot invite`` reads back)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(f"{token}\n" if token else "")


def _creator_token(path: str | None) -> str:
    """The creator token of ``bot invite``: from ``path``, else ZIGGURAT_CREATOR_TOKEN; ValueError
    (one line) when there is none."""
    if path:
        return read_token_file(path, "creator token")
    token = os.environ.get("ZIGGURAT_CREATOR_TOKEN", "").strip()
    if not token:
        raise ValueError(
            "inviting a bot needs the match's creator token: --creator-token-file FILE "
            "or the ZIGGURAT_CREATOR_TOKEN environment variable"
        )
    return token


def _seeded(options: dict[str, Any], seed: int) -> dict[str, Any]:
    """Bot options with the organiser's per-seat seed, for built-in bots that take one."""
    return {**options, "seed": seed} if seed and "seed" not in options else options


async def _remote(args: argparse.Namespace, options: dict[str, Any]) -> int:
    token = args.bot_token or new_token(24)
    name = args.name or load_bot(args.bot, options, BOTS).name
    if not args.bot_token:
        print(f"bot token for {name!r} (keep it to reconnect under this name): {token}", flush=True)
    games = [g for g in args.games.split(",") if g]
    pool: SearchPool | None = None
    warming: asyncio.Task[None] | None = None
    if args.bot in SEARCH_BOTS:  # one worker per match at once: no search waits for another
        pool = SearchPool(max(1, args.max_matches))
        # Ready before it takes seats (a tournament starts a game once its bots are connected),
        # but connected after WARM_UP_SECONDS whatever: on a machine so loaded that starting
        # the workers takes longer, its first moves are answered by the host (see workers.py)
        # rather than the games starting without it.
        warming = asyncio.create_task(pool.warm())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(warming), WARM_UP_SECONDS)
    try:
        return await _serve_remote(args, options, pool, name=name, token=token, games=games)
    finally:
        if warming is not None:
            warming.cancel()
            await asyncio.gather(warming, return_exceptions=True)
        if pool is not None:
            await pool.close()


async def _serve_remote(
    args: argparse.Namespace,
    options: dict[str, Any],
    pool: SearchPool | None,
    *,
    name: str,
    token: str,
    games: list[str],
) -> int:
    def make_bot(assignment: Any) -> Bot:
        seeded = _seeded(options, assignment.bot_seed)
        return pool.open(args.bot, seeded) if pool is not None else load_bot(args.bot, seeded, BOTS)

    async with ZigguratClient(args.server, **args.tls_choice.client_options()) as client:
        remote = RemoteBot(
            client,
            make_bot,
            name=name,
            token=token,
            games=games,
            max_matches=args.max_matches,
            on_registered=lambda: print(f"connected as remote bot {name!r}", flush=True),
        )
        serving = asyncio.create_task(remote.run())
        watchdog = asyncio.create_task(_parent_watchdog())
        done, pending = await asyncio.wait({serving, watchdog}, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        if serving in done:
            serving.result()  # re-raise a refusal such as BAD_TOKEN
        else:
            print("the process that launched this bot is gone: exiting", flush=True)
    return 0


async def _parent_watchdog() -> None:
    """Return when the launching process (ZIGGURAT_PARENT_PID) has died.

    A tournament launches its bots in sessions of their own so that it can stop them
    cleanly; if the tournament itself is killed (kill -9), nothing would stop them,
    and a remote bot reconnects forever. Orphaned, it notices and exits.
    """
    parent = os.environ.get("ZIGGURAT_PARENT_PID", "")
    if not parent.isdigit():
        await asyncio.Event().wait()  # no parent to watch: never returns
    while os.getppid() == int(parent):
        await asyncio.sleep(1.0)
