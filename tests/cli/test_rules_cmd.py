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


def test_phantom_ttt_is_queried_like_any_game() -> None:
    """A game the command knows only through the registry: its notation, its seat count."""
    empty = ".../.../..."
    moves = run("rules", "moves", "phantom-ttt", empty)
    assert moves.returncode == 0 and moves.stdout.split() == [f"{c}{r}" for c in "abc" for r in "123"]
    found = run("rules", "apply", "phantom-ttt", empty, "b2", "b2")  # o tries x's cell and finds it
    assert found.returncode == 0 and found.stdout == ".../.X./...\n", found.stderr
    mine = run("rules", "apply", "phantom-ttt", empty, "b2", "a1", "b2")
    assert mine.returncode == 2 and "move 3 'b2'" in mine.stderr and "ILLEGAL_MOVE" in mine.stderr
    assert run("rules", "perft", "phantom-ttt", empty, "2").stdout == "81\n"  # 9 cells, then 9 tries
    new = run("rules", "new", "phantom-ttt", "--seed", "00" * 32)
    assert new.returncode == 0 and new.stdout == empty + "\n"


def test_a_position_is_read_at_the_seat_count_it_is_written_for() -> None:
    three = KABALEO_START.replace("RRRGGGBBBOOO/RRRGGGBBBOOO", "RRRGGGBBBOOO/RRRGGGBBBOOO/RRRGGGBBBOOO")
    two = run("rules", "moves", "kabaleo", KABALEO_START)
    assert two.returncode == 0 and two.stdout.split()[0] == "B1"
    wrong = run("rules", "moves", "kabaleo", three)  # 3 hands on 16 stacks: no seat count reads it
    assert wrong.returncode == 2 and len(wrong.stderr.splitlines()) == 1
    assert "as 3 seats: 3 players play on 20 stacks, got 16" in wrong.stderr
    assert "as 2 seats: HANDS needs 2 hands, got 3" in wrong.stderr


def test_help_lists_every_command() -> None:
    result = run("--help")
    assert result.returncode == 0
    for command in ("serve", "rules", "verify", "demo"):
        assert command in result.stdout
