"""The per-key token buckets: limits as configured, and only recently used keys remembered."""

from __future__ import annotations

import pytest

from ziggurat.api import ratelimit
from ziggurat.api.ratelimit import RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_key_gets_its_burst_then_its_rate() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=2.0, burst=3.0, clock=clock)
    assert [limiter.allow("a") for _ in range(4)] == [True, True, True, False]
    assert limiter.allow("b")  # another key is untouched
    clock.now += 0.5  # one token back at 2 per second
    assert [limiter.allow("a") for _ in range(2)] == [True, False]


def test_refilled_buckets_are_forgotten_and_behave_as_fresh_ones() -> None:
    clock = Clock()
    limiter = RateLimiter(rate=2.0, burst=3.0, clock=clock)  # refills in 1.5 s
    for match in range(1000):  # a long-running server: keys of matches long over
        limiter.allow(f"m{match}/1")
        clock.now += 0.01
    assert len(limiter) <= 151  # only the last 1.5 s of keys are kept
    assert "m0/1" not in limiter._buckets
    # a key used hard and then left alone comes back with its whole burst
    assert [limiter.allow("x") for _ in range(4)] == [True, True, True, False]
    clock.now += 1.5
    limiter.allow("y")  # any use forgets what has refilled
    assert "x" not in limiter._buckets
    assert [limiter.allow("x") for _ in range(4)] == [True, True, True, False]


def test_a_flood_of_fresh_keys_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ratelimit, "MAX_KEYS", 50)
    limiter = RateLimiter(rate=1.0, burst=10.0, clock=Clock())  # nothing refills: time stands still
    for key in range(500):
        limiter.allow(str(key))
    assert len(limiter) == 50


def test_a_zero_rate_allows_everything_and_remembers_nothing() -> None:
    limiter = RateLimiter(rate=0.0, burst=0.0)
    assert all(limiter.allow("k") for _ in range(100))
    assert len(limiter) == 0
