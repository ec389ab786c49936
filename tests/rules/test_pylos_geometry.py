"""The Pylos geometry tables, built fast at import or lazily at first use, checked against their
definitions place by place (the move generator and the playout loop read nothing else)."""

from __future__ import annotations

from ziggurat.rules import pylos_geometry as g


def _supported_by_definition(bits: int, level: int) -> int:
    """The places of ``level + 1`` whose four supports are all among ``bits`` (of ``level``)."""
    absolute = bits << g.LEVEL_BASE[level - 1]
    above = range(g.LEVEL_BASE[level], g.LEVEL_BASE[level] + g.LEVEL_SIZE[level] ** 2)
    return sum(1 << place for place in above if absolute & g.BELOW[place] == g.BELOW[place])


def test_supported_tables_are_their_definition_for_every_pattern() -> None:
    for level, table in ((1, g.SUPPORTED_BY_1), (2, g.SUPPORTED_BY_2), (3, g.SUPPORTED_BY_3)):
        assert len(table) == 1 << g.LEVEL_SIZE[level - 1] ** 2
        assert all(table[bits] == _supported_by_definition(bits, level) for bits in range(len(table)))


def test_covered_tables_mark_the_places_under_each_ball() -> None:
    for level, table in ((2, g.COVERED_BY_2), (3, g.COVERED_BY_3)):
        base = g.LEVEL_BASE[level - 1]
        for bits in range(len(table)):
            expected = 0
            for place in range(base, base + g.LEVEL_SIZE[level - 1] ** 2):
                if bits << base >> place & 1:
                    expected |= g.BELOW[place]
            assert table[bits] == expected


def test_bits_lists_the_set_bits_of_any_mask_in_order_tables_built_at_first_use() -> None:
    low, high = g.bit_tables()
    assert (len(low), len(high)) == (1 << 16, 1 << 14)
    for mask in (0, 1, g.FULL, 0b1010 << 14, 1 << g.TOP, 0x2AAAAAAA & g.FULL):
        assert g.bits(mask) == tuple(i for i in range(g.PLACES) if mask >> i & 1)
