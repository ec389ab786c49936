"""``ziggurat bridge``: play a seat with a program that speaks the stdio protocol.

The seat comes from flags or from the ZIGGURAT_* environment variables, the standard
way ziggurat hands a seat to a program (docs/stdio-protocol.md). The exit code carries
the verdict so a tournament script can tell a lost game from a broken bot.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from typing import Any

from ziggurat.cli.commands import summary_of
from ziggurat.cli.tls_options import TlsOptionError, add_tls_arguments, tls_from_args
from ziggurat.stdio.bridge import BridgeSettings, HandshakeError, StdioBot, Verdict, play_seat
from ziggurat_client.client import MatchHandle, ZigguratClient, ZigguratError

EXIT_CODES = {
    Verdict.FINISHED: 0,
    Verdict.DISCONNECTED: 1,
    Verdict.ILLEGAL: 3,
    Verdict.CRASHED: 3,
    Verdict.TIMEOUT: 3,
}


def register(commands: Any) -> None:
    """Add ``bridge``."""
    parser = commands.add_parser(
        "bridge",
        help=summary_of("bridge"),
        description=(
            "Run PROGRAM and play a seat with it over stdin/stdout (docs/stdio-protocol.md). "
            "--server, --match, --token and --seat default to ZIGGURAT_SERVER, ZIGGURAT_MATCH, "
            "ZIGGURAT_TOKEN and ZIGGURAT_SEAT. Exit code: 0 finished, 1 server error or "
            "disconnected, 2 usage or handshake failure, 3 the bot forfeited."
        ),
    )
    parser.add_argument("--server", help="HOST:PORT (default $ZIGGURAT_SERVER or 127.0.0.1:50051)")
    parser.add_argument("--match", metavar="ID", help="the match (default $ZIGGURAT_MATCH)")
    seat = parser.add_mutually_exclusive_group()
    seat.add_argument("--token", help="play the seat of this token (default $ZIGGURAT_TOKEN)")
    seat.add_argument(
        "--join",
        metavar="NAME",
        nargs="?",
        const="",
        help="join the match as NAME (default: the name the bot gives in its handshake)",
    )
    parser.add_argument("--seat", type=int, help="with --token: its seat (default $ZIGGURAT_SEAT or asked)")
    parser.add_argument("--max-illegal", type=int, default=3, help="refused answers before resigning")
    parser.add_argument("--handshake-timeout", type=float, default=10.0, help="seconds (default 10)")
    parser.add_argument("--grace-ms", type=int, default=1000, help="slack beyond the clock (default 1000)")
    parser.add_argument("--move-timeout-ms", type=int, default=0, help="limit per move in untimed matches")
    parser.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM ARGS...")
    add_tls_arguments(parser)
    parser.set_defaults(handler=_bridge)


def _bridge(args: argparse.Namespace) -> int:
    logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    args.server = args.server or os.environ.get("ZIGGURAT_SERVER") or "127.0.0.1:50051"
    args.match = args.match or os.environ.get("ZIGGURAT_MATCH")
    if args.join is None:
        args.token = args.token or os.environ.get("ZIGGURAT_TOKEN")
    if args.seat is None and os.environ.get("ZIGGURAT_SEAT", "").isdigit():
        args.seat = int(os.environ["ZIGGURAT_SEAT"])
    problem = (
        "give the program to run after --"
        if not program
        else "give --match or set ZIGGURAT_MATCH"
        if not args.match
        else "give --token, set ZIGGURAT_TOKEN, or --join"
        if args.join is None and not args.token
        else None
    )
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        args.tls_choice = tls_from_args(args)
    except TlsOptionError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    settings = BridgeSettings(
        max_illegal=max(1, args.max_illegal),
        handshake_timeout=args.handshake_timeout,
        grace_ms=args.grace_ms,
        move_timeout_ms=args.move_timeout_ms,
    )
    try:
        return asyncio.run(_run(args, program, settings))
    except ZigguratError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


async def _run(args: argparse.Namespace, program: list[str], settings: BridgeSettings) -> int:
    async with ZigguratClient(args.server, **args.tls_choice.client_options()) as client:
        handle = None
        if args.token:
            seat = args.seat or await _seat_of(client, MatchHandle(args.match, 0, args.token))
            handle = MatchHandle(args.match, seat, args.token)
        bot = StdioBot(program, settings=settings)
        try:
            await bot.start()
        except HandshakeError as error:
            print(f"error: {error}", file=sys.stderr)
            if handle is not None:  # the seat is ours: free the match from waiting on it
                await _resign_quietly(client, handle)
                print(f"verdict: {Verdict.CRASHED}", flush=True)
            return 2
        try:
            if handle is None:
                handle = await client.join(args.match, args.join or bot.name)
            print(f"playing seat {handle.seat} of match {args.match} with {bot.name}", flush=True)
            verdict = await play_seat(client, handle, bot)
        finally:
            await bot.close()
        print(f"verdict: {verdict}" + (f" ({bot.detail})" if bot.detail else ""), flush=True)
        return EXIT_CODES[verdict]


async def _seat_of(client: ZigguratClient, handle: MatchHandle) -> int:
    """The seat a token holds: the server says it in the view it returns to that seat."""
    match = await client.get_match(handle.match_id, handle)
    return match.view.viewer_seat


async def _resign_quietly(client: ZigguratClient, handle: MatchHandle) -> None:
    try:
        await client.resign(handle)
    except ZigguratError as error:
        print(f"could not resign: {error}", file=sys.stderr)
