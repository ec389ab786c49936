"""Tournament progress in the server's SQLite database: the schedule and every result.

A game row moves pending → running → done. After a crash, rows still marked
running are the games that were cut off: their matches are aborted and the games
played again from the start (same set-up seed, same bot seeds), so nothing is
lost and nothing counts twice.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS tournaments (
    tournament_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    config_path TEXT NOT NULL,
    config_text TEXT NOT NULL,
    status TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    finished_ms INTEGER,
    stop_reason TEXT
);
CREATE TABLE IF NOT EXISTS tournament_games (
    tournament_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    round INTEGER NOT NULL,
    spec_json TEXT NOT NULL,
    status TEXT NOT NULL,
    match_id TEXT,
    result_json TEXT,
    started_ms INTEGER,
    ended_ms INTEGER,
    PRIMARY KEY (tournament_id, idx)
) WITHOUT ROWID;
"""


@dataclass(slots=True)
class GameRow:
    """One scheduled game and, once played, its result."""

    index: int
    round: int
    spec: dict[str, Any]
    status: str
    match_id: str | None
    result: dict[str, Any] | None


@dataclass(slots=True)
class TournamentRow:
    """A tournament's header."""

    tournament_id: str
    name: str
    config_path: str
    config_text: str
    status: str
    created_ms: int
    finished_ms: int | None
    stop_reason: str | None


class TournamentStore:
    """Tournament tables beside the match tables, in the same database file."""

    def __init__(self, path: str | Path) -> None:
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    def create(self, tournament_id: str, name: str, config_path: str, config_text: str) -> None:
        """A new tournament, not yet scheduled."""
        self._db.execute(
            "INSERT INTO tournaments VALUES (?,?,?,?,?,?,NULL,NULL)",
            (tournament_id, name, config_path, config_text, "running", _now()),
        )

    def get(self, tournament_id: str) -> TournamentRow | None:
        """A tournament by id (a unique prefix is enough)."""
        rows = self._db.execute(
            "SELECT * FROM tournaments WHERE tournament_id LIKE ? ORDER BY created_ms", (tournament_id + "%",)
        ).fetchall()
        return TournamentRow(*rows[0]) if len(rows) == 1 else None

    def all(self) -> list[TournamentRow]:
        """Every tournament, newest first."""
        return [
            TournamentRow(*row)
            for row in self._db.execute("SELECT * FROM tournaments ORDER BY created_ms DESC")
        ]

    def finish(self, tournament_id: str, reason: str) -> None:
        """Mark the tournament finished (``reason``: completed, sprt: accept H1, …)."""
        self._db.execute(
            "UPDATE tournaments SET status='finished', finished_ms=?, stop_reason=? WHERE tournament_id=?",
            (_now(), reason, tournament_id),
        )

    def add_games(self, tournament_id: str, games: list[tuple[int, int, dict[str, Any]]]) -> None:
        """Schedule games (index, round, spec); already scheduled indices are left alone."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.executemany(
                "INSERT OR IGNORE INTO tournament_games VALUES (?,?,?,?,'pending',NULL,NULL,NULL,NULL)",
                [(tournament_id, index, rnd, json.dumps(spec, sort_keys=True)) for index, rnd, spec in games],
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def games(self, tournament_id: str) -> list[GameRow]:
        """Every scheduled game, by index."""
        rows = self._db.execute(
            "SELECT idx, round, spec_json, status, match_id, result_json FROM tournament_games "
            "WHERE tournament_id=? ORDER BY idx",
            (tournament_id,),
        )
        return [
            GameRow(idx, rnd, json.loads(spec), status, match_id, json.loads(result) if result else None)
            for idx, rnd, spec, status, match_id, result in rows
        ]

    def start_game(self, tournament_id: str, index: int, match_id: str) -> None:
        """The game's match exists: it is running."""
        self._db.execute(
            "UPDATE tournament_games SET status='running', match_id=?, started_ms=? "
            "WHERE tournament_id=? AND idx=?",
            (match_id, _now(), tournament_id, index),
        )

    def finish_game(self, tournament_id: str, index: int, result: dict[str, Any]) -> None:
        """The game's result, final."""
        self._db.execute(
            "UPDATE tournament_games SET status='done', result_json=?, ended_ms=? "
            "WHERE tournament_id=? AND idx=?",
            (json.dumps(result, sort_keys=True), _now(), tournament_id, index),
        )

    def reset_running(self, tournament_id: str) -> list[str]:
        """Games cut off by a crash go back to pending; returns their match ids (to abort)."""
        rows = self._db.execute(
            "SELECT match_id FROM tournament_games WHERE tournament_id=? AND status='running'",
            (tournament_id,),
        ).fetchall()
        self._db.execute(
            "UPDATE tournament_games SET status='pending', match_id=NULL, started_ms=NULL "
            "WHERE tournament_id=? AND status='running'",
            (tournament_id,),
        )
        return [row[0] for row in rows if row[0]]


def _now() -> int:
    return int(time.time() * 1000)
