"""Tournament throughput: games per second of random-bot tournaments (local executor, or Ray).

Two tournaments are run headless, each on a fresh database in a temporary directory,
exactly as ``ziggurat tournament run`` does (its own in-process server, built-in bots
launched as remote-bot processes, results committed game by game):

* Pylos, 2 random bots, colour-swapped pairs;
* Kabaleo, 4 seats, 4 random bots, duplicate deals (every deal played from all 4 seats).

For each it prints wall time, games/s, moves/s and where the CPU went: this process
(the tournament's server, the organiser and the SQLite writes: ``time.process_time``)
per game and per move, and the bot processes (``RUSAGE_CHILDREN`` once they are reaped).
Bot start-up is included in the wall time (the runner waits for the bots to connect),
so short runs understate the steady-state rate; ``--games`` in the hundreds amortises it.

    .venv/bin/python benchmarks/tournament.py --games 200 --concurrency 4
    .venv/bin/python benchmarks/tournament.py --only kabaleo --games 100 --concurrency 8
    .venv/bin/python benchmarks/tournament.py --executor ray --games 100 --concurrency 4
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import logging
import math
import os
import resource
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "server"), str(ROOT / "clients" / "python")]

from ziggurat.tournament.runner import TournamentRunner  # noqa: E402
from ziggurat.tournament.store import TournamentStore  # noqa: E402


@dataclass(frozen=True)
class Case:
    name: str
    game: str
    seats: int
    games_per_round: int
    options: str


CASES = (
    Case("pylos-2p", "pylos", 2, 2, ""),
    Case("kabaleo-4p", "kabaleo", 4, 4, "duplicate = true\n"),
)


@dataclass(frozen=True)
class Figures:
    case: str
    games: int
    moves: int
    wall: float
    server_cpu: float
    bots_cpu: float

    @property
    def games_per_second(self) -> float:
        return self.games / self.wall

    def row(self) -> str:
        return (
            f"{self.case:<11} {self.games:>6} {self.wall:>7.2f} {self.games_per_second:>8.1f} "
            f"{self.moves / self.wall:>8.0f} {1000 * self.server_cpu / self.games:>11.2f} "
            f"{1e6 * self.server_cpu / max(1, self.moves):>12.0f} {1000 * self.bots_cpu / self.games:>10.2f}"
        )


HEADER = (
    f"{'case':<11} {'games':>6} {'wall s':>7} {'games/s':>8} {'moves/s':>8} {'server ms/g':>11} "
    f"{'server us/mv':>12} {'bots ms/g':>10}"
)


def config_text(case: Case, games: int, concurrency: int) -> str:
    rounds = max(1, math.ceil(games / case.games_per_round))
    lines = [
        f'name = "bench-{case.name}"',
        f'seed = "bench-{case.name}"',
        f'game = "{case.game}"',
        f"seats = {case.seats}",
        f"rounds = {rounds}",
        f"concurrency = {concurrency}",
        case.options,
    ]
    for i in range(case.seats):
        lines += ["[[participants]]", f'name = "random{i + 1}"', 'builtin = "random"', ""]
    return "\n".join(lines)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def run_case(
    case: Case, games: int, concurrency: int, directory: Path, executor: str = "local"
) -> Figures:
    path = directory / f"{case.name}.toml"
    path.write_text(config_text(case, games, concurrency))
    db = directory / f"{case.name}.db"
    runner = TournamentRunner(
        db, config_text=path.read_text(), config_path=path, show_progress=False, executor=executor
    )
    cpu0, children0, wall0 = time.process_time(), children_cpu(), time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # the final standings
        reason = await runner.run()
    wall = time.perf_counter() - wall0
    cpu, children = time.process_time() - cpu0, children_cpu() - children0
    if reason != "completed":
        raise RuntimeError(f"{case.name}: {reason}")
    store = TournamentStore(db)
    results = [g.result for g in store.games(runner.tournament_id) if g.result is not None]
    store.close()
    moves = sum(len(r["moves"]) for r in results)
    failures = sum(v != "finished" for r in results for v in r["verdicts"])
    if failures:
        print(f"warning: {case.name}: {failures} seats did not finish normally", file=sys.stderr)
    return Figures(case.name, len(results), moves, wall, cpu, children)


async def main(args: argparse.Namespace) -> None:
    logging.basicConfig(level="ERROR")
    cases = [c for c in CASES if not args.only or c.game == args.only]
    print(
        f"random bots, {args.executor} executor, concurrency {args.concurrency}, ~{args.games} games per case"
    )
    ray = start_ray(args) if args.executor == "ray" else None
    if ray is not None:
        print("(ray: bots run in the workers, so 'bots ms/g' is not measured; cluster start not timed)")
    print(HEADER)
    try:
        with tempfile.TemporaryDirectory(prefix="ziggurat-bench-") as temp:
            for case in cases:
                figures = await run_case(case, args.games, args.concurrency, Path(temp), args.executor)
                print(figures.row(), flush=True)
    finally:
        if ray is not None:
            ray.shutdown()


def start_ray(args: argparse.Namespace) -> Any:
    """Join (or start) the Ray cluster before timing: the runner then reuses the connection."""
    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if args.ray_address:
        ray.init(address=args.ray_address, log_to_driver=False)
    else:
        ray.init(num_cpus=args.ray_cpus, include_dashboard=False, log_to_driver=False)
    return ray


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=100, help="games per tournament (rounded up; 100)")
    parser.add_argument("--concurrency", type=int, default=4, help="games at a time (4)")
    parser.add_argument("--only", choices=("pylos", "kabaleo"), help="run one of the two tournaments")
    parser.add_argument("--executor", choices=("local", "ray"), default="local", help="where games run")
    parser.add_argument("--ray-address", help="--executor ray: a cluster to join (default: start one here)")
    parser.add_argument("--ray-cpus", type=int, help="--executor ray, local cluster: its CPUs (default all)")
    asyncio.run(main(parser.parse_args()))
