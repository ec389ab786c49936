"""Small helpers every bot shares: rank rewards, deadlines and seedable randomness."""

from __future__ import annotations

import contextlib
import gc
import random
import time
from collections.abc import Iterator

from ziggurat.rules.core import Outcome
from ziggurat_client.bot import Turn


def rank_reward(outcome: Outcome, seat: int) -> float:
    """Normalised rank of ``seat`` (0-based): 1 for a sole win, 0 for sole last, ties share.

    Seats tied on a rank occupy consecutive places and split their values, so a
    two-player draw is 0.5 each and a four-way tie is 0.5 each too: rewards of
    all seats always sum to ``n / 2``, which keeps multi-player search unbiased.
    """
    n = len(outcome.ranks)
    if n < 2:
        return 1.0
    rank = outcome.ranks[seat]
    tied = sum(1 for r in outcome.ranks if r == rank)
    first = rank - 1  # 0-based place of the best of the tied group
    return sum((n - 1 - p) / (n - 1) for p in range(first, first + tied)) / tied


def make_rng(seed: int | None) -> random.Random:
    """A private generator: bots never share the global one, so games replay from seeds."""
    return random.Random(seed)


class Deadline:
    """A wall-clock budget taken from the turn, so every bot honours the clock the same way."""

    def __init__(self, turn: Turn, max_seconds: float, fraction: float = 0.9) -> None:
        self.started = time.perf_counter()
        self.seconds = max(0.001, min(max_seconds, turn.budget_seconds(default=max_seconds)) * fraction)
        self.end = self.started + self.seconds

    def expired(self) -> bool:
        """True once the budget is spent."""
        return time.perf_counter() >= self.end

    def elapsed(self) -> float:
        """Seconds since the turn began."""
        return time.perf_counter() - self.started


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while searching.

    Search trees and transposition tables make millions of small objects, which
    triggers full collections that can stall a move for a large share of its
    budget. The bots' structures hold no reference cycles (reference counting
    frees them), so pausing the collector for one move is safe.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
