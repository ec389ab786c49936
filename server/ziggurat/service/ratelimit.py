"""Per-key token buckets: one flooding bot is slowed down without touching anyone else."""

from __future__ import annotations

import time
from collections import OrderedDict

MAX_KEYS = 100_000


class RateLimiter:
    """``rate`` requests per second per key with bursts up to ``burst``; 0 disables it."""

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def allow(self, key: str) -> bool:
        """Take one token from ``key``'s bucket; False when it is empty."""
        if self.rate <= 0:
            return True
        now = time.monotonic()
        tokens, last = self._buckets.pop(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.rate)
        allowed = tokens >= 1
        self._buckets[key] = (tokens - 1 if allowed else tokens, now)
        if len(self._buckets) > MAX_KEYS:
            self._buckets.popitem(last=False)
        return allowed
