"""Pairing, as a property over any free pool: each line seated at most once a round, tables of
configured sizes, recent opponents avoided while others are free, seat 1 going to whoever had
it least, and the most uncertain line picking first."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ziggurat.arena.ladder import Ladder
from ziggurat.arena.pairing import Candidate, pair


def _played(ladder: Ladder, seats: tuple[str, ...], ranks: tuple[int, ...]) -> None:
    after = ladder.preview(dict(zip(seats, ranks, strict=True)))
    ladder.apply(seats, ranks, after, 0)


@given(
    names=st.lists(st.sampled_from([f"b{i}" for i in range(12)]), min_size=0, max_size=12, unique=True),
    sizes=st.sets(st.integers(2, 4), min_size=1),
    history=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)), max_size=20),
)
@settings(max_examples=150, deadline=None)
def test_every_line_at_most_once_and_tables_of_configured_sizes(
    names: list[str], sizes: set[int], history: list[tuple[int, int]]
) -> None:
    ladder = Ladder("kabaleo")
    for a, b in history:
        if a != b:
            _played(ladder, (f"b{a}", f"b{b}"), (1, 2))
    free = [Candidate(name, float(i)) for i, name in enumerate(names)]
    tables = pair(ladder, free, sorted(sizes), repeat_window=2)
    seated = [line for table in tables for line in table]
    assert len(seated) == len(set(seated))
    assert set(seated) <= set(names)
    assert all(len(table) in sizes for table in tables)
    # only fewer lines than the smallest table are left unseated
    assert len(names) - len(seated) < min(sizes)


def test_a_recent_opponent_is_skipped_while_another_is_free() -> None:
    ladder = Ladder("pylos")
    _played(ladder, ("a", "b"), (1, 2))
    free = [Candidate("a", 0.0), Candidate("b", 1.0), Candidate("c", 2.0), Candidate("d", 3.0)]
    for table in pair(ladder, free, (2,), repeat_window=1):
        assert set(table) != {"a", "b"}
    # with nobody else free, the same two meet again
    assert [set(t) for t in pair(ladder, free[:2], (2,), repeat_window=1)] == [{"a", "b"}]
    # a window of 0 remembers nothing
    assert len(pair(ladder, free, (2,), repeat_window=0)) == 2


def test_seat_one_goes_to_whoever_had_it_least() -> None:
    ladder = Ladder("pylos")
    _played(ladder, ("a", "x"), (1, 2))
    _played(ladder, ("a", "y"), (2, 1))
    (table,) = pair(ladder, [Candidate("a", 0.0), Candidate("b", 1.0)], (2,), repeat_window=0)
    assert table == ("b", "a")


def test_the_most_uncertain_line_picks_first_and_gets_the_closest_opponent() -> None:
    ladder = Ladder("pylos")
    for _ in range(30):  # strong beats weak many times: both are certain, far apart
        _played(ladder, ("strong", "weak"), (1, 2))
    for i in range(30):  # mid1 and mid2 share their games: both certain, near 25
        _played(ladder, ("mid1", "mid2"), (1, 2) if i % 2 else (2, 1))
    newcomer = Candidate("new", 5.0)  # free last, but the most uncertain
    free = [Candidate("strong", 0.0), Candidate("weak", 1.0), Candidate("mid1", 2.0), newcomer]
    tables = pair(ladder, free, (2,), repeat_window=0)
    assert "new" in tables[0]
    # the newcomer (mu 25) is closest to mid1 (near 25), rather than to either extreme
    assert set(tables[0]) == {"new", "mid1"}


def test_kabaleo_sizes_take_turns() -> None:
    ladder = Ladder("kabaleo")
    free = [Candidate(f"p{i}", float(i)) for i in range(7)]
    first = pair(ladder, free, (3, 4), repeat_window=0)
    assert [len(t) for t in first] == [4, 3]
    _played(ladder, ("p0", "p1", "p2", "p3"), (1, 2, 3, 4))
    second = pair(ladder, free[:4], (3, 4), repeat_window=0)
    assert [len(t) for t in second] == [3]  # size 3 has fewer games now
