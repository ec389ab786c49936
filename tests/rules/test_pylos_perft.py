"""Perft counts from tests/data/pylos_perft.txt (made by the reference implementation) vs the engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.rules.pylos_reference import read_perft_file
from ziggurat.rules.pylos import PYLOS, PylosConfig, Variant

DATA = Path(__file__).resolve().parents[1] / "data" / "pylos_perft.txt"
SLOW_COUNT = 1_000_000  # entries above this many leaves are marked slow


def _cases() -> list[object]:
    cases: list[object] = []
    for block in read_perft_file(str(DATA)):
        depths = block["perft"]
        assert isinstance(depths, list)
        for depth, count in depths:
            marks = [pytest.mark.slow] if count > SLOW_COUNT else []
            cases.append(
                pytest.param(
                    block["position"],
                    block["variant"],
                    depth,
                    count,
                    id=f"{block['id']}-{depth}",
                    marks=marks,
                )
            )
    return cases


def test_data_file_has_required_entries() -> None:
    blocks = read_perft_file(str(DATA))
    assert len(blocks) >= 11
    empty = next(b for b in blocks if b["id"] == "empty")
    assert empty["perft"][:3] == [(1, 16), (2, 240), (3, 3360)]  # type: ignore[index]
    assert max(d for d, _ in empty["perft"]) >= 5  # type: ignore[attr-defined]


@pytest.mark.parametrize(("position", "variant", "depth", "count"), _cases())
def test_perft(position: str, variant: str, depth: int, count: int) -> None:
    state = PYLOS.parse_position(position, PylosConfig(Variant(variant)))
    assert PYLOS.perft(state, depth) == count
