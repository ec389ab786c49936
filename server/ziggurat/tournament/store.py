"""Tournament progress in the server's SQLite database: the schedule and every result.

A game row moves pending → running → done. After a crash, rows still marked
running are the games that were cut off: their matches are aborted and the games
played again from the start, so nothing is lost and nothing counts twice. A replay
is a new *attempt* with fresh seeds (the aborted match published its seed); every
attempt given up is kept in ``tournament_attempts``.

The organiser's secret (:mod:`ziggurat.tournament.sealed`) lives in the
``tournaments`` row and is handed out by :meth:`TournamentStore.secret` only to the
runner; exports show it once the tournament has finished.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ziggurat.store.sqlite import private_files

SCHEMA = """
CREATE TABLE IF NOT EXISTS tournaments (
    tournament_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    config_path TEXT NOT NULL,
    config_text TEXT NOT NULL,
    status TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    finished_ms INTEGER,
    stop_reason TEXT,
    secret BLOB
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
    attempt INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (tournament_id, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tournament_attempts (
    tournament_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    match_id TEXT,
    reason TEXT NOT NULL,
    ended_ms INTEGER NOT NULL,
    PRIMARY KEY (tournament_id, idx, attempt)
) WITHOUT ROWID;
"""
# Databases made before these columns existed get them added (older runs had no secret: their
# seeds came from the configuration and stay so; a resumed game still gets a fresh attempt).
MIGRATIONS = (
    ("tournaments", "secret", "ALTER TABLE tournaments ADD COLUMN secret BLOB"),
    (
        "tournament_games",
        "attempt",
        "ALTER TABLE tournament_games ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0",
    ),
)


@dataclass(slots=True)
class GameRow:
    """One scheduled game and, once played, its result."""

    index: int
    round: int
    spec: dict[str, Any]
    status: str
    match_id: str | None
    result: dict[str, Any] | None
    attempt: int = 0


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
        # The same file as the match tables: private (0600) whichever store opens it first.
        private_files(str(path))
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(SCHEMA)
        for table, column, statement in MIGRATIONS:
            columns = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
            if column not in columns:
                self._db.execute(statement)

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    def create(
        self, tournament_id: str, name: str, config_path: str, config_text: str, secret: bytes
    ) -> None:
        """A new tournament, not yet scheduled, with the organiser's ``secret``."""
        self._db.execute(
            "INSERT INTO tournaments VALUES (?,?,?,?,?,?,NULL,NULL,?)",
            (tournament_id, name, config_path, config_text, "running", _now(), secret),
        )

    def get(self, tournament_id: str) -> TournamentRow | None:
        """A tournament by id (a unique prefix is enough)."""
        rows = self._db.execute(
            f"SELECT {HEADER} FROM tournaments WHERE tournament_id LIKE ? ORDER BY created_ms",
            (tournament_id + "%",),
        ).fetchall()
        return TournamentRow(*rows[0]) if len(rows) == 1 else None

    def all(self) -> list[TournamentRow]:
        """Every tournament, newest first."""
        return [
            TournamentRow(*row)
            for row in self._db.execute(f"SELECT {HEADER} FROM tournaments ORDER BY created_ms DESC")
        ]

    def set_secret(self, tournament_id: str, secret: bytes) -> None:
        """Give a tournament stored before secrets were kept one (for the games still to draw)."""
        self._db.execute("UPDATE tournaments SET secret=? WHERE tournament_id=?", (secret, tournament_id))

    def secret(self, tournament_id: str) -> bytes | None:
        """The organiser's secret (None for a tournament made before secrets were kept)."""
        row = self._db.execute(
            "SELECT secret FROM tournaments WHERE tournament_id=?", (tournament_id,)
        ).fetchone()
        return None if row is None or row[0] is None else bytes(row[0])

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
                "INSERT OR IGNORE INTO tournament_games VALUES (?,?,?,?,'pending',NULL,NULL,NULL,NULL,0)",
                [(tournament_id, index, rnd, json.dumps(spec, sort_keys=True)) for index, rnd, spec in games],
            )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def games(self, tournament_id: str) -> list[GameRow]:
        """Every scheduled game, by index."""
        rows = self._db.execute(
            "SELECT idx, round, spec_json, status, match_id, result_json, attempt FROM tournament_games "
            "WHERE tournament_id=? ORDER BY idx",
            (tournament_id,),
        )
        return [
            GameRow(
                idx, rnd, json.loads(spec), status, match_id, json.loads(result) if result else None, attempt
            )
            for idx, rnd, spec, status, match_id, result, attempt in rows
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

    def running(self, tournament_id: str) -> list[GameRow]:
        """The games marked running: after a crash, those that were cut off."""
        return [row for row in self.games(tournament_id) if row.status == "running"]

    def replay(self, tournament_id: str, games: list[tuple[int, int, dict[str, Any]]], reason: str) -> None:
        """Send games ``(index, attempt, spec)`` back to pending as that attempt (``spec``: fresh seeds).

        The attempt given up (its match, if any, and why) is kept in ``tournament_attempts``;
        a result it had is dropped (a duplicate deal is replayed whole: see the runner).
        """
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for index, new_attempt, spec in games:
                match_id, attempt = self._db.execute(
                    "SELECT match_id, attempt FROM tournament_games WHERE tournament_id=? AND idx=?",
                    (tournament_id, index),
                ).fetchone()
                self._db.execute(
                    "INSERT OR REPLACE INTO tournament_attempts VALUES (?,?,?,?,?,?)",
                    (tournament_id, index, attempt, match_id, reason, _now()),
                )
                self._db.execute(
                    "UPDATE tournament_games SET status='pending', match_id=NULL, started_ms=NULL, "
                    "result_json=NULL, ended_ms=NULL, attempt=?, spec_json=? WHERE tournament_id=? AND idx=?",
                    (new_attempt, json.dumps(spec, sort_keys=True), tournament_id, index),
                )
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def attempts(self, tournament_id: str, index: int) -> list[dict[str, Any]]:
        """The attempts of game ``index`` given up so far (attempt, match id, reason), oldest first."""
        rows = self._db.execute(
            "SELECT attempt, match_id, reason FROM tournament_attempts WHERE tournament_id=? AND idx=? "
            "ORDER BY attempt",
            (tournament_id, index),
        )
        return [{"attempt": a, "match_id": m, "reason": r} for a, m, r in rows]


HEADER = "tournament_id, name, config_path, config_text, status, created_ms, finished_ms, stop_reason"


def _now() -> int:
    return int(time.time() * 1000)
