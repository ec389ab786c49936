"""``ziggurat replay``: play back exported tournament games in the terminal.

The games come from ``ziggurat tournament export --jsonl``. Each game is rebuilt
from its revealed seed (checked against its commitment) and its moves, so what
is shown is what the rules make of the record, not what the record claims: each position
drawn when :mod:`ziggurat.cli.drawings` draws the game, else as its full position text.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from ziggurat.cli import exits
from ziggurat.cli.commands import summary_of
from ziggurat.cli.drawings import draw
from ziggurat.rules.core import RulesError
from ziggurat.rules.registry import get_rules
from ziggurat.rules.seeding import commitment


def register(commands: Any) -> None:
    """Add ``replay``."""
    parser = commands.add_parser("replay", help=summary_of("replay"))
    parser.add_argument("file", type=Path, metavar="GAMES.jsonl")
    parser.add_argument(
        "--game",
        type=int,
        action="append",
        metavar="N",
        help="only game N, as numbered in `Finished game N` and the export's index (0-based; repeatable)",
    )
    parser.add_argument("--delay", type=_seconds, default=0.0, help="seconds between moves (default 0)")
    parser.add_argument("--final", action="store_true", help="show only the final position of each game")
    parser.set_defaults(handler=_replay)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError("must be 0 or more seconds")
    return value


# The fields a game record must have, and their JSON types (``ziggurat tournament export --jsonl``).
RECORD_FIELDS: dict[str, type | tuple[type, ...]] = {
    "index": int,
    "round": int,
    "game": str,
    "options": dict,
    "seats": list,
    "revealed_seed": str,
    "commitment": str,
    "moves": list,
    "termination": str,
    "ranks": list,
    "verdicts": list,
}


class RecordError(ValueError):
    """A line that is not a game record (said in one line, with the line number)."""


def parse_record(line: str) -> dict[str, Any]:
    """One exported game, checked for the fields and types the replay reads."""
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise RecordError(f"not JSON ({error.msg} at column {error.colno})") from None
    if not isinstance(record, dict):
        raise RecordError("not a game record (a JSON object per line is expected)")
    for key, kind in RECORD_FIELDS.items():
        if key not in record:
            raise RecordError(f"not a game record: no {key!r}")
        if not isinstance(record[key], kind) or isinstance(record[key], bool):
            raise RecordError(f"not a game record: {key!r} has the wrong type")
    if not all(isinstance(seat, str) for seat in record["seats"]):
        raise RecordError("not a game record: 'seats' must be names")
    try:
        bytes.fromhex(record["revealed_seed"])
    except ValueError:
        raise RecordError("not a game record: 'revealed_seed' is not hex") from None
    for move in record["moves"]:
        if not (
            isinstance(move, dict)
            and isinstance(move.get("move"), str)
            and isinstance(move.get("seat"), int)
            and 1 <= move["seat"] <= len(record["seats"])
        ):
            raise RecordError(f"not a game record: bad move entry {move!r:.60}")
    if not len(record["ranks"]) == len(record["verdicts"]) == len(record["seats"]):
        raise RecordError("not a game record: 'ranks' and 'verdicts' must have one entry per seat")
    return record


def _replay(args: argparse.Namespace) -> int:
    try:
        lines = args.file.read_text().splitlines()
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return exits.USAGE
    except UnicodeDecodeError:
        print(f"error: {args.file} is not UTF-8 text (one JSON game per line)", file=sys.stderr)
        return exits.USAGE
    records: list[tuple[int, dict[str, Any]]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            records.append((number, parse_record(line)))
        except RecordError as error:
            print(f"error: {args.file} line {number}: {error}", file=sys.stderr)
            return exits.USAGE
    # Every game asked for must be in the file, checked before anything is shown: a mistyped
    # number is bad input, not an empty success.
    wanted = set(args.game or [])
    missing = sorted(wanted - {record["index"] for _, record in records})
    if missing:
        print(f"error: {_no_games(missing)} in {args.file} ({_held(records)})", file=sys.stderr)
        return exits.USAGE
    if not records:  # well-formed, nothing to show (an export of a tournament with no game yet)
        print(f"error: {args.file} holds no games", file=sys.stderr)
        return exits.FAILED
    for number, record in records:
        if wanted and record["index"] not in wanted:
            continue
        if not _play_back(record, args):
            print(f"error: game on line {number} does not replay (see above)", file=sys.stderr)
            return exits.FAILED
    return 0


def _no_games(missing: list[int]) -> str:
    return f"no game {missing[0]}" if len(missing) == 1 else "no games " + ", ".join(map(str, missing))


def _held(records: list[tuple[int, dict[str, Any]]]) -> str:
    """Which game numbers a file holds, for the error line (games are numbered from 0)."""
    indices = sorted(record["index"] for _, record in records)
    if not indices:
        return "it holds no games"
    if indices == list(range(indices[0], indices[-1] + 1)):
        span = str(indices[0]) if len(indices) == 1 else f"{indices[0]} to {indices[-1]}"
        return f"it holds game{'s' if len(indices) > 1 else ''} {span}; games are numbered from 0"
    return f"it holds {len(indices)} games numbered from 0, {indices[0]} to {indices[-1]}"


def _play_back(record: dict[str, Any], args: argparse.Namespace) -> bool:
    game = record["game"]
    seats = record["seats"]
    seed = bytes.fromhex(record["revealed_seed"])
    print(f"== game {record['index']} (round {record['round']}): {game}, " + " vs ".join(seats))
    if not record["commitment"] and all(v == "disqualified" for v in record["verdicts"]):
        print("-- not played: every seat was forfeited (all its participants disqualified); nobody wins")
        return True
    if commitment(seed) != record["commitment"]:
        print("   the revealed seed does NOT match the commitment")
        return False
    try:
        rules = get_rules(game)
        state = rules.new_game(rules.parse_config(record["options"], len(seats)), seed)
    except RulesError as error:
        print(f"   cannot set the game up: {error}")
        return False
    if not args.final:
        print(draw(game, rules.format_position(state)))
    for ply, move in enumerate(record["moves"], start=1):
        try:
            state = rules.apply(state, move["move"])
        except RulesError as error:
            print(f"   move {ply} {move['move']}: {error}")
            return False
        if not args.final:
            note = " (played by the server)" if move["substituted"] else ""
            print(f"\n{ply}. seat {move['seat']} ({seats[move['seat'] - 1]}): {move['move']}{note}")
            print(draw(game, rules.format_position(state)))
            if args.delay:
                time.sleep(args.delay)
    if args.final:
        print(draw(game, rules.format_position(state)))
    ranks = record["ranks"]
    verdicts = record["verdicts"]
    print(
        f"-- {record['termination']}: "
        + ", ".join(
            f"{name} rank {rank}" + ("" if verdict == "finished" else f" ({verdict})")
            for name, rank, verdict in zip(seats, ranks, verdicts, strict=True)
        )
    )
    return True
