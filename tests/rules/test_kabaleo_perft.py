"""Perft table tests/data/kabaleo_perft.txt (counts from the reference implementation) against the engine."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from ziggurat.rules.kabaleo import KABALEO, KabaleoConfig, format_position, parse_position, perft

from .kabaleo_reference import ref_from_position, ref_perft

PERFT_FILE = Path(__file__).resolve().parents[1] / "data" / "kabaleo_perft.txt"
REFERENCE_MAX_DEPTH = 2  # re-check the cheap lines with the reference too


@dataclass(frozen=True)
class PerftCase:
    name: str
    position: str
    options: dict[str, str]
    counts: tuple[tuple[int, int], ...]

    @property
    def config(self) -> KabaleoConfig:
        players = len(self.position.split(" ")[1].split("/"))
        return KABALEO.parse_config(self.options, players)


def load_cases() -> list[PerftCase]:
    cases = []
    for block in PERFT_FILE.read_text().split("\n\n"):
        lines = [line for line in block.splitlines() if line and not line.startswith("#")]
        if not lines:
            continue
        fields = dict(line.split(" ", 1) for line in lines if not line.startswith("perft "))
        counts = tuple(
            (int(depth), int(count))
            for _, depth, count in (line.split() for line in lines if line.startswith("perft "))
        )
        options = dict(item.split("=", 1) for item in fields["options"].split())
        if options.get("deal") == "random":
            del options["deal"]
        if options.get("last_stack") == "false":
            del options["last_stack"]
        cases.append(PerftCase(fields["id"], fields["position"], options, counts))
    return cases


CASES = load_cases()


def test_file_has_the_expected_coverage() -> None:
    names = {case.name for case in CASES}
    assert len(CASES) >= 15
    assert {"start-2p-random", "start-3p-equal-last", "start-4p-random-last", "late-4p-random"} <= names
    assert sum(depth for case in CASES for depth, _ in case.counts) >= 50


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_engine_perft_matches_table(case: PerftCase) -> None:
    state = parse_position(case.position, case.config)
    assert format_position(state) == case.position
    for depth, count in case.counts:
        assert perft(state, depth) == count, (case.name, depth)
        assert KABALEO.perft(state, depth) == count


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_reference_agrees_on_shallow_lines(case: PerftCase) -> None:
    ref = ref_from_position(case.position, case.config.last_stack)
    for depth, count in case.counts:
        if depth <= REFERENCE_MAX_DEPTH:
            assert ref_perft(ref, depth) == count


def test_perft_depth_zero_and_negative() -> None:
    state = parse_position(CASES[0].position, CASES[0].config)
    assert perft(state, 0) == 1
    with pytest.raises(ValueError, match="depth"):
        perft(state, -1)
