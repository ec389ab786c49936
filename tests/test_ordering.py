"""tests/ordering.py: the suite's order under xdist is a permutation of the collection with the
slow tests at the head of every worker's share."""

from __future__ import annotations

import doctest

from hypothesis import assume, given
from hypothesis import strategies as st

from tests import ordering


def test_its_examples_hold() -> None:
    result = doctest.testmod(ordering)
    assert result.attempted > 0
    assert result.failed == 0


@given(st.lists(st.integers(1, 5), max_size=12), st.integers(0, 300), st.integers(1, 6))
def test_every_share_starts_with_its_slow_tests_and_nothing_is_lost(
    group_sizes: list[int], rest_count: int, workers: int
) -> None:
    slow = [[f"slow{group}.{i}" for i in range(size)] for group, size in enumerate(group_sizes)]
    rest = [f"rest{i}" for i in range(rest_count)]
    order = ordering.slow_first_in_every_share(slow, rest, workers)
    assert sorted(order) == sorted([name for group in slow for name in group] + rest)
    assert [name for name in order if name.startswith("rest")] == rest  # the rest keep their order
    sizes = ordering.share_sizes(len(order), workers)
    assert sum(sizes) == len(order)
    start = 0
    slow_per_share = []
    for size in sizes:
        share = order[start : start + size]
        start += size
        dealt = [name for name in share if name.startswith("slow")]
        slow_per_share.append(len(dealt))
        assume(not share or share[-1].startswith("rest"))  # room for its slow tests
        assert share[: len(dealt)] == dealt  # the slow tests first
    for group in slow:  # each group in one share, in its order
        positions = [order.index(name) for name in group]
        assert positions == list(range(positions[0], positions[0] + len(group)))
    # dealt evenly: no share has more than the largest group beyond another
    assert max(slow_per_share) - min(slow_per_share) <= max(group_sizes, default=0)
