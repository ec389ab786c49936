"""Pylos random-playout throughput: the fast mask loop against a naive legal_moves()+apply() loop.

Prints playouts per second, mean plies per game and the outcome distribution for
both, so the speed-up (and the agreement of their outcome statistics) is visible
in one run. Figures only: nothing here asserts on time.

    .venv/bin/python benchmarks/pylos_playouts.py --seconds 10 --variant standard --seed 1
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter

from ziggurat.rules.core import Outcome
from ziggurat.rules.pylos import PYLOS, PylosConfig, PylosState, Variant, _completion, random_playout
from ziggurat.rules.pylos_playout import END_LIMIT, END_REPETITION, END_STUCK, END_TOP, playout

_CODE_NAMES = {
    END_TOP: "pyramid_complete",
    END_STUCK: "no_legal_move",
    END_REPETITION: "repetition",
    END_LIMIT: "move_limit",
}


def _describe(termination: str, winner: str) -> str:
    return f"{termination}:{winner}"


def bench_fast(start: PylosState, seconds: float, rng: random.Random) -> tuple[int, int, Counter[str], float]:
    """Run the playout loop (what random_playout uses) and keep its final ply for statistics."""
    completion = _completion(start.config.variant)
    limit = start.config.max_moves or 1 << 62
    games = plies = 0
    outcomes: Counter[str] = Counter()
    began = time.perf_counter()
    while (elapsed := time.perf_counter() - began) < seconds:
        code, seat, ply = playout(
            start.light,
            start.dark,
            start.side,
            ply=start.ply,
            seen=Counter(start.seen),
            move_limit=limit,
            completion=completion,
            rng=rng,
        )
        games += 1
        plies += ply - start.ply
        if code == END_TOP:
            winner = "LD"[seat]
        elif code == END_STUCK:
            winner = "LD"[seat ^ 1]
        else:
            winner = "draw"
        outcomes[_describe(_CODE_NAMES[code], winner)] += 1
    return games, plies, outcomes, elapsed


def bench_naive(
    start: PylosState, seconds: float, rng: random.Random
) -> tuple[int, int, Counter[str], float]:
    """The baseline: uniform choice from the public legal_moves() list, applied with apply()."""
    games = plies = 0
    outcomes: Counter[str] = Counter()
    began = time.perf_counter()
    while (elapsed := time.perf_counter() - began) < seconds:
        state = start
        while state.outcome is None:
            moves = PYLOS.legal_moves(state)
            state = PYLOS.apply(state, moves[rng.randrange(len(moves))])
        games += 1
        plies += state.ply - start.ply
        outcomes[_describe(state.outcome.termination.value, _winner(state.outcome))] += 1
    return games, plies, outcomes, elapsed


def bench_public(
    start: PylosState, seconds: float, rng: random.Random
) -> tuple[int, int, Counter[str], float]:
    """The public random_playout(state, rng) entry point (loop plus Outcome building); no ply count."""
    games = 0
    outcomes: Counter[str] = Counter()
    began = time.perf_counter()
    while (elapsed := time.perf_counter() - began) < seconds:
        outcome = random_playout(start, rng)
        games += 1
        outcomes[_describe(outcome.termination.value, _winner(outcome))] += 1
    return games, 0, outcomes, elapsed


def _winner(outcome: Outcome) -> str:
    return "draw" if outcome.is_draw else "LD"[outcome.winners[0]]


def _report(name: str, games: int, plies: int, outcomes: Counter[str], elapsed: float) -> float:
    rate = games / elapsed
    mean = f", mean {plies / max(games, 1):.1f} plies/game" if plies else ""
    print(f"{name}: {games} playouts in {elapsed:.2f} s = {rate:,.0f} playouts/s{mean}")
    for key, count in sorted(outcomes.items()):
        print(f"    {key:<24} {count / games:6.1%}")
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="time budget of each of the two runs")
    parser.add_argument("--variant", choices=[v.value for v in Variant], default="standard")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    start = PYLOS.new_game(PylosConfig(Variant(args.variant)), bytes(32))
    _completion(start.config.variant)  # build the tables before the clock starts
    fast = _report("fast playout loop", *bench_fast(start, args.seconds, random.Random(args.seed)))
    _report("public random_playout()", *bench_public(start, args.seconds, random.Random(args.seed)))
    naive = _report(
        "naive legal_moves()+apply()", *bench_naive(start, args.seconds, random.Random(args.seed))
    )
    print(f"speed-up: {fast / naive:.1f}x")


if __name__ == "__main__":
    main()
