"""Who plays whom next: tables from the lines that are connected and free, by rating.

The rule, each pairing round, per ladder (:func:`pair`):

1. **Who picks first.** The free lines are ordered by uncertainty, most uncertain first
   (OpenSkill's sigma), then by how long they have waited: new and uncertain lines are
   seated first and so play more, and nobody who is free waits behind a crowd forever.
2. **Table size.** Among the ladder's configured sizes that the free lines can fill, the
   size with the fewest rated games so far (a two-seat game such as Pylos has one size).
3. **Opponents.** The first free line picks, one seat at a time, the free line that makes
   the closest table: the highest match quality, OpenSkill's draw probability of the whole
   table (``Ladder.quality``), the longest waiting on a tie. Lines it met in its last
   ``repeat_window`` games are skipped while any other free line is left.
   Greedy picks can leave the last two free lines to meet again: such a two-seat table is
   swapped with another when both new pairings are fresh.
4. **Seats.** The table sits by how often each line had seat 1 (the first move, light in
   Pylos), fewest first, so seats even out over time.

Each line is seated at most once a round; a line free for more games is picked again in the
next round (every ``interval_seconds``). Lines are never paired while away: only connected
lines are candidates (:mod:`ziggurat.arena.runner` builds them from the bot registry).

>>> from ziggurat.arena.ladder import Ladder
>>> ladder = Ladder("pylos")
>>> free = [Candidate("a", 0.0), Candidate("b", 1.0), Candidate("c", 2.0)]
>>> tables = pair(ladder, free, (2,), repeat_window=2)
>>> len(tables), len(tables[0])
(1, 2)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ziggurat.arena.ladder import Ladder


@dataclass(frozen=True, slots=True)
class Candidate:
    """A line that may be seated now, and since when it has been free (monotonic seconds)."""

    line: str
    free_since: float


def pair(
    ladder: Ladder, free: Sequence[Candidate], sizes: Sequence[int], *, repeat_window: int
) -> list[tuple[str, ...]]:
    """The tables to seat now on ``ladder`` (lines by seat, seat 1 first)."""
    waited = {c.line: c.free_since for c in free}
    pool = sorted(waited, key=lambda n: (-ladder.line(n).sigma, waited[n], n))
    tables: list[tuple[str, ...]] = []
    while pool:
        fitting = [s for s in sizes if s <= len(pool)]
        if not fitting:
            break
        size = min(fitting, key=lambda s: (ladder.games_by_size.get(s, 0), -s))
        anchor = pool.pop(0)
        recent = _recent(ladder, anchor, repeat_window) if repeat_window else set()
        table = [anchor]
        while len(table) < size:
            fresh = [n for n in pool if n not in recent]
            choices = fresh or pool
            best = max(choices, key=lambda n: (ladder.quality([*table, n]), -waited[n], n))
            pool.remove(best)
            table.append(best)
        tables.append(tuple(table))
    if repeat_window:
        _untangle(ladder, tables, repeat_window)
    return [tuple(sorted(t, key=lambda n: (_first_share(ladder, n), waited[n], n))) for t in tables]


def _recent(ladder: Ladder, name: str, window: int) -> set[str]:
    met: set[str] = set()
    for opponents in list(ladder.line(name).recent)[-window:]:
        met |= opponents
    return met


def _untangle(ladder: Ladder, tables: list[tuple[str, ...]], window: int) -> None:
    """Two-seat tables only: a pairing repeated within the window is swapped with another
    table when both new pairings are fresh (the greedy picks can leave the last two free
    lines to meet again while a swap would avoid it)."""
    for i in range(len(tables)):
        if len(tables[i]) != 2:
            continue
        a, b = tables[i]
        if b not in _recent(ladder, a, window):
            continue
        for j, other in enumerate(tables):
            if len(other) != 2 or j == i:
                continue
            c, d = other
            for x, y in (((a, c), (b, d)), ((a, d), (b, c))):
                if x[1] not in _recent(ladder, x[0], window) and y[1] not in _recent(ladder, y[0], window):
                    tables[i], tables[j] = x, y
                    break
            else:
                continue
            break


def _first_share(ladder: Ladder, name: str) -> float:
    line = ladder.line(name)
    return line.first_seats / line.games if line.games else 0.0
