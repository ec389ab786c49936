"""A phantom tic-tac-toe tournament of two built-in random bots: real server, real bot
processes, a real database file; every match's record verifies. And what the game does not
declare (duplicate deals, openings) is refused when ``ziggurat tournament run`` loads the file,
in one line that says why, before anything is created."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tournament.fixtures.harness import cli, run_tournament, verify_matches, write_config

ROUND_ROBIN = """
name = "phantom-rr"
seed = "e2e-phantom"
game = "phantom-ttt"
rounds = 2
concurrency = 2

[[participants]]
name = "one"
builtin = "random"

[[participants]]
name = "two"
builtin = "random"
"""


async def test_random_bots_play_a_phantom_ttt_round_robin(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    done = await run_tournament(write_config(tmp_path, ROUND_ROBIN), db)
    assert done.reason == "completed"
    results = done.results()
    assert len(results) == 4 and all(g.status == "done" for g in done.games())
    for result in results:
        assert result["verdicts"] == ["finished", "finished"]
        assert result["termination"] == "normal"  # three in a row or a full board
    assert sorted(tuple(r["seats"]) for r in results) == [
        ("one", "two"),
        ("one", "two"),
        ("two", "one"),
        ("two", "one"),
    ]
    verify_matches(db, [r["match_id"] for r in results])


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (
            "duplicate = true",
            "error: duplicate: phantom-ttt deals nothing hidden to replay "
            "(games with duplicate deals: kabaleo)",
        ),
        (
            'openings = "openings.txt"',
            "error: openings: phantom-ttt does not start from openings "
            "(its moves are private, and an opening book is public)",
        ),
    ],
)
def test_what_the_game_does_not_declare_is_refused_at_load(tmp_path: Path, line: str, error: str) -> None:
    (tmp_path / "openings.txt").write_text("b2 a1\n")  # moves phantom tic-tac-toe would accept
    config = write_config(tmp_path, ROUND_ROBIN.replace("concurrency = 2", f"concurrency = 2\n{line}"))
    db = tmp_path / "t.db"
    run = cli("tournament", "run", str(config), "--db", str(db), cwd=tmp_path)
    assert (run.returncode, run.stdout, run.stderr) == (2, "", error + "\n")
    assert not db.exists()


def test_a_phantom_ttt_game_exported_is_replayed_as_its_positions(tmp_path: Path) -> None:
    """``ziggurat replay`` of a game nobody drew for it: every position as its full text."""
    config = write_config(tmp_path, ROUND_ROBIN.replace("rounds = 2", "rounds = 1"))
    db, jsonl = tmp_path / "t.db", tmp_path / "games.jsonl"
    run = cli("tournament", "run", str(config), "--db", str(db), "--quiet", cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    tournament_id = next(
        line.split()[2] for line in run.stderr.splitlines() if line.startswith("tournament id ")
    )
    exported = cli(
        "tournament", "export", tournament_id, "--db", str(db), "--jsonl", str(jsonl), cwd=tmp_path
    )
    assert exported.returncode == 0, exported.stderr
    record = json.loads(jsonl.read_text().splitlines()[0])
    replayed = cli("replay", str(jsonl), "--game", "0", cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    lines = replayed.stdout.splitlines()
    assert lines[0] == f"== game 0 (round 1): phantom-ttt, {' vs '.join(record['seats'])}"
    assert lines[1] == ".../.../..."  # the empty board, as the rules write it
    plies = record["moves"]
    assert [line for line in lines if line[:1].isdigit()] == [
        f"{n}. seat {m['seat']} ({record['seats'][m['seat'] - 1]}): {m['move']}"
        for n, m in enumerate(plies, 1)
    ]
    positions = [line for line in lines if line.count("/") == 2 and len(line) == 11]
    assert len(positions) == len(plies) + 1 and positions[-1].lower().count("x") >= 3
    assert lines[-1].startswith("-- normal: ")
