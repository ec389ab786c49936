"""Slow tests at the head of every worker's share, so that none of them is a parallel run's tail.

scripts/test runs xdist with ``--dist worksteal``: it splits the collection into one contiguous
share per worker (each takes ``remaining // workers left`` of the tests, in order), and a worker
that runs out takes the last half of the longest queue left. Tests at the end of a share are
therefore the ones that move, and the ones at its head run first on their own worker. So the
``slow`` tests are dealt round-robin to the heads of the shares: they start at once, on every
worker, and the short tests behind them are what the idle workers steal at the end. The slow
tests of one module stay together, so that its module-scoped fixtures are built once. (With
``--dist load``, which hands out small batches in collection order, the long hosting and
tournament tests collected last made a tail of 150 s on one worker while two waited: 455 s in
all against 404 s with this order and work stealing, on this 2-core machine in December.)

Without xdist, or if xdist splits differently, the order is still the whole collection, only
less well balanced. Within the slow tests and within the rest the collection order stays (a
stable split), identical on every worker, as xdist requires.
"""

from __future__ import annotations

from typing import TypeVar

import pytest

T = TypeVar("T")


def share_sizes(count: int, workers: int) -> list[int]:
    """How many tests each worker's first share holds, as xdist's work-stealing scheduler splits
    them: each in turn takes an equal part of what is left.

    >>> share_sizes(10, 3)
    [3, 3, 4]
    >>> share_sizes(2, 4)
    [0, 0, 1, 1]
    """
    sizes = []
    remaining = count
    for left in range(workers, 0, -1):
        size = remaining // left
        sizes.append(size)
        remaining -= size
    return sizes


def slow_first_in_every_share(slow: list[list[T]], rest: list[T], workers: int) -> list[T]:
    """The slow tests, in groups kept together (one module's: its module-scoped fixtures are then
    built once), dealt to the heads of the workers' shares, each group to the share with the
    fewest slow tests so far; the rest after them, in order.

    >>> slow_first_in_every_share([["S1"], ["S2", "S3"], ["S4"]], ["a", "b", "c", "d", "e", "f"], 2)
    ['S1', 'S4', 'a', 'b', 'c', 'S2', 'S3', 'd', 'e', 'f']
    >>> slow_first_in_every_share([["S1"], ["S2"]], ["a"], 1)
    ['S1', 'S2', 'a']
    """
    sizes = share_sizes(sum(map(len, slow)) + len(rest), max(1, workers))
    heads: list[list[T]] = [[] for _ in sizes]
    for group in slow:
        min(heads, key=len).extend(group)  # the first of the least loaded
    order: list[T] = []
    rest_left = list(rest)
    for dealt, size in zip(heads, sizes, strict=True):
        filler = max(0, size - len(dealt))
        order += dealt + rest_left[:filler]
        del rest_left[:filler]
    return order + rest_left


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    by_module: dict[str, list[pytest.Item]] = {}
    for item in items:
        if item.get_closest_marker("slow") is not None:
            by_module.setdefault(item.nodeid.split("::")[0], []).append(item)
    rest = [item for item in items if item.get_closest_marker("slow") is None]
    items[:] = slow_first_in_every_share(list(by_module.values()), rest, workers)
