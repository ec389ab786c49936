"""The event log and match records on an embedded SQLite database (WAL mode).

The log is the single source of truth: every accepted move is committed here
before any client hears of it, and replaying a match's events through the rules
rebuilds it after a crash. The secret seed is stored beside the match (it must be,
to survive a restart) and leaves the server only through the reveal at the end.

sqlite3 calls are synchronous and short (one small transaction per change, or one for
the moves of many matches: :meth:`Store.commit_group`); they run on the event loop
thread so that commit order is the order clients see. They
therefore never wait for a lock (:data:`BUSY_TIMEOUT_S`): a write lock held elsewhere
fails the write at once instead of stalling every match, and every failed write
(locked, disk full, read-only, I/O error) is raised as one :class:`StoreUnavailableError`
after its transaction has been rolled back, so nothing of it is in the database.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import stat
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ziggurat.store.chain import link

SCHEMA = """
CREATE TABLE IF NOT EXISTS matches (
    match_id TEXT PRIMARY KEY,
    created_ms INTEGER NOT NULL,
    game TEXT NOT NULL,
    seats INTEGER NOT NULL,
    options_json TEXT NOT NULL,
    time_control_json TEXT NOT NULL,
    seat_assignment TEXT NOT NULL,
    seed BLOB NOT NULL,
    commitment TEXT NOT NULL,
    status TEXT NOT NULL,
    ended_ms INTEGER
);
CREATE INDEX IF NOT EXISTS matches_by_status ON matches (status, created_ms);
-- ListMatches pages walk these newest first (an index entry ends with the rowid).
CREATE INDEX IF NOT EXISTS matches_listing_by_status ON matches (status);
CREATE INDEX IF NOT EXISTS matches_listing_by_game ON matches (game);
CREATE TABLE IF NOT EXISTS seat_tokens (
    match_id TEXT NOT NULL,
    seat INTEGER NOT NULL,
    player_name TEXT NOT NULL,
    token_hash TEXT NOT NULL,
    PRIMARY KEY (match_id, seat)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS seat_tokens_by_hash ON seat_tokens (token_hash);
-- The serialized Match (match.proto) of a finished match as each audience sees it
-- (audience -1 = spectators, otherwise the 0-based seat): what ListMatches sends, so
-- that listing never replays a log. A cache of the log, rebuilt from it when missing.
CREATE TABLE IF NOT EXISTS match_summaries (
    match_id TEXT NOT NULL,
    audience INTEGER NOT NULL,
    summary BLOB NOT NULL,
    PRIMARY KEY (match_id, audience)
) WITHOUT ROWID;
-- The hashed creator token of a match (CancelMatch).
CREATE TABLE IF NOT EXISTS match_creators (
    match_id TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS bots (
    name TEXT PRIMARY KEY,
    token_hash TEXT NOT NULL,
    created_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS seat_strikes (
    match_id TEXT NOT NULL,
    seat INTEGER NOT NULL,
    illegal_moves INTEGER NOT NULL,
    PRIMARY KEY (match_id, seat)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS events (
    match_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    time_ms INTEGER NOT NULL,
    kind TEXT NOT NULL,
    data_json TEXT NOT NULL,
    chain TEXT,
    PRIMARY KEY (match_id, seq)
) WITHOUT ROWID;
"""
# The hash-chain column (ziggurat.store.chain), added to a database an older version made.
# Its events keep NULL there: they stay *unchained*, and so do the matches they belong to.
CHAIN_COLUMN = "ALTER TABLE events ADD COLUMN chain TEXT"

# How long a write waits for a lock held by another connection: not at all, because writes
# run on the event loop and the server's own writes never overlap (one thread). Measured on
# a locked file: a refused write returns in 2 us (p50), 0.15 ms (p99); with sqlite's usual
# 5 s every match stalled 5 s, and even a 2 ms timeout cost 2 ms (p50) and 50 ms (p99) on a
# loaded machine, the busy handler's sleeps overshooting.
BUSY_TIMEOUT_S = 0.0
# How long the final checkpoint at close waits for readers.
FINAL_CHECKPOINT_WAIT_S = 5.0
# The WAL's size bound. Background PASSIVE checkpoints copy the WAL into the database but
# never let it start over while writes keep coming (each one starts before the last frame
# is copied), so under steady load the WAL grew for ever: 1.3 GB in two minutes of
# benchmarks/soak.py. Past this many frames the writer itself runs a RESTART checkpoint
# between two transactions (no lock to wait for: it is the only writer; the frames left to
# copy are those since the last background pass), and journal_size_limit shrinks the file
# back to this size when the WAL starts over.
WAL_RESTART_FRAMES = 16_384  # 64 MiB of 4 KiB pages

log = logging.getLogger("ziggurat.store")


def private_files(path: str) -> None:
    """Create the database ``0600`` and take group and other permissions off an existing one
    and its ``-wal``/``-shm``: they hold every live match's secret seed in clear. SQLite
    creates the ``-wal`` and ``-shm`` files with the database file's own mode, so they
    follow. A file this process may not chmod (another user's) is left and logged.
    """
    # Only a file that does not exist yet is opened here. SQLite's locks are POSIX locks, which a
    # process loses on a file when it closes *any* descriptor of that file: opening and closing
    # an existing database beside a connection of this process (a tournament's store opened
    # after its match store) dropped that connection's locks, and concurrent writers then
    # corrupted the file ("database disk image is malformed"). An existing file is chmod-ed
    # by its path, which takes no descriptor.
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    except FileExistsError:
        pass
    except OSError:
        return  # the open below says why, as before
    for name in (path, f"{path}-wal", f"{path}-shm"):
        try:
            mode = stat.S_IMODE(os.stat(name).st_mode)
            if mode & 0o077:
                os.chmod(name, mode & 0o700)
        except FileNotFoundError:
            continue
        except OSError as error:
            log.warning("cannot make %s private (mode 0600): %s", name, error.strerror)


def _json(data: dict[str, Any]) -> str:
    return json.dumps(data, separators=(",", ":"))


def page_rows(
    db: sqlite3.Connection,
    columns: str,
    *,
    status: str | None,
    game: str | None,
    limit: int,
    before: int | None,
) -> list[tuple[Any, ...]]:
    """(rowid, *columns) of the matches table, newest first, filtered by status and game,
    after the keyset cursor ``before`` (see :meth:`Store.page_ids`); shared with the
    read-only shard readers of ``ziggurat serve --workers``.
    """
    query = f"SELECT rowid, {columns} FROM matches WHERE 1=1"
    params: list[Any] = []
    if status is not None:
        query += " AND status=?"
        params.append(status)
    if game is not None:
        query += " AND game=?"
        params.append(game)
    if before is not None:
        query += " AND rowid < ?"
        params.append(before)
    query += " ORDER BY rowid DESC LIMIT ?"
    params.append(limit)
    return [tuple(row) for row in db.execute(query, params)]


class StoreUnavailableError(Exception):
    """A write failed (locked, disk full, read-only, I/O error): nothing of it was stored."""

    def __init__(self, cause: sqlite3.Error) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.code = getattr(cause, "sqlite_errorname", type(cause).__name__)


@dataclass(slots=True)
class StoredEvent:
    """One persisted log entry (the authoritative, unredacted form: never sent as is)."""

    seq: int
    time_ms: int
    kind: str
    data: dict[str, Any]
    data_json: str = ""  # the payload as stored (the chain hashes this text)
    chain: str | None = None  # the event's link (ziggurat.store.chain); None: unchained


@dataclass(slots=True)
class EventRow:
    """One log entry as it is written: its payload already encoded as the stored JSON text
    (:func:`ziggurat.core.events.encode`), so the write path runs no generic encoder.
    """

    seq: int
    time_ms: int
    kind: str
    data_json: str


@dataclass(frozen=True, slots=True)
class Write:
    """One decision of one match as the store writes it (see :meth:`Store.commit`)."""

    match_id: str
    events: Sequence[EventRow]
    status: str | None = None
    ended_ms: int | None = None
    seat: tuple[int, str, str] | None = None  # (seat, player_name, token_hash)
    strikes: Sequence[tuple[int, int]] = ()


@dataclass(slots=True)
class StoredMatch:
    """A match's row plus its seats and events, as loaded for replay."""

    match_id: str
    created_ms: int
    game: str
    seats: int
    options: dict[str, str]
    time_control: dict[str, int | str]
    seat_assignment: str
    seed: bytes
    commitment: str
    status: str
    ended_ms: int | None
    seat_rows: list[tuple[int, str, str]]  # (seat, player_name, token_hash)
    events: list[StoredEvent]
    strikes: dict[int, int] = field(default_factory=dict)  # refused moves counted, by seat


class Store:
    """A SQLite database file holding every match ziggurat has hosted."""

    def __init__(self, path: str | Path, *, durable: bool = False, readonly: bool = False) -> None:
        """Open (creating if needed) the database at ``path``.

        ``durable=False`` uses ``synchronous=NORMAL``: a commit survives a crash of
        the server process (kill -9) but maybe not a power loss; ``durable=True``
        fsyncs every commit (``synchronous=FULL``). ``readonly=True`` opens an existing
        file for inspection (``ziggurat check``, even beside a running server): every
        write fails with SQLite's "readonly" error.
        """
        self.path = str(path)
        self._checkpointer: _Checkpointer | None = None
        # The last link of each match written since it was opened (None: the match is
        # unchained); a match not here is looked up once. Changed only after a commit.
        self._heads: dict[str, str | None] = {}
        if readonly:
            uri = f"{Path(self.path).resolve().as_uri()}?mode=ro"
            self._db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
            self.readonly = True
            try:
                self._db.execute("PRAGMA schema_version").fetchone()  # fails now if not a database
                self._chain_column = self._has_chain_column()
            except sqlite3.Error:
                self._db.close()
                raise
            return
        self.readonly = False
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            private_files(self.path)
        # Opening may wait for a lock as sqlite usually does (nothing is served yet); the
        # writes of a running server never wait (BUSY_TIMEOUT_S).
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=5.0)
        self._failures = 0  # failed writes since the last one that succeeded
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
        self._db.execute("PRAGMA foreign_keys=ON")
        self._db.executescript(SCHEMA)
        if not self._has_chain_column():
            self._db.execute(CHAIN_COLUMN)
        self._chain_column = True
        self._db.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
        if self.path != ":memory:":
            # Checkpoints copy the WAL into the database file and fsync it: on the event loop
            # they would stall every match. A background thread does them instead.
            self._db.execute("PRAGMA wal_autocheckpoint=0")
            self._db.execute(f"PRAGMA journal_size_limit={WAL_RESTART_FRAMES * 4096}")
            self._checkpointer = _Checkpointer(self.path)

    def close(self) -> None:
        """Checkpoint and close; later calls fail."""
        self.detach()()

    def detach(self) -> Callable[[], None]:
        """Take the connection out of use now and return the rest of :meth:`close` (the final
        checkpoint, which may wait up to FINAL_CHECKPOINT_WAIT_S for readers, then the close),
        for another thread to run: the server runs it off the event loop.

        Why not close() itself on that thread: Python's sqlite3 connection must not be used by
        two threads at once (it is opened with ``check_same_thread=False`` and has no lock of
        its own), and a call still made on the event loop meanwhile — a move committed by a
        timer in the last moments of a shutdown — would use it while the other thread closes
        it. After ``detach`` every call fails at once instead: ``sqlite3.ProgrammingError``
        ("closed database"), a write as :class:`StoreUnavailableError`.
        """
        db, self._db = self._db, _closed_connection()
        checkpointer, self._checkpointer = self._checkpointer, None
        readonly = self.readonly

        def finish() -> None:
            if checkpointer is not None:
                checkpointer.stop()
            if readonly:
                db.close()
                return
            try:
                # The last checkpoint may wait for readers of old snapshots (a backup, `ziggurat
                # check`) so that the WAL is emptied.
                db.execute(f"PRAGMA busy_timeout = {int(FINAL_CHECKPOINT_WAIT_S * 1000)}")
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            finally:
                db.close()

        return finish

    def create_match(self, match: StoredMatch) -> None:
        """Insert a new match and its first events in one transaction."""
        with self._transaction():
            self._db.execute(
                "INSERT INTO matches VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    match.match_id,
                    match.created_ms,
                    match.game,
                    match.seats,
                    json.dumps(match.options, sort_keys=True),
                    json.dumps(match.time_control, sort_keys=True),
                    match.seat_assignment,
                    match.seed,
                    match.commitment,
                    match.status,
                    match.ended_ms,
                ),
            )
            rows = [EventRow(e.seq, e.time_ms, e.kind, _json(e.data)) for e in match.events]
            heads: dict[str, str | None] = {match.match_id: match.commitment}
            self._insert_events(match.match_id, rows, heads)
        self._heads.update(heads)

    def commit(
        self,
        match_id: str,
        events: Sequence[EventRow],
        *,
        status: str | None = None,
        ended_ms: int | None = None,
        seat: tuple[int, str, str] | None = None,
        strikes: Sequence[tuple[int, int]] = (),
    ) -> None:
        """One decision in one transaction: its events, a joined seat (token stored only
        hashed), counted illegal moves and the new status; all of it or nothing.
        """
        self.commit_group([Write(match_id, events, status, ended_ms, seat, strikes)])

    def commit_group(self, writes: Sequence[Write]) -> None:
        """Several decisions (of different matches, or one match's in order) in ONE
        transaction: all of them or none (group commit: one BEGIN/COMMIT, and with
        ``durable`` one fsync, for the moves of many matches).
        """
        heads: dict[str, str | None] = {}
        with self._transaction():
            for write in writes:
                self._write(write, heads)
        # Committed: only now does the chain's memory move on (a failed commit wrote nothing).
        self._heads.update(heads)
        for write in writes:
            if write.status == "finished":
                self._heads.pop(write.match_id, None)  # nothing more is written to it

    def _write(self, write: Write, heads: dict[str, str | None]) -> None:
        match_id = write.match_id
        if write.seat is not None:
            self._db.execute("INSERT INTO seat_tokens VALUES (?,?,?,?)", (match_id, *write.seat))
        for strike_seat, count in write.strikes:
            self._db.execute(
                "INSERT OR REPLACE INTO seat_strikes VALUES (?,?,?)", (match_id, strike_seat, count)
            )
        self._insert_events(match_id, write.events, heads)
        if write.status is not None:
            self._db.execute(
                "UPDATE matches SET status=?, ended_ms=? WHERE match_id=?",
                (write.status, write.ended_ms, match_id),
            )

    def last_seq(self, match_id: str) -> int:
        """The sequence number of a match's newest stored event (0 if none)."""
        try:
            row = self._db.execute("SELECT MAX(seq) FROM events WHERE match_id=?", (match_id,)).fetchone()
        except sqlite3.Error as error:
            raise StoreUnavailableError(error) from None
        return int(row[0] or 0)

    def load(self, match_id: str) -> StoredMatch | None:
        """One match with its seats and full event log, or None."""
        row = self._db.execute("SELECT * FROM matches WHERE match_id=?", (match_id,)).fetchone()
        return None if row is None else self._load_row(row)

    def load_unfinished(self) -> list[StoredMatch]:
        """Every match that was waiting or active: what a restart must bring back."""
        rows = self._db.execute(
            "SELECT * FROM matches WHERE status != 'finished' ORDER BY created_ms"
        ).fetchall()
        return [self._load_row(row) for row in rows]

    def list_ids(self, *, status: str | None, game: str | None, limit: int) -> list[str]:
        """Match ids, newest first, filtered by status and game."""
        return [match_id for _, match_id in self.page_ids(status=status, game=game, limit=limit)]

    def page_ids(
        self,
        *,
        status: str | None,
        game: str | None,
        limit: int,
        before: int | None = None,
    ) -> list[tuple[int, str]]:
        """(position, match_id) of matches, newest first, filtered by status and game.

        The position is the row's rowid, which grows with every match created (so it
        orders matches exactly by creation, even within one millisecond). ``before`` is
        a keyset cursor, the position of the last match of the previous page: a match
        created later has a larger position and never lands in a later page.
        """
        rows = page_rows(self._db, "match_id", status=status, game=game, limit=limit, before=before)
        return [(int(row[0]), str(row[1])) for row in rows]

    def summary(self, match_id: str, audience: int | None) -> bytes | None:
        """The stored summary of a finished match for ``audience`` (None = spectators)."""
        row = self._db.execute(
            "SELECT summary FROM match_summaries WHERE match_id=? AND audience=?",
            (match_id, -1 if audience is None else audience),
        ).fetchone()
        return None if row is None else bytes(row[0])

    def summaries(self, match_ids: list[str]) -> dict[str, bytes]:
        """The spectators' stored summaries of these matches (those that have one), in one query."""
        if not match_ids:
            return {}
        marks = ",".join("?" * len(match_ids))
        query = f"SELECT match_id, summary FROM match_summaries WHERE audience=-1 AND match_id IN ({marks})"
        return {str(match_id): bytes(data) for match_id, data in self._db.execute(query, match_ids)}

    def save_summaries(self, match_id: str, summaries: dict[int | None, bytes]) -> None:
        """Store (or replace) a finished match's summaries by audience."""
        with self._transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO match_summaries VALUES (?,?,?)",
                [
                    (match_id, -1 if audience is None else audience, data)
                    for audience, data in summaries.items()
                ],
            )

    def seat_of_token(self, token_hash: str) -> tuple[str, int] | None:
        """(match_id, 0-based seat) of a seat token's hash, if it is one."""
        row = self._db.execute(
            "SELECT match_id, seat FROM seat_tokens WHERE token_hash=?", (token_hash,)
        ).fetchone()
        return None if row is None else (str(row[0]), int(row[1]))

    def set_creator(self, match_id: str, token_hash: str) -> None:
        """Record the hash of a match's creator token (before the match itself is stored)."""
        with self._transaction():
            self._db.execute("INSERT INTO match_creators VALUES (?,?)", (match_id, token_hash))

    def creator_hash(self, match_id: str) -> str | None:
        """The hash of the match's creator token, if it has one."""
        row = self._db.execute(
            "SELECT token_hash FROM match_creators WHERE match_id=?", (match_id,)
        ).fetchone()
        return None if row is None else str(row[0])

    def integrity_problems(self, limit: int = 100) -> list[str]:
        """SQLite's own ``PRAGMA integrity_check``: an empty list when the file is sound."""
        rows = self._db.execute(f"PRAGMA integrity_check({int(limit)})").fetchall()
        problems = [str(row[0]) for row in rows]
        return [] if problems == ["ok"] else problems

    def match_ids(self, *, unfinished_only: bool = False) -> list[str]:
        """Every match id (or those not finished), oldest first: read apart from the rows so
        that one damaged row cannot hide the others.
        """
        where = " WHERE status != 'finished'" if unfinished_only else ""
        query = f"SELECT match_id FROM matches{where} ORDER BY created_ms, match_id"
        return [str(row[0]) for row in self._db.execute(query)]

    def orphan_event_match_ids(self) -> list[str]:
        """Match ids that have events but no match row (a deleted or lost row)."""
        query = (
            "SELECT DISTINCT match_id FROM events "
            "WHERE match_id NOT IN (SELECT match_id FROM matches) ORDER BY match_id"
        )
        return [str(row[0]) for row in self._db.execute(query)]

    def bot_token_hash(self, name: str) -> str | None:
        """The token hash a remote bot name was registered with, if any."""
        row = self._db.execute("SELECT token_hash FROM bots WHERE name=?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def register_bot(self, name: str, token_hash: str, created_ms: int, *, replace: bool = False) -> None:
        """Bind a remote bot name to its token (first connection wins the name; an operator's
        pre-registration, ``replace``, overrides it)."""
        verb = "INSERT OR REPLACE" if replace else "INSERT"
        with self._transaction():
            self._db.execute(f"{verb} INTO bots VALUES (?,?,?)", (name, token_hash, created_ms))

    def rekey_bots(self, key_of: Callable[[str], str]) -> list[str]:
        """Store every remote-bot name under ``key_of(name)`` (a newer key function, applied to
        the keys an older one stored); on a clash the earliest registration keeps the key.
        Returns the names dropped by a clash. A stored name ``key_of`` refuses stays as it is.
        """
        query = "SELECT name, token_hash, created_ms FROM bots ORDER BY created_ms, name"
        rows = self._db.execute(query).fetchall()
        kept: dict[str, tuple[str, int]] = {}
        dropped: list[str] = []
        for name, token_hash, created_ms in rows:
            try:
                key = key_of(str(name))
            except Exception:
                key = str(name)
            if key in kept:
                dropped.append(str(name))
            else:
                kept[key] = (str(token_hash), int(created_ms))
        if not dropped and list(kept) == [str(row[0]) for row in rows]:
            return []  # already keyed this way: write nothing
        with self._transaction():
            self._db.execute("DELETE FROM bots")
            self._db.executemany(
                "INSERT INTO bots VALUES (?,?,?)", [(key, th, ms) for key, (th, ms) in kept.items()]
            )
        return dropped

    def _load_row(self, row: tuple[Any, ...]) -> StoredMatch:
        match_id = row[0]
        seats = self._db.execute(
            "SELECT seat, player_name, token_hash FROM seat_tokens WHERE match_id=? ORDER BY seat",
            (match_id,),
        ).fetchall()
        chain = "chain" if self._chain_column else "NULL"
        events = [
            StoredEvent(seq, time_ms, kind, json.loads(data), data, link_value)
            for seq, time_ms, kind, data, link_value in self._db.execute(
                f"SELECT seq, time_ms, kind, data_json, {chain} FROM events WHERE match_id=? ORDER BY seq",
                (match_id,),
            )
        ]
        strikes = dict(
            self._db.execute("SELECT seat, illegal_moves FROM seat_strikes WHERE match_id=?", (match_id,))
        )
        return StoredMatch(
            match_id=match_id,
            created_ms=row[1],
            game=row[2],
            seats=row[3],
            options=json.loads(row[4]),
            time_control=json.loads(row[5]),
            seat_assignment=row[6],
            seed=bytes(row[7]),
            commitment=row[8],
            status=row[9],
            ended_ms=row[10],
            seat_rows=[(int(s), str(n), str(h)) for s, n, h in seats],
            events=events,
            strikes={int(k): int(v) for k, v in strikes.items()},
        )

    def _insert_events(self, match_id: str, events: Sequence[EventRow], heads: dict[str, str | None]) -> None:
        """Insert ``events``, each linked to the one before (``heads`` holds the links written
        in this transaction, and receives the last one)."""
        if not events:
            return
        previous = heads[match_id] if match_id in heads else self._head(match_id)
        rows = []
        for e in events:
            if previous is not None:
                previous = link(previous, e.seq, e.time_ms, e.kind, e.data_json)
            rows.append((match_id, e.seq, e.time_ms, e.kind, e.data_json, previous))
        heads[match_id] = previous
        self._db.executemany("INSERT INTO events VALUES (?,?,?,?,?,?)", rows)

    def _head(self, match_id: str) -> str | None:
        """The link the next event of ``match_id`` follows: the last stored one, or the
        commitment before the first event; None for an unchained match."""
        if match_id in self._heads:
            return self._heads[match_id]
        row = self._db.execute(
            "SELECT chain FROM events WHERE match_id=? ORDER BY seq DESC LIMIT 1", (match_id,)
        ).fetchone()
        if row is not None:
            return None if row[0] is None else str(row[0])
        found = self._db.execute("SELECT commitment FROM matches WHERE match_id=?", (match_id,)).fetchone()
        return None if found is None else str(found[0])

    def _has_chain_column(self) -> bool:
        return any(row[1] == "chain" for row in self._db.execute("PRAGMA table_info(events)"))

    def chained_log(self, match_id: str) -> list[StoredEvent]:
        """A match's events as stored, with their links (``data`` left empty: the record
        carries the stored text)."""
        if not self._chain_column:
            return []  # an older database opened read-only: every match is unchained
        return [
            StoredEvent(seq, time_ms, kind, {}, data_json, chain)
            for seq, time_ms, kind, data_json, chain in self._db.execute(
                "SELECT seq, time_ms, kind, data_json, chain FROM events WHERE match_id=? ORDER BY seq",
                (match_id,),
            )
        ]

    def _transaction(self) -> _Transaction:
        return _Transaction(self)

    def _failed(self, error: sqlite3.Error) -> StoreUnavailableError:
        """Count a failed write; the first of an outage is logged, the rest only counted."""
        self._failures += 1
        failure = StoreUnavailableError(error)
        if self._failures == 1:
            log.warning("database write failed (%s: %s); retrying as writes come", failure.code, error)
        return failure

    def _succeeded(self) -> None:
        if self._failures:
            log.warning("database writes work again after %d failed writes", self._failures)
            self._failures = 0
        if self._checkpointer is not None and self._checkpointer.restart_wanted:
            self._restart_wal()

    def _restart_wal(self) -> None:
        """Let the WAL start over (see WAL_RESTART_FRAMES); a reader in the way defers it."""
        assert self._checkpointer is not None
        self._checkpointer.restart_wanted = False  # asked again after the next background pass
        try:
            busy, frames, copied = self._db.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()
        except sqlite3.Error as error:
            log.debug("WAL restart checkpoint failed: %s", error)
            return
        if busy:
            log.debug("WAL restart deferred by a reader (%d of %d frames copied)", copied, frames)


def _closed_connection() -> sqlite3.Connection:
    """A connection that is closed: every use raises ``sqlite3.ProgrammingError``."""
    db = sqlite3.connect(":memory:")
    db.close()
    return db


class _Checkpointer:
    """A daemon thread that checkpoints the WAL (PASSIVE: never blocks the writer) every second,
    and asks the writer for a RESTART checkpoint once the WAL holds WAL_RESTART_FRAMES frames.
    """

    INTERVAL = 1.0

    def __init__(self, path: str) -> None:
        self.restart_wanted = False  # set here, cleared by the writer (a bool: atomic under the GIL)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(path,), name="sqlite-checkpoint", daemon=True)
        self._thread.start()

    def _run(self, path: str) -> None:
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=True)
        try:
            while not self._stop.wait(self.INTERVAL):
                try:
                    _, frames, _ = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                except sqlite3.Error:
                    continue  # busy now: the next round will do it
                if frames >= WAL_RESTART_FRAMES:
                    self.restart_wanted = True
        finally:
            db.close()

    def stop(self) -> None:
        """Stop the thread (the owner then does a final TRUNCATE checkpoint)."""
        self._stop.set()
        self._thread.join(5)


class _Transaction:
    """BEGIN IMMEDIATE/COMMIT around a block; on any error ROLLBACK (if a transaction is
    still open) and raise :class:`StoreUnavailableError`, so a refused write leaves nothing.
    """

    def __init__(self, store: Store) -> None:
        self._store = store
        self._db = store._db

    def __enter__(self) -> None:
        try:
            if self._db.in_transaction:  # a ROLLBACK that failed earlier (I/O error): finish it now
                self._db.execute("ROLLBACK")
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as error:
            raise self._store._failed(error) from None

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            try:
                self._db.execute("COMMIT")
            except sqlite3.Error as error:
                self._rollback()
                raise self._store._failed(error) from None
            self._store._succeeded()
            return
        self._rollback()
        if isinstance(exc, sqlite3.Error):
            raise self._store._failed(exc) from None

    def _rollback(self) -> None:
        if self._db.in_transaction:
            try:
                self._db.execute("ROLLBACK")
            except sqlite3.Error:
                log.debug("rollback failed after a failed write", exc_info=True)
