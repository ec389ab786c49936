"""The arena's tables, beside the match tables in the same database file.

The ladder is a function of the rated games in the order they were rated: each rated row
keeps its result, the ratings of its seats before and after, and its ``rated_order``.
Rating a game is one transaction that moves its row from ``playing`` to ``rated`` and gives
it the next ``rated_order`` (a UNIQUE column): a game is rated once or not at all, whatever
crashes around it. In memory the ladder is rebuilt from these rows at start-up and updated
only after each commit (memory follows the log).

A row still ``playing`` at start-up was cut off by a crash: if its match ended in the log
before the crash, it is rated now (its result is the log's); otherwise its match is aborted
and the game is ``void``, never rated.

The operator's controls (``ziggurat arena pause|resume|stop|retire|approve``) are rows
written here by another process; the running arena reads them every pairing round. Whoever
may write the database file is the operator: there is no network path to these controls.
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
CREATE TABLE IF NOT EXISTS arena_entrants (
    entrant_key TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    token_sha256 TEXT NOT NULL,
    source TEXT NOT NULL,
    state TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    address TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS arena_versions (
    entrant_key TEXT NOT NULL,
    version TEXT NOT NULL,
    first_ms INTEGER NOT NULL,
    PRIMARY KEY (entrant_key, version)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS arena_games (
    number INTEGER PRIMARY KEY,
    game TEXT NOT NULL,
    match_id TEXT,
    seats_json TEXT NOT NULL,
    status TEXT NOT NULL,
    start_ms INTEGER NOT NULL,
    end_ms INTEGER,
    rated_order INTEGER UNIQUE,
    result_json TEXT,
    ratings_json TEXT,
    waited_json TEXT NOT NULL DEFAULT '[]'
);
CREATE TABLE IF NOT EXISTS arena_control (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
"""


@dataclass(frozen=True, slots=True)
class EntrantRow:
    """An entrant: its name, credential hash, where it came from and whether it is paired."""

    key: str
    name: str
    token_sha256: str
    source: str  # "config" | "registered"
    state: str  # "active" | "pending" | "retired"
    created_ms: int


@dataclass(frozen=True, slots=True)
class GameRow:
    """One arena game, from seating to its rating (or its voiding)."""

    number: int
    game: str
    match_id: str | None
    seats: tuple[str, ...]  # lines ("entrant" or "entrant@version") by seat
    status: str  # "playing" | "rated" | "void"
    start_ms: int
    end_ms: int | None
    rated_order: int | None
    result: dict[str, Any] | None
    # per seat: {"before": [mu, sigma], "after": [mu, sigma]}
    ratings: list[dict[str, list[float]]] | None
    waited_ms: list[int]


def now_ms() -> int:
    """Wall-clock Unix milliseconds."""
    return int(time.time() * 1000)


class ArenaStore:
    """The arena tables of one database file."""

    def __init__(self, path: str | Path, *, readonly: bool = False, busy_timeout_ms: int = 5000) -> None:
        if readonly:
            uri = f"file:{Path(path).resolve()}?mode=ro"
            self._db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
            return
        private_files(str(path))  # the same file as the match tables: private (0600)
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        """Close the connection."""
        self._db.close()

    # Entrants -----------------------------------------------------------------------------
    def entrants(self) -> list[EntrantRow]:
        """Every entrant, oldest first."""
        rows = self._db.execute(
            "SELECT entrant_key, name, token_sha256, source, state, created_ms FROM arena_entrants "
            "ORDER BY created_ms, name"
        )
        return [EntrantRow(*row) for row in rows]

    def entrant(self, key: str) -> EntrantRow | None:
        """The entrant under ``key`` (its name's bot key)."""
        row = self._db.execute(
            "SELECT entrant_key, name, token_sha256, source, state, created_ms FROM arena_entrants "
            "WHERE entrant_key = ?",
            (key,),
        ).fetchone()
        return EntrantRow(*row) if row else None

    def upsert_declared(self, key: str, name: str, token_sha256: str) -> None:
        """An entrant of the configuration: its token is the file's; a retired one stays retired
        unless the file names it again (then it is active again)."""
        self._db.execute(
            "INSERT INTO arena_entrants VALUES (?, ?, ?, 'config', 'active', ?, '') "
            "ON CONFLICT(entrant_key) DO UPDATE SET name = excluded.name, "
            "token_sha256 = excluded.token_sha256, source = 'config', "
            "state = CASE WHEN arena_entrants.source = 'config' THEN arena_entrants.state ELSE 'active' END",
            (key, name, token_sha256, now_ms()),
        )

    def register(self, key: str, name: str, token_sha256: str, state: str, address: str) -> bool:
        """A self-registered entrant; False (nothing written) when the key is taken."""
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO arena_entrants VALUES (?, ?, ?, 'registered', ?, ?, ?)",
            (key, name, token_sha256, state, now_ms(), address),
        )
        return cursor.rowcount == 1

    def set_state(self, key: str, state: str) -> bool:
        """Retire or approve an entrant; False when there is none under ``key``."""
        cursor = self._db.execute("UPDATE arena_entrants SET state = ? WHERE entrant_key = ?", (state, key))
        return cursor.rowcount == 1

    def note_version(self, key: str, version: str) -> bool:
        """Record that the entrant connected as ``version``; True when it is new."""
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO arena_versions VALUES (?, ?, ?)", (key, version, now_ms())
        )
        return cursor.rowcount == 1

    def versions(self) -> dict[str, list[str]]:
        """Each entrant's versions, oldest first."""
        out: dict[str, list[str]] = {}
        for key, version in self._db.execute(
            "SELECT entrant_key, version FROM arena_versions ORDER BY first_ms, version"
        ):
            out.setdefault(key, []).append(version)
        return out

    # Games --------------------------------------------------------------------------------
    def add_game(self, game: str, seats: list[str], waited_ms: list[int]) -> int:
        """A game being seated; its number."""
        cursor = self._db.execute(
            "INSERT INTO arena_games (game, seats_json, status, start_ms, waited_json) "
            "VALUES (?, ?, 'playing', ?, ?)",
            (game, json.dumps(seats), now_ms(), json.dumps(waited_ms)),
        )
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def set_match(self, number: int, match_id: str) -> None:
        """The match the game is played in."""
        self._db.execute("UPDATE arena_games SET match_id = ? WHERE number = ?", (match_id, number))

    def rate(
        self, number: int, result: dict[str, Any], ratings: list[dict[str, list[float]]], end_ms: int
    ) -> int | None:
        """Rate a playing game in one transaction; its rated order, or None when it was not
        ``playing`` any more (already rated or voided: nothing written)."""
        with self._transaction():
            row = self._db.execute("SELECT status FROM arena_games WHERE number = ?", (number,)).fetchone()
            if row is None or row[0] != "playing":
                return None
            (last,) = self._db.execute("SELECT COALESCE(MAX(rated_order), 0) FROM arena_games").fetchone()
            self._db.execute(
                "UPDATE arena_games SET status = 'rated', rated_order = ?, result_json = ?, "
                "ratings_json = ?, end_ms = ? WHERE number = ?",
                (last + 1, json.dumps(result), json.dumps(ratings), end_ms, number),
            )
            return int(last + 1)

    def void(self, number: int, why: str) -> None:
        """A game cut off before its end: never rated."""
        self._db.execute(
            "UPDATE arena_games SET status = 'void', end_ms = ?, result_json = ? "
            "WHERE number = ? AND status = 'playing'",
            (now_ms(), json.dumps({"void": why}), number),
        )

    def games(self, *, status: str | None = None, before: int = 0, limit: int = 0) -> list[GameRow]:
        """Games, newest first (all, or with ``status``; numbers below ``before``; ``limit``)."""
        where: list[str] = []
        args: list[object] = []
        if status is not None:
            where.append("status = ?")
            args.append(status)
        if before:
            where.append("number < ?")
            args.append(before)
        sql = (
            "SELECT number, game, match_id, seats_json, status, start_ms, end_ms, rated_order, "
            "result_json, ratings_json, waited_json FROM arena_games"
        )
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY number DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        return [_game(row) for row in self._db.execute(sql, args)]

    def rated_in_order(self) -> list[GameRow]:
        """Every rated game in the order it was rated."""
        rows = self._db.execute(
            "SELECT number, game, match_id, seats_json, status, start_ms, end_ms, rated_order, "
            "result_json, ratings_json, waited_json FROM arena_games WHERE status = 'rated' "
            "ORDER BY rated_order"
        )
        return [_game(row) for row in rows]

    # Operator controls --------------------------------------------------------------------
    def control(self, key: str) -> str | None:
        """A control's value (``paused``, ``stop``), or None."""
        row = self._db.execute("SELECT value FROM arena_control WHERE key = ?", (key,)).fetchone()
        return str(row[0]) if row else None

    def set_control(self, key: str, value: str | None) -> None:
        """Set (or with None clear) a control."""
        if value is None:
            self._db.execute("DELETE FROM arena_control WHERE key = ?", (key,))
        else:
            self._db.execute(
                "INSERT INTO arena_control VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)


class _Transaction:
    """BEGIN IMMEDIATE … COMMIT, rolled back on any exception."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, value: object, tb: object) -> None:
        self._db.execute("COMMIT" if kind is None else "ROLLBACK")


def _game(row: tuple[Any, ...]) -> GameRow:
    number, game, match_id, seats, status, start, end, order, result, ratings, waited = row
    return GameRow(
        number=number,
        game=game,
        match_id=match_id,
        seats=tuple(json.loads(seats)),
        status=status,
        start_ms=start,
        end_ms=end,
        rated_order=order,
        result=json.loads(result) if result else None,
        ratings=json.loads(ratings) if ratings else None,
        waited_ms=list(json.loads(waited or "[]")),
    )
