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
    """A wall-clock budget counted from when the turn was received, as the server's clock runs.

    The server's clock for the turn started with its TurnStarted; ``turn.time_left_ms`` is the
    time left as of then and ``turn.received`` the moment this seat learnt of it. So the budget
    (a share of the time left, at most ``max_seconds``) ends at ``received + budget``: a search
    that had to wait for a worker or a core thinks that much less, never past its time.
    """

    def __init__(self, turn: Turn, max_seconds: float, fraction: float = 0.9) -> None:
        self.started = turn.received
        self.seconds = max(0.001, min(max_seconds, turn.budget_seconds(default=max_seconds)) * fraction)
        self.end = self.started + self.seconds

    def expired(self) -> bool:
        """True once the budget is spent."""
        return time.monotonic() >= self.end

    def elapsed(self) -> float:
        """Seconds since the turn was received."""
        return time.monotonic() - self.started


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while searching — only in a process of its own.

    Search trees and transposition tables make millions of small objects, which
    triggers full collections that can stall a move for a large share of its
    budget. The bots' structures hold no reference cycles (reference counting
    frees them), so pausing the collector for one move is safe. But the switch is
    process-wide: it is used only where the search is all the process does — a search
    worker (:mod:`ziggurat.bots.workers`) or the in-process arena — never in a process that
    hosts a server or an event loop, which would lose its collector to every search.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
