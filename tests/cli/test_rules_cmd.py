"""``ziggurat rules``, run as a real subprocess the way a bot author would."""

from __future__ import annotations

import subprocess
import sys

from tests import processes

EMPTY_PYLOS = "................/........./..../. L"
KABALEO_START = "R/G/B/O/G/R/O/B/B/O/R/G/O/B/G/R RRRGGGBBBOOO/RRRGGGBBBOOO 1 - GR+BO"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return processes.run(
        [sys.executable, "-m", "ziggurat.cli.main", *args], capture_output=True, text=True, timeout=120
    )


def test_moves_are_printed_sorted_one_per_line() -> None:
    result = run("rules", "moves", "pylos", EMPTY_PYLOS)
    assert result.returncode == 0
    moves = result.stdout.split()
    assert len(moves) == 16 and moves == sorted(moves) and moves[0] == "1a1"


def test_apply_prints_the_position_from_the_rules_page() -> None:
    result = run("rules", "apply", "kabaleo", KABALEO_START, "B1")
    assert result.returncode == 0, result.stderr
    fields = result.stdout.split()
    assert fields[0].startswith("RB/G/")
    assert fields[1] == "RRRGGGBBOOO/RRRGGGBBBOOO" and fields[2] == "2" and fields[3] == "1"


def test_apply_names_the_first_bad_move_and_exits_2() -> None:
    result = run("rules", "apply", "kabaleo", KABALEO_START, "B1", "R1", "Z9")
    assert result.returncode == 2
    assert "move 3" in result.stderr and "'Z9'" in result.stderr and "MALFORMED_MOVE" in result.stderr
    illegal = run("rules", "apply", "pylos", EMPTY_PYLOS, "1a1", "1a1")
    assert illegal.returncode == 2 and "move 2" in illegal.stderr and "ILLEGAL_MOVE" in illegal.stderr


def test_perft_and_divide() -> None:
    assert run("rules", "perft", "pylos", EMPTY_PYLOS, "2").stdout.strip() == "240"
    divide = run("rules", "perft", "pylos", EMPTY_PYLOS, "2", "--divide").stdout.splitlines()
    assert divide[0] == "1a1: 15" and divide[-1] == "total: 240"


def test_new_position_from_seed_is_deterministic() -> None:
    seed = "ab" * 32
    first = run("rules", "new", "kabaleo", "--seats", "3", "--seed", seed)
    second = run("rules", "new", "kabaleo", "--seats", "3", "--seed", seed)
    assert first.returncode == 0 and first.stdout == second.stdout
    assert len(first.stdout.split()[0].split("/")) == 20


def test_bad_position_and_bad_options_are_clear_errors() -> None:
    bad = run("rules", "moves", "pylos", "not a position")
    assert bad.returncode == 2 and bad.stderr.startswith("error:")
    equal4 = run("rules", "new", "kabaleo", "--seats", "4", "--seed", "00" * 32, "--deal", "equal")
    assert equal4.returncode == 2 and "equal" in equal4.stderr


def test_help_lists_every_command() -> None:
    result = run("--help")
    assert result.returncode == 0
    for command in ("serve", "rules", "verify", "demo"):
        assert command in result.stdout
