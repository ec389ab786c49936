"""Per-key token buckets: one flooding bot is slowed down without touching anyone else.

A bucket left alone for ``burst / rate`` seconds is full again, exactly like a bucket
that was never used, so it is forgotten then: the limiter holds only the keys used in
the last few seconds. (Keys are per match and seat; a long-running server sees millions
of them, and kept for ever they were a steady memory growth in benchmarks/soak.py.)
``MAX_KEYS`` still bounds a flood of fresh keys inside one refill period.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

MAX_KEYS = 100_000


class RateLimiter:
    """``rate`` requests per second per key with bursts up to ``burst``; 0 disables it."""

    def __init__(self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self.refill_s = burst / rate if rate > 0 else 0.0
        # least recently used first: a key is moved to the end whenever it is used
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def __len__(self) -> int:
        """The keys remembered now (those used within the last refill period, at most MAX_KEYS)."""
        return len(self._buckets)

    def allow(self, key: str) -> bool:
        """Take one token from ``key``'s bucket; False when it is empty."""
        if self.rate <= 0:
            return True
        now = self.clock()
        tokens, last = self._buckets.pop(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        allowed = tokens >= 1
        self._buckets[key] = (tokens - 1 if allowed else tokens, now)
        self._forget_full(now)
        return allowed

    def _forget_full(self, now: float) -> None:
        """Drop the buckets that have refilled (they equal fresh ones), and any beyond MAX_KEYS."""
        buckets = self._buckets
        while buckets:
            _, (_, last) = next(iter(buckets.items()))
            if now - last < self.refill_s and len(buckets) <= MAX_KEYS:
                return
            buckets.popitem(last=False)
