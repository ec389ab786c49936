"""Kabaleo random playouts per second: the fast path beside the public legal_moves()+apply() baseline.

Usage: .venv/bin/python benchmarks/kabaleo_playouts.py --seconds 5 --players 4 --deal random

Both figures are measured in the same run from the same fresh seeded set-up, so the
ratio is meaningful on any machine. Prints figures only; never asserts on time.
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import random
import sys
import time
from collections.abc import Callable

from ziggurat.rules.kabaleo import (
    Deal,
    KabaleoConfig,
    KabaleoState,
    apply,
    legal_moves,
    new_game,
    outcome_of,
    random_playout,
)


def naive_playout(state: KabaleoState, rng: random.Random) -> object:
    """The baseline: what a bot would do with only the public contract."""
    while state.to_move is not None:
        moves = legal_moves(state)
        state = apply(state, moves[rng.randrange(len(moves))])
    return outcome_of(state)


def rate(
    playout: Callable[[KabaleoState, random.Random], object], state: KabaleoState, seconds: float
) -> float:
    """Playouts per second over roughly ``seconds`` of wall time (checked every batch of 64)."""
    rng = random.Random(12345)
    count = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(64):
            playout(state, rng)
        count += 64
        now = time.perf_counter()
        if now >= deadline:
            return count / (now - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=3.0, help="wall time per measurement (default 3)")
    parser.add_argument("--players", type=int, choices=(2, 3, 4), default=4)
    parser.add_argument("--deal", choices=[d.value for d in Deal], default="random")
    parser.add_argument("--last-stack", action="store_true", help="play with the last_stack rule")
    parser.add_argument(
        "--seed", default="benchmark", help="text hashed (SHA-256) into the 32-byte set-up seed"
    )
    args = parser.parse_args(argv)

    config = KabaleoConfig(args.players, Deal(args.deal), args.last_stack)
    state = new_game(config, hashlib.sha256(args.seed.encode()).digest())
    print(f"python {platform.python_version()} ({platform.python_implementation()}), {platform.machine()}")
    print(
        f"kabaleo players={args.players} deal={args.deal} last_stack={args.last_stack} "
        f"plies/game={config.total_plies} seconds={args.seconds}"
    )
    fast = rate(random_playout, state, args.seconds)
    print(f"random_playout:          {fast:12,.0f} playouts/s  ({fast * config.total_plies:,.0f} plies/s)")
    naive = rate(naive_playout, state, args.seconds)
    print(f"legal_moves()+apply():   {naive:12,.0f} playouts/s  (baseline, same run)")
    print(f"speed-up:                {fast / naive:12.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
