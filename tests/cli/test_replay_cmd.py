"""``ziggurat replay`` of games a file does not hold: one ``error:`` line, exit 2, nothing shown."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests import processes


def record(index: int) -> dict[str, object]:
    """A well-formed exported game (never played back here: the numbers asked for are checked first)."""
    return {
        "index": index,
        "round": 1,
        "game": "pylos",
        "options": {},
        "seats": ["a", "b"],
        "revealed_seed": "00" * 32,
        "commitment": "",
        "moves": [],
        "termination": "resignation",
        "ranks": [1, 2],
        "verdicts": ["finished", "finished"],
    }


def replay(path: Path, *games: int) -> subprocess.CompletedProcess[str]:
    args = [arg for game in games for arg in ("--game", str(game))]
    return processes.run(
        [sys.executable, "-m", "ziggurat.cli.main", "replay", str(path), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_games_the_file_does_not_hold_are_refused_before_anything_is_shown(tmp_path: Path) -> None:
    gaps = tmp_path / "gaps.jsonl"
    gaps.write_text("".join(json.dumps(record(i)) + "\n" for i in (0, 2)))
    one = replay(gaps, 0, 1)
    assert one.returncode == 2 and one.stdout == ""
    assert one.stderr == f"error: no game 1 in {gaps} (it holds 2 games numbered from 0, 0 to 2)\n"
    many = replay(gaps, 7, 5)
    assert many.returncode == 2
    assert many.stderr.startswith(f"error: no games 5, 7 in {gaps} ")
    run = tmp_path / "run.jsonl"
    run.write_text("".join(json.dumps(record(i)) + "\n" for i in range(12)))
    past = replay(run, 12)
    assert past.returncode == 2
    assert past.stderr.splitlines() == [
        f"error: no game 12 in {run} (it holds games 0 to 11; games are numbered from 0)"
    ]
