"""Start-up checks of a database path, each failure one plain sentence for the operator.

A server that says "listening" and then fails every write is worse than one that refuses
to start: so before anything is served the directory must exist and be writable (SQLite's
WAL needs the ``-wal`` and ``-shm`` files beside the database), the file must be an SQLite
database, and a write must be possible (a probe transaction that is rolled back).

The database holds the secret seed of every live match in clear, so its files are the
server's alone (``0600``, :func:`ziggurat.store.sqlite.private_files`), and the directory
is checked too: one that every user may write to without the sticky bit is refused (anyone
could delete the ``-wal`` file or put another database in its place); one that others may
list or enter gets a warning (:func:`directory_exposure`), as copies made there by other
tools (a backup, ``sqlite3 .dump``) would follow their own umask.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

# Primary SQLite result codes (the low byte of an extended code).
SQLITE_READONLY = 8
SQLITE_CORRUPT = 11
SQLITE_CANTOPEN = 14
SQLITE_NOTADB = 26


class StartupError(Exception):
    """The server cannot start; the message is one line and says why (no traceback)."""


# What Python's sqlite3 raises (an OperationalError with no SQLite result code: SQLite itself
# stores any bytes in a TEXT column) when a text value it reads is not UTF-8.
UNDECODABLE_TEXT = "Could not decode to UTF-8 column "


def is_undecodable(error: sqlite3.Error) -> bool:
    """True when ``error`` is a row's text that is not UTF-8 (the row is damaged, not the file)."""
    return getattr(error, "sqlite_errorcode", None) is None and str(error).startswith(UNDECODABLE_TEXT)


def is_damage(error: sqlite3.Error) -> bool:
    """True when the database's content is damaged (not a lock or a full disk): SQLite says
    so, or a row's text is not UTF-8."""
    code = getattr(error, "sqlite_errorcode", None)
    if code is None:
        return type(error) is sqlite3.DatabaseError or is_undecodable(error)
    return code & 0xFF in (SQLITE_CORRUPT, SQLITE_NOTADB)


def check_database_path(db_path: str | Path) -> None:
    """Refuse, with one line, a database the server could not write to.

    Checks in order: the directory exists, is a directory and is writable; the file, when
    it exists, is a writable regular file, opens as SQLite, and accepts a write (rolled back).
    """
    path = Path(db_path)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.exists():
        raise StartupError(f"the database directory {directory} does not exist")
    if not directory.is_dir():
        raise StartupError(f"{directory} is not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise StartupError(f"the database directory {directory} is read-only")
    mode = directory.stat().st_mode
    if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
        raise StartupError(
            f"the database directory {directory} may be written by every user (mode {stat.S_IMODE(mode):o}): "
            f"anyone could delete or replace the database files; chmod 700 {directory}"
        )
    if path.exists():
        if not path.is_file():
            raise StartupError(f"the database {path} is not a regular file")
        if not os.access(path, os.R_OK):
            raise StartupError(f"the database {path} is not readable")
        if not os.access(path, os.W_OK):
            raise StartupError(f"the database {path} is read-only")
    probe_database(path)


def directory_exposure(db_path: str | Path) -> str | None:
    """A one-line warning when users other than the owner may list or enter the database's
    directory (group or others have read or search permission); None when it is private."""
    directory = Path(db_path).parent if str(Path(db_path).parent) else Path(".")
    try:
        mode = stat.S_IMODE(directory.stat().st_mode)
    except OSError:
        return None
    if not mode & 0o055:
        return None
    return (
        f"the database directory {directory} is open to other users (mode {mode:o}); the database "
        f"files are private (0600), but a private directory (chmod 700 {directory}) keeps copies safe too"
    )


def probe_database(path: Path) -> None:
    """Open ``path`` as SQLite and try a write in a transaction that is rolled back.

    A file SQLite opens but finds partly damaged passes: damage is reported and contained later.
    """
    try:
        db = sqlite3.connect(str(path), isolation_level=None, timeout=5)
    except sqlite3.Error as error:
        raise StartupError(f"cannot open the database {path}: {error}") from None
    try:
        db.execute("PRAGMA schema_version").fetchone()  # reads the header: "not a database" here
        (version,) = db.execute("PRAGMA user_version").fetchone()
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(f"PRAGMA user_version = {int(version)}")  # a real write of the header page
        finally:
            db.execute("ROLLBACK")
    except sqlite3.Error as error:
        if (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF == SQLITE_CORRUPT:
            # SQLite opens the file but some of it is damaged: the server starts, reports it
            # (integrity check) and quarantines the matches it cannot rebuild.
            return
        raise StartupError(_describe(path, error)) from None
    finally:
        db.close()


def _describe(path: Path, error: sqlite3.Error) -> str:
    code = (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF
    if code == SQLITE_NOTADB:
        return (
            f"{path} is not an SQLite database (or its header is damaged): run `ziggurat check --db {path}`"
        )
    if code == SQLITE_READONLY:
        return f"the database {path} is read-only ({error})"
    if code == SQLITE_CANTOPEN:
        return f"cannot open the database {path} ({error}): check the file and its directory"
    return f"cannot use the database {path}: {error}"
