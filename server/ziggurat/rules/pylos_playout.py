"""The specialised inner loop of Pylos random playouts (the MCTS workhorse).

A playout must draw every move uniformly from the *full* legal move set, where
each recovery choice is a move of its own. Listing that set as strings would
cost far more than the rest of the move, so this loop works on the two colour
masks only: it counts the moves of every place/raise (one, or the number of
recovery choices when it completes a shape of the mover's colour), draws one
integer below the total and decodes it. Recovery choices are enumerated only
for the single move that was drawn.

The rules here are exactly those of :mod:`ziggurat.rules.pylos`, including the
order in which the endings are checked; the tests play both side by side.
"""

from __future__ import annotations

import random
from typing import Final

from ziggurat.rules.pylos_geometry import (
    ABOVE,
    BALLS_PER_COLOUR,
    BELOW,
    COVERED_BY_2,
    COVERED_BY_3,
    RAISE_TARGETS,
    SUPPORTED_BY_1,
    SUPPORTED_BY_2,
    SUPPORTED_BY_3,
    TOP,
    bit_tables,
    covered,
)

# The set-bit tables, bound here by _tables() at the first call of a function below (the loops
# read them as globals at every move), not at import: every server process imports this module.
BITS_LOW: tuple[tuple[int, ...], ...] = ()
BITS_HIGH: tuple[tuple[int, ...], ...] = ()


def _tables() -> None:
    global BITS_LOW, BITS_HIGH
    BITS_LOW, BITS_HIGH = bit_tables()


CompletionTables = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]

# Result codes of a playout: who ended it and how, without building an Outcome per playout.
END_TOP: Final = 0  # the mover placed the top ball: ``seat`` wins
END_STUCK: Final = 1  # ``seat`` had to move and could not: ``seat`` loses
END_REPETITION: Final = 2  # third occurrence of a position: draw
END_LIMIT: Final = 3  # the match's move limit was reached: draw


def recovery_options(own: int, occupied: int) -> list[tuple[int, ...]]:
    """Every recovery choice (one ball, or an ordered-playable pair) after a completing move.

    The list order is fixed (singles, then pairs as discovered) so that a drawn
    index maps to one choice; pairs are stored with the first ball removable
    first. Shared by the playout and the public move generator so both count the
    same set.
    """
    if not BITS_LOW:
        _tables()
    free = own & ~covered(occupied)
    singles = BITS_LOW[free & 0xFFFF] + BITS_HIGH[free >> 16]
    options: list[tuple[int, ...]] = [(a,) for a in singles]
    for i, a in enumerate(singles):
        for b in singles[i + 1 :]:
            options.append((a, b))
    # A ball can become free only when the one recovered first was the last ball on it.
    for a in singles:
        for b in BITS_LOW[BELOW[a] & own & 0xFFFF] + BITS_HIGH[(BELOW[a] & own) >> 16]:
            if ABOVE[b] & occupied == 1 << a:
                options.append((a, b))
    return options


def count_recoveries(own: int, occupied: int) -> int:
    """Count recovery choices without listing them: the weight of a completing move."""
    if not BITS_LOW:
        _tables()
    free = own & ~(COVERED_BY_2[occupied >> 16 & 0x1FF] | COVERED_BY_3[occupied >> 25 & 0xF])
    n = free.bit_count()
    total = n + n * (n - 1) // 2
    upper = free >> 16
    if upper:
        for a in BITS_HIGH[upper]:
            under = BELOW[a] & own
            for b in BITS_LOW[under & 0xFFFF] + BITS_HIGH[under >> 16]:
                if ABOVE[b] & occupied == 1 << a:
                    total += 1
    return total


def playout(
    light: int,
    dark: int,
    side: int,
    *,
    ply: int,
    seen: dict[int, int],
    move_limit: int,
    completion: CompletionTables,
    rng: random.Random,
) -> tuple[int, int, int]:
    """Play uniformly random moves to the end; return (END_* code, seat concerned, final ply).

    ``seen`` counts the occurrences of every position key so far (it is
    updated in place); ``move_limit`` is the ply at which the game is drawn
    (use a huge number for none). The caller guarantees the game is not over.
    """
    rand = rng.random
    sup1, sup2, sup3 = SUPPORTED_BY_1, SUPPORTED_BY_2, SUPPORTED_BY_3
    cov2, cov3 = COVERED_BY_2, COVERED_BY_3
    raise_targets = RAISE_TARGETS
    if not BITS_LOW:
        _tables()
    low, high = BITS_LOW, BITS_HIGH
    k1, k2, k3 = completion
    get = seen.get
    repeated = False
    while True:
        occ = light | dark
        own = dark if side else light
        empty = (0xFFFF | sup1[occ & 0xFFFF] | sup2[occ >> 16 & 0x1FF] | sup3[occ >> 25 & 0xF]) & ~occ
        targets = empty if own.bit_count() < BALLS_PER_COLOUR else 0
        nplace = targets.bit_count()
        raises: list[tuple[int, int]] = []
        nraise = 0
        if empty >> 16:
            free = own & ~(cov2[occ >> 16 & 0x1FF] | cov3[occ >> 25 & 0xF])
            for s in low[free & 0xFFFF] + high[free >> 16]:
                tm = empty & raise_targets[s]
                if tm:
                    raises.append((s, tm))
                    nraise += tm.bit_count()
        special = (k1[own & 0xFFFF] | k2[own >> 16 & 0x1FF] | k3[own >> 25 & 0xF]) & empty
        weighted: list[tuple[int, int, int]] = []
        total = nplace + nraise
        if special:
            total, weighted = _weigh_specials(own, occ, targets, raises, special)
        if total == 0:
            return END_STUCK, side, ply
        if repeated:
            return END_REPETITION, -1, ply
        if ply >= move_limit:
            return END_LIMIT, -1, ply
        r = int(rand() * total)
        recovered = 0
        src = -1
        if weighted:
            src, t, r = _pick_weighted(weighted, r)
            own2 = (own & ~(1 << src) if src >= 0 else own) | 1 << t
            occ2 = (occ & ~(1 << src) if src >= 0 else occ) | 1 << t
            if special >> t & 1:
                for ball in recovery_options(own2, occ2)[r]:
                    recovered |= 1 << ball
        elif r < nplace:
            t = (low[targets & 0xFFFF] + high[targets >> 16])[r]
        else:
            r -= nplace
            for src, tm in raises:  # noqa: B007 - src is the chosen raise after the break
                c = tm.bit_count()
                if r < c:
                    t = (low[tm & 0xFFFF] + high[tm >> 16])[r]
                    break
                r -= c
        move = 1 << t
        if src >= 0:
            move |= 1 << src
        if side:
            dark = (dark ^ move) & ~recovered
        else:
            light = (light ^ move) & ~recovered
        if t == TOP:
            return END_TOP, side, ply + 1
        side ^= 1
        ply += 1
        key = light | dark << 30 | side << 60
        count = get(key, 0) + 1
        seen[key] = count
        repeated = count >= 3


def _weigh_specials(
    own: int,
    occ: int,
    targets: int,
    raises: list[tuple[int, int]],
    special: int,
) -> tuple[int, list[tuple[int, int, int]]]:
    """List every completing move with its number of recovery choices (the slow, rarer path).

    Returns the total weight and a list of (source or -1, target, weight)
    covering *all* moves (completing ones weighted by their recovery choices,
    plain ones by 1) so that one drawn integer decodes uniformly.
    """
    entries: list[tuple[int, int, int]] = []
    total = 0
    for t in BITS_LOW[targets & 0xFFFF] + BITS_HIGH[targets >> 16]:
        bit = 1 << t
        w = count_recoveries(own | bit, occ | bit) if special & bit else 1
        entries.append((-1, t, w))
        total += w
    for s, tm in raises:
        sbit = 1 << s
        for t in BITS_LOW[tm & 0xFFFF] + BITS_HIGH[tm >> 16]:
            bit = 1 << t
            w = count_recoveries(own ^ sbit | bit, occ ^ sbit | bit) if special & bit else 1
            entries.append((s, t, w))
            total += w
    return total, entries


def _pick_weighted(entries: list[tuple[int, int, int]], r: int) -> tuple[int, int, int]:
    """Decode a uniform integer into (source, target, index of the recovery choice)."""
    for src, t, w in entries:
        if r < w:
            return src, t, r
        r -= w
    raise AssertionError("weighted draw beyond the total")  # pragma: no cover
