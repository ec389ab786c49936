"""Strength ladder of the bundled bots, measured by in-process games (no server).

Each rung plays the bot against the one below it, seats (and, in Kabaleo, the
same seeded set-up from every seat) alternated, and prints the stronger bot's
score rate (wins + draws/2 in 2-player games; mean normalised rank otherwise)
with a 95 % normal interval, and whether it meets the >= 70 % goal. The
4-player Kabaleo "table check" seats one bot against three copies of the one
below: there a rank reward of 0.5 is par, so the goal line is not applied.

    .venv/bin/python benchmarks/bot_ladder.py --games 200 --budget 0.05 --workers 2
    .venv/bin/python benchmarks/bot_ladder.py --quick
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from ziggurat.bots import make_bot
from ziggurat.bots.arena import MatchResult, play_match, time_left_for_budget
from ziggurat_client.bot import Bot

GOAL = 0.70


@dataclass(frozen=True)
class Rung:
    game: str
    seats: int
    hero: str
    other: str


RUNGS = [
    Rung("pylos", 2, "greedy", "random"),
    Rung("pylos", 2, "mcts", "greedy"),
    Rung("pylos", 2, "alphabeta", "mcts"),
    Rung("kabaleo", 2, "greedy", "random"),
    Rung("kabaleo", 2, "mcts", "greedy"),
    Rung("kabaleo", 4, "greedy", "random"),
    Rung("kabaleo", 4, "mcts", "greedy"),
]


def _factory(name: str) -> Callable[[int], Bot]:
    return partial(_build, name)


def _build(name: str, seed: int) -> Bot:
    return make_bot(name, seed=seed)


def _chunk(rung: Rung, seed: int, time_left_ms: int, span: tuple[int, int]) -> MatchResult:
    start, count = span
    return play_match(
        rung.game,
        {},
        rung.seats,
        _factory(rung.hero),
        _factory(rung.other),
        games=count,
        seed=seed,
        time_left_ms=time_left_ms,
        start=start,
    )


def _spans(games: int, seats: int, workers: int) -> list[tuple[int, int]]:
    """Split the series into chunks that keep each block of ``seats`` games (one seed) together."""
    blocks = math.ceil(games / seats)
    per = max(1, math.ceil(blocks / (workers * 4)))
    spans = []
    for first in range(0, blocks, per):
        start = first * seats
        spans.append((start, min(games, (first + per) * seats) - start))
    return [s for s in spans if s[1] > 0]


def run_rung(rung: Rung, games: int, budget: float, seed: int, workers: int) -> None:
    time_left_ms = time_left_for_budget(budget)
    started = time.perf_counter()
    job = partial(_chunk, rung, seed, time_left_ms)
    spans = _spans(games, rung.seats, workers)
    if workers > 1:
        with multiprocessing.Pool(workers) as pool:
            parts = pool.map(job, spans)
    else:
        parts = [job(span) for span in spans]
    rewards = [r for part in parts for r in part.rewards]
    n = len(rewards)
    mean = sum(rewards) / n
    var = sum((r - mean) ** 2 for r in rewards) / max(1, n - 1)
    half = 1.96 * math.sqrt(var / n)
    wins = sum(part.wins for part in parts)
    draws = sum(part.draws for part in parts)
    slowest = max(part.max_move_seconds for part in parts)
    label = f"{rung.game}/{rung.seats}p {rung.hero} vs {rung.other}" + (
        f" x{rung.seats - 1}" if rung.seats > 2 else ""
    )
    if rung.seats == 2:
        verdict = "MEETS 70% goal" if mean >= GOAL else "below 70% goal"
    else:
        verdict = "table check (par 0.50)"
    print(
        f"{label:38s} n={n:4d} rate={mean:.3f} ±{half:.3f} [{mean - half:.3f}, {mean + half:.3f}] "
        f"W{wins} D{draws} L{n - wins - draws}  slowest move {slowest * 1000:.0f} ms  "
        f"{time.perf_counter() - started:.0f}s  {verdict}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", type=int, default=200, help="games per rung (default 200)")
    parser.add_argument("--budget", type=float, default=0.05, help="thinking seconds per move (default 0.05)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--game", choices=["pylos", "kabaleo"], help="only this game")
    parser.add_argument("--no-4p", action="store_true", help="skip the 4-player Kabaleo table check")
    parser.add_argument("--quick", action="store_true", help="20 games per rung, 0.02 s per move")
    args = parser.parse_args()
    if args.quick:
        args.games, args.budget = 20, 0.02
    print(f"bot ladder: {args.games} games per rung, {args.budget} s per move, seed {args.seed}", flush=True)
    for rung in RUNGS:
        if args.game and rung.game != args.game:
            continue
        if args.no_4p and rung.seats > 2:
            continue
        run_rung(rung, args.games, args.budget, args.seed, args.workers)


if __name__ == "__main__":
    main()
