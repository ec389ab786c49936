"""Pylos board geometry as bit masks and precomputed lookup tables.

The 30 places of the pyramid are numbered so that one Python ``int`` per colour
holds a whole board: level 1 is 0..15, level 2 is 16..24, level 3 is 25..28 and
the top (``4a1``) is 29; inside a level, row 1 comes first and column ``a``
first in each row, which is also the order of the position notation.

Everything the move generator asks more than once per move ("which empty
places are supported?", "which balls have something on them?", "which place
would complete a square of mine?") is answered by indexing a table with the
bits of one level, because a table lookup is far cheaper in CPython than the
loops it replaces. The tables are built once, at import, from the plain
geometric definitions below, and the tests check them against an independent
implementation.
"""

from __future__ import annotations

from typing import Final

LEVELS: Final = 4
LEVEL_SIZE: Final = (4, 3, 2, 1)
LEVEL_BASE: Final = (0, 16, 25, 29)
PLACES: Final = 30
TOP: Final = 29
FULL: Final = (1 << PLACES) - 1
LEVEL_MASK: Final = (0xFFFF, 0x1FF << 16, 0xF << 25, 1 << 29)
BALLS_PER_COLOUR: Final = 15
COLUMNS: Final = "abcd"


def place_index(level: int, column: int, row: int) -> int:
    """Index of a place from 1-based level and 0-based column/row: the single numbering rule."""
    return LEVEL_BASE[level - 1] + row * LEVEL_SIZE[level - 1] + column


def _coordinates() -> list[tuple[int, int, int]]:
    """(level, column, row) of every index, so other tables never re-derive the numbering."""
    return [
        (level, column, row)
        for level in range(1, LEVELS + 1)
        for row in range(LEVEL_SIZE[level - 1])
        for column in range(LEVEL_SIZE[level - 1])
    ]


COORDS: Final = tuple(_coordinates())
LEVEL_OF: Final = tuple(coord[0] for coord in COORDS)
NAMES: Final = tuple(f"{lvl}{COLUMNS[col]}{row + 1}" for lvl, col, row in COORDS)
INDEX_OF_NAME: Final = {name: index for index, name in enumerate(NAMES)}


def _below(index: int) -> int:
    """Mask of the four places a place rests on (0 on level 1, which rests on the board)."""
    level, column, row = COORDS[index]
    if level == 1:
        return 0
    mask = 0
    for dc, dr in ((0, 0), (1, 0), (0, 1), (1, 1)):
        mask |= 1 << place_index(level - 1, column + dc, row + dr)
    return mask


BELOW: Final = tuple(_below(i) for i in range(PLACES))
ABOVE: Final = tuple(sum(1 << j for j in range(PLACES) if BELOW[j] >> i & 1) for i in range(PLACES))
HIGHER: Final = tuple(sum(LEVEL_MASK[LEVEL_OF[i] :]) for i in range(PLACES))
RAISE_TARGETS: Final = tuple(HIGHER[i] & ~ABOVE[i] for i in range(PLACES))
"""Places a ball on ``i`` may be raised to: strictly higher and not resting on ``i`` itself."""


def _squares() -> tuple[int, ...]:
    """Every 2x2 block on levels 1-3: the shapes whose single colour triggers a recovery."""
    out = []
    for level in (1, 2, 3):
        size = LEVEL_SIZE[level - 1]
        for row in range(size - 1):
            for column in range(size - 1):
                out.append(BELOW[place_index(level + 1, column, row)])
    return tuple(out)


def _lines() -> tuple[int, ...]:
    """Full rows and columns of levels 1 and 2 (advanced variant); diagonals never count."""
    out = []
    for level in (1, 2):
        size = LEVEL_SIZE[level - 1]
        for k in range(size):
            out.append(sum(1 << place_index(level, c, k) for c in range(size)))
            out.append(sum(1 << place_index(level, k, r) for r in range(size)))
    return tuple(out)


SQUARES: Final = _squares()
LINES: Final = _lines()


def shapes_at(shapes: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    """For each place, the shapes containing it: only those can be completed by a ball there."""
    return tuple(tuple(s for s in shapes if s >> i & 1) for i in range(PLACES))


SQUARES_AT: Final = shapes_at(SQUARES)
LINES_AT: Final = shapes_at(LINES)


def _covered_by(bits: int, level: int) -> int:
    """The places of ``level - 1`` under a ball of ``bits`` (one level's bits), as an absolute mask."""
    base, size = LEVEL_BASE[level - 1], LEVEL_SIZE[level - 1]
    absolute = bits << base
    out = 0
    for i in range(base, base + size * size):
        if absolute >> i & 1:
            out |= BELOW[i]
    return out


def _supported_table(level: int) -> tuple[int, ...]:
    """For every bit pattern of ``level``: the places of the level above whose supports are all in
    it, as an absolute mask. Built by marking, for each place above, every superset of its
    supports: 9 x 4,096 steps for level 1 where testing each pattern takes 65,536 x 9 (80 ms at
    every process start)."""
    base, size = LEVEL_BASE[level - 1], LEVEL_SIZE[level - 1]
    every = (1 << size * size) - 1
    table = [0] * (every + 1)
    for above in range(LEVEL_BASE[level], LEVEL_BASE[level] + LEVEL_SIZE[level] ** 2):
        need = BELOW[above] >> base
        rest = every & ~need
        subset = rest
        while True:  # every subset of the other places, with the supports added
            table[need | subset] |= 1 << above
            if not subset:
                break
            subset = (subset - 1) & rest
    return tuple(table)


SUPPORTED_BY_1: Final = _supported_table(1)
SUPPORTED_BY_2: Final = _supported_table(2)
SUPPORTED_BY_3: Final = _supported_table(3)
COVERED_BY_2: Final = tuple(_covered_by(b, 2) for b in range(1 << 9))
COVERED_BY_3: Final = tuple(_covered_by(b, 3) for b in range(1 << 4))
COVERED_BY_4: Final = BELOW[TOP]


def supported(occupied: int) -> int:
    """Mask of every supported place (occupied or not) for a board occupancy."""
    return (
        LEVEL_MASK[0]
        | SUPPORTED_BY_1[occupied & 0xFFFF]
        | SUPPORTED_BY_2[occupied >> 16 & 0x1FF]
        | SUPPORTED_BY_3[occupied >> 25 & 0xF]
    )


def covered(occupied: int) -> int:
    """Mask of every place with a ball resting on it: balls there are not free."""
    out = COVERED_BY_2[occupied >> 16 & 0x1FF] | COVERED_BY_3[occupied >> 25 & 0xF]
    if occupied >> TOP & 1:
        out |= COVERED_BY_4
    return out


def _completion_table(level: int, shapes: tuple[int, ...]) -> tuple[int, ...]:
    """For each bit pattern of one colour on ``level``: the places that would complete a shape.

    Such a place is one whose shape already has its three (or two, for level-2
    lines) other places in that colour, which is exactly the test "does this move
    trigger a recovery?" once the move is known to land there.
    """
    base, size = LEVEL_BASE[level - 1], LEVEL_SIZE[level - 1]
    own_shapes = [s for s in shapes if s & LEVEL_MASK[level - 1]]
    table = []
    for bits in range(1 << (size * size)):
        absolute = bits << base
        out = 0
        for shape in own_shapes:
            missing = shape & ~absolute
            if missing and missing & (missing - 1) == 0:
                out |= missing
        table.append(out)
    return tuple(table)


def completion_tables(shapes: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Completion tables for levels 1, 2 and 3 for one variant's set of recovery shapes."""
    return (_completion_table(1, shapes), _completion_table(2, shapes), _completion_table(3, shapes))


def _bit_lists(width: int, offset: int) -> tuple[tuple[int, ...], ...]:
    """Tabulate the set-bit indices of every ``width``-bit value, shifted by ``offset``, ascending."""
    table: list[tuple[int, ...]] = [()]
    for value in range(1, 1 << width):
        high = value.bit_length() - 1
        table.append((*table[value ^ (1 << high)], high + offset))
    return tuple(table)


# The set-bit tables (81,920 tuples): built at their first use, not at import, which every
# server and CLI process pays (174 ms of CPU) while only Pylos moves read them.
BITS_LOW: tuple[tuple[int, ...], ...] = ()
BITS_HIGH: tuple[tuple[int, ...], ...] = ()


def bit_tables() -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]:
    """(BITS_LOW, BITS_HIGH), built once: the set-bit indices of every value of the low 16 and
    high 14 bits of a board mask (hot loops bind them once, as pylos_playout does)."""
    global BITS_LOW, BITS_HIGH
    if not BITS_LOW:
        BITS_LOW, BITS_HIGH = _bit_lists(16, 0), _bit_lists(14, 16)
    return BITS_LOW, BITS_HIGH


def bits(mask: int) -> tuple[int, ...]:
    """List the set-bit indices of a board mask, ascending, with two table lookups (no loop)."""
    try:
        return BITS_LOW[mask & 0xFFFF] + BITS_HIGH[mask >> 16]
    except IndexError:  # the tables are not built yet (an empty tuple has no index 0)
        low, high = bit_tables()
        return low[mask & 0xFFFF] + high[mask >> 16]
