"""Slow tests first: xdist hands tests to its workers in collection order, so a long test
collected near the end is the run's tail, one worker busy while the others wait for it. Started
first, the long ones overlap with the short ones that fill the other workers.

The order among the slow tests, and among the rest, stays the collection order (a stable sort),
identical on every worker, as xdist requires.
"""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
