"""``ziggurat replay``: play back exported tournament games in the terminal.

The games come from ``ziggurat tournament export --jsonl``. Each game is rebuilt
from its revealed seed (checked against its commitment) and its moves, so what
is shown is what the rules make of the record, not what the record claims.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from ziggurat.rules.core import RulesError
from ziggurat.rules.registry import get_rules
from ziggurat.rules.seeding import commitment


def register(commands: Any) -> None:
    """Add ``replay``."""
    parser = commands.add_parser("replay", help="play back exported games (JSONL) in the terminal")
    parser.add_argument("file", type=Path, metavar="GAMES.jsonl")
    parser.add_argument(
        "--game", type=int, action="append", metavar="INDEX", help="only this game (repeatable)"
    )
    parser.add_argument("--delay", type=float, default=0.0, help="seconds between moves (default 0)")
    parser.add_argument("--final", action="store_true", help="show only the final position of each game")
    parser.set_defaults(handler=_replay)


def render(game: str, position: str) -> str:
    """A position drawn for people: Pylos levels side by side, Kabaleo stacks and hands."""
    fields = position.split()
    if game == "pylos":
        levels = fields[0].split("/")
        sizes = (4, 3, 2, 1)
        rows = []
        for row in range(4):
            parts = []
            for level, size in zip(levels, sizes, strict=True):
                cells = level[row * size : (row + 1) * size] if row < size else ""
                parts.append(" ".join(cells).ljust(2 * 4))
            rows.append("   ".join(parts).rstrip())
        return "\n".join(rows) + f"\nto move: {fields[1]}"
    stacks = fields[0].split("/")
    hands = fields[1].split("/")
    tops = " ".join(f"{i + 1}:{s[-1]}{len(s)}" for i, s in enumerate(stacks))
    lines = [f"stacks {tops}"]
    lines += [f"seat {i + 1} hand {hand}" for i, hand in enumerate(hands)]
    lines.append(f"to move {fields[2]}, last stack {fields[3]}, objectives {fields[4]}")
    return "\n".join(lines)


def _replay(args: argparse.Namespace) -> int:
    try:
        lines = args.file.read_text().splitlines()
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    wanted = set(args.game or [])
    shown = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        record = json.loads(line)
        if wanted and record["index"] not in wanted:
            continue
        shown += 1
        if not _play_back(record, args):
            print(f"error: game on line {number} does not replay (see above)", file=sys.stderr)
            return 1
    if not shown:
        print("no game matched", file=sys.stderr)
        return 1
    return 0


def _play_back(record: dict[str, Any], args: argparse.Namespace) -> bool:
    game = record["game"]
    seats = record["seats"]
    seed = bytes.fromhex(record["revealed_seed"])
    print(f"== game {record['index']} (round {record['round']}): {game}, " + " vs ".join(seats))
    if commitment(seed) != record["commitment"]:
        print("   the revealed seed does NOT match the commitment")
        return False
    rules = get_rules(game)
    state = rules.new_game(rules.parse_config(record["options"], len(seats)), seed)
    if not args.final:
        print(render(game, rules.format_position(state)))
    for ply, move in enumerate(record["moves"], start=1):
        try:
            state = rules.apply(state, move["move"])
        except RulesError as error:
            print(f"   move {ply} {move['move']}: {error}")
            return False
        if not args.final:
            note = " (played by the server)" if move["substituted"] else ""
            print(f"\n{ply}. seat {move['seat']} ({seats[move['seat'] - 1]}): {move['move']}{note}")
            print(render(game, rules.format_position(state)))
            if args.delay:
                time.sleep(args.delay)
    if args.final:
        print(render(game, rules.format_position(state)))
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
