"""The standing arena: rated games per hour per core, pairing delay, and games to order the levels.

Runs ``ziggurat arena run`` (a subprocess, its own server and database in a temporary
directory) with the built-in levels random, greedy and mcts as entrants (the arena launches
them as remote bots, two copies of each so that pairs form while others play), on a Pylos
ladder, for ``--minutes``. Then it reads the arena's database and prints:

* **rated games per hour per core**: rated games / wall hours / the cores the arena and its
  bots used (their CPU seconds over the wall time: ``RUSAGE_CHILDREN`` once reaped);
* beside it, the **baseline measured in the same run**: the same levels playing the same
  pairings in-process (``ziggurat.bots.arena``: no server, no database, no network) per hour
  per core, and the ratio (what the server, the clocks and the records cost);
* **pairing delay** (an entrant free → seated), p50 and p99, from each game's ``waited_json``;
* **games to order the levels**: the first rated game after which the displayed ratings stay
  ordered random < greedy < mcts to the end (the copies of a level count as the level: all
  of its copies below all of the next level's).

    .venv/bin/python benchmarks/arena.py --minutes 3
    .venv/bin/python benchmarks/arena.py --minutes 10 --max-games 6 --mcts-seconds 0.2
"""

from __future__ import annotations

import argparse
import itertools
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "server"), str(ROOT / "clients" / "python")]

from ziggurat.arena.config import load_arena_config  # noqa: E402
from ziggurat.arena.ladder import Ladder  # noqa: E402
from ziggurat.arena.store import ArenaStore  # noqa: E402
from ziggurat.bots import make_bot  # noqa: E402
from ziggurat.bots.arena import play_game, time_left_for_budget  # noqa: E402

LEVELS = ("random", "greedy", "mcts")


def _config(directory: Path, args: argparse.Namespace) -> Path:
    entrants = ""
    for level in LEVELS:
        for copy in (1, 2):
            entrants += f'\n[[entrant]]\nname = "{level}{copy}"\nbuiltin = "{level}"\n'
            if level == "mcts":
                entrants += f"[entrant.options]\nmax_seconds = {args.mcts_seconds}\n"
    path = directory / "arena.toml"
    path.write_text(
        f"""name = "benchmark"
database = "arena.db"
[time_control]
base_ms = {args.base_ms}
increment_ms = 100
[pairing]
max_games = {args.max_games}
games_per_entrant = 1
interval_seconds = 0.05
stop_grace_seconds = 120
[[ladder]]
game = "pylos"
{entrants}"""
    )
    return path


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_arena(args: argparse.Namespace, directory: Path) -> tuple[float, float, Path]:
    """Run the arena for ``--minutes``; its wall seconds, CPU seconds (with its bots) and file."""
    config = _config(directory, args)
    cpu_before = _children_cpu()
    started = time.monotonic()
    with (directory / "arena.log").open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "ziggurat.cli.main", "arena", "run", str(config)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = started + args.minutes * 60
        while time.monotonic() < deadline and process.poll() is None:
            time.sleep(1.0)
            elapsed = time.monotonic() - started
            if sys.stdout.isatty():
                print(f"\r  arena: {elapsed:5.0f} s of {args.minutes * 60:.0f}", end="", flush=True)
        if sys.stdout.isatty():
            print()
        subprocess.run(
            [sys.executable, "-m", "ziggurat.cli.main", "arena", "stop", str(config)],
            check=True,
            capture_output=True,
        )
        process.wait(300)
    return time.monotonic() - started, _children_cpu() - cpu_before, config


def baseline(pairings: list[tuple[str, str]], seconds: float, args: argparse.Namespace) -> tuple[int, float]:
    """The arena's own pairings (by level) played in-process for ``seconds``: games and CPU s."""
    # one bot per level and seat, built once (as the arena's bot processes are)
    made = {
        (level, seat): make_bot(
            level, seed=seat, **({"max_seconds": args.mcts_seconds} if level == "mcts" else {})
        )
        for level in LEVELS
        for seat in (0, 1)
    }
    cpu0 = time.process_time()
    end = time.monotonic() + seconds
    games = 0
    while time.monotonic() < end:
        for seed, (one, two) in enumerate(pairings):
            bots = [made[(one, 0)], made[(two, 1)]]
            play_game("pylos", {}, 2, bots, seed, time_left_ms=time_left_for_budget(args.mcts_seconds))
            games += 1
            if time.monotonic() >= end:
                break
    return games, time.process_time() - cpu0


def _level(line: str) -> str:
    return line.rstrip("0123456789")


def games_to_order(store: ArenaStore) -> tuple[int | None, int]:
    """The first rated game after which the levels stay ordered; and how many were rated."""
    ladder = Ladder("pylos")
    first_ordered: int | None = None
    rows = store.rated_in_order()
    for row in rows:
        assert row.result is not None and row.ratings is not None
        after = {n: (r["after"][0], r["after"][1]) for n, r in zip(row.seats, row.ratings, strict=True)}
        ladder.apply(row.seats, row.result["ranks"], after, row.end_ms or 0)
        by_level = {lv: [x.rating for n, x in ladder.lines.items() if _level(n) == lv] for lv in LEVELS}
        ordered = all(by_level.values()) and all(
            max(by_level[low]) < min(by_level[high]) for low, high in itertools.pairwise(LEVELS)
        )
        if ordered and first_ordered is None:
            first_ordered = row.rated_order
        elif not ordered:
            first_ordered = None
    return first_ordered, len(rows)


def percentile(values: list[int], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=3.0)
    parser.add_argument("--max-games", type=int, default=3)
    parser.add_argument("--base-ms", type=int, default=10_000, help="each seat's clock")
    parser.add_argument("--mcts-seconds", type=float, default=0.1, help="mcts's max_seconds per move")
    parser.add_argument("--baseline-seconds", type=float, default=60.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        levels = ", ".join(LEVELS)
        print(f"arena: 6 entrants (2 x {levels}), {args.max_games} games at once, {args.minutes:g} min")
        wall, cpu, config = run_arena(args, directory)
        store = ArenaStore(load_arena_config(config).database, readonly=True)
        try:
            games = store.games()
            ordered_at, rated = games_to_order(store)
            waited = [w for g in games for w in g.waited_ms]
            rated_games = [g for g in reversed(games) if g.status == "rated"]
            pairings = [(_level(g.seats[0]), _level(g.seats[1])) for g in rated_games]
        finally:
            store.close()
        # in a random order, so that however far the baseline gets its mix of levels is the arena's
        random.Random(1).shuffle(pairings)
        print(f"  baseline: the same {len(pairings)} pairings in-process for {args.baseline_seconds:g} s")
        base_games, base_cpu = baseline(pairings or [("random", "random")], args.baseline_seconds, args)
    cores = cpu / wall if wall else float("nan")
    per_hour_core = rated / (wall / 3600) / cores if cores else float("nan")
    base_rate = base_games / (base_cpu / 3600) if base_cpu else float("nan")
    print()
    print(f"{'rated games':<44} {rated}")
    print(f"{'wall time':<44} {wall:.0f} s   cores used (arena + bots) {cores:.2f}")
    print(f"{'rated games per hour per core (arena)':<44} {per_hour_core:,.0f}")
    print(f"{'games per hour per core (in-process baseline)':<44} {base_rate:,.0f}")
    print(f"{'arena / baseline':<44} {per_hour_core / base_rate:.2f}")
    print(
        f"{'pairing delay, free -> seated (ms)':<44} p50 {percentile(waited, 0.5):.0f}   "
        f"p99 {percentile(waited, 0.99):.0f}   ({len(waited)} seatings)"
    )
    if ordered_at is None:
        print(f"{'games to order random < greedy < mcts':<44} not ordered after {rated} games")
    else:
        print(f"{'games to order random < greedy < mcts':<44} {ordered_at} (stayed ordered to game {rated})")


if __name__ == "__main__":
    main()
