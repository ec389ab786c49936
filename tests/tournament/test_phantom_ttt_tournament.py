"""A phantom tic-tac-toe tournament of two built-in random bots: real server, real bot
processes, a real database file; every match's record verifies."""

from __future__ import annotations

from pathlib import Path

from tests.tournament.fixtures.harness import run_tournament, verify_matches, write_config

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
