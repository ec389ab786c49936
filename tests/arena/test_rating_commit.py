"""Memory follows the log: a rating the database refuses (locked, read-only) changes nothing in
memory, and is committed, once, when the database takes it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ziggurat.arena.config import parse_arena_config
from ziggurat.arena.ladder import Ladder
from ziggurat.arena.runner import ArenaRunner
from ziggurat.arena.store import ArenaStore

RESULT = {"ranks": [1, 2], "termination": "normal", "end_ms": 1234}


def _runner(tmp_path: Path) -> tuple[ArenaRunner, ArenaStore, int]:
    config = parse_arena_config({"name": "t", "ladder": [{"game": "pylos"}]}, tmp_path)
    runner = ArenaRunner(config)
    store = ArenaStore(tmp_path / "a.db", busy_timeout_ms=50)
    runner.store = store
    return runner, store, store.add_game("pylos", ["a", "b"], [0, 0])


def test_a_locked_database_refuses_the_rating_and_nothing_moves(tmp_path: Path) -> None:
    runner, store, number = _runner(tmp_path)
    ladder = Ladder("pylos")
    locker = sqlite3.connect(tmp_path / "a.db", isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")  # another writer holds the database
    assert runner._commit_rating(ladder, number, ("a", "b"), RESULT) is None
    assert ladder.lines == {} and runner.state.games_rated == 0
    assert [g.status for g in store.games()] == ["playing"]
    locker.execute("ROLLBACK")
    assert runner._commit_rating(ladder, number, ("a", "b"), RESULT) == 1
    assert ladder.line("a").games == 1 and runner.state.games_rated == 1
    # rated once: a second attempt (a retry that raced the first) writes nothing, moves nothing
    assert runner._commit_rating(ladder, number, ("a", "b"), RESULT) is None
    assert ladder.line("a").games == 1 and runner.state.games_rated == 1
    (row,) = store.games()
    assert (row.status, row.rated_order, row.end_ms) == ("rated", 1, 1234)
    locker.close()
    store.close()


def test_a_read_only_database_refuses_the_rating_and_nothing_moves(tmp_path: Path) -> None:
    runner, store, number = _runner(tmp_path)
    store.close()
    runner.store = ArenaStore(tmp_path / "a.db", readonly=True)
    ladder = Ladder("pylos")
    assert runner._commit_rating(ladder, number, ("a", "b"), RESULT) is None
    assert ladder.lines == {} and runner.state.games_rated == 0
    runner.store.close()
