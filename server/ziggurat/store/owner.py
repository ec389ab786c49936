"""One owner per database file: an exclusive lock beside it, naming the process that holds it.

Two servers (or a server and a tournament) writing one database would both accept moves
and diverge. SQLite's own locks only serialise single transactions, so the owner takes an
``flock`` on ``<database>.lock`` for as long as it runs and writes its pid and command line
into it. The kernel drops the lock when the process ends however it ends (kill -9 included),
so a stale file never blocks a restart; the file itself is left in place (removing it would
race with the next owner).

The lock file also says whether its owner closed the database: ``open`` once the server has
opened it, ``closed`` after a clean close. SQLite deletes the ``-wal`` file only at a clean
close, so a database left ``open`` (the owner crashed, or was killed) with no ``-wal`` beside
it has lost the commits that file held and that were not yet copied into the database:
:func:`wal_problem` says so, at start-up and in ``ziggurat check``.
"""

from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path

from ziggurat.store.startup import StartupError


def lock_path(db_path: str | Path) -> Path:
    """Where the owner lock of ``db_path`` lives."""
    return Path(f"{db_path}.lock")


class DatabaseOwner:
    """Held while a process owns a database; :meth:`release` (or process exit) frees it."""

    def __init__(self, db_path: str | Path) -> None:
        """Take the lock or raise :class:`StartupError` naming the process that holds it."""
        self.path = lock_path(db_path)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as error:
            raise StartupError(f"cannot create the lock file {self.path}: {error.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise StartupError(
                f"database {db_path} is in use by another process ({holder}); stop it or use another --db"
            ) from None
        # What the previous owner left, read before this one overwrites it.
        self.previous_state = _state(_read_all(fd))
        self.wal_lost = _wal_missing(db_path, self.previous_state)
        self._header = f"pid {os.getpid()}: {_command()}\n"
        self._fd: int | None = fd
        self._write("")

    def mark_open(self) -> None:
        """The database is open: until :meth:`release` says ``closed``, a missing WAL is a loss."""
        self._write(f"{OPEN}\n")

    @classmethod
    def check_free(cls, db_path: str | Path) -> None:
        """Raise :class:`StartupError` if another process owns ``db_path`` now (an early,
        friendly refusal; the real guarantee is the lock taken by the server itself)."""
        if Path(db_path).parent.is_dir():
            cls(db_path).release()

    def release(self, *, closed: bool = False) -> None:
        """Give up ownership (idempotent); ``closed``: the database was closed cleanly."""
        if closed:
            self._write(f"{CLOSED}\n")
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def _write(self, state: str) -> None:
        if self._fd is None:
            return
        try:
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, (self._header + state).encode(), 0)
        except OSError:
            pass  # the lock is what matters; the note is a diagnosis


OPEN = "open: the database is in use; its -wal file must stay beside it"
CLOSED = "closed"


def wal_problem(db_path: str | Path) -> str | None:
    """One line when the database was left open by an owner that is gone (it crashed or was
    killed) and its ``-wal`` file is missing; None otherwise, and while an owner runs (a
    running server's SQLite opens a new, empty ``-wal`` when the old one is deleted: the
    loss shows only after it stops). Reads the lock file, whose lock is taken and released
    at once to tell a running owner from a gone one."""
    path = lock_path(db_path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        state = _state(_read_all(fd))
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # an owner runs
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    return lost_wal_message(db_path) if _wal_missing(db_path, state) else None


def lost_wal_message(db_path: str | Path) -> str:
    """The one line said when a database was left open and its ``-wal`` file is gone."""
    return (
        f"the WAL file {db_path}-wal is missing although {db_path} was not closed cleanly: the "
        f"commits it held and not yet copied into the database (recent matches and moves) are lost, "
        f"unless another program opened and closed the database since"
    )


def _wal_missing(db_path: str | Path, state: str) -> bool:
    return state == "open" and Path(db_path).is_file() and not Path(f"{db_path}-wal").exists()


def _state(text: str) -> str:
    """``open``, ``closed`` or ``""`` (a file from an older version, or new)."""
    lines = text.splitlines()
    if OPEN in lines:
        return "open"
    return "closed" if CLOSED in lines else ""


def _read_all(fd: int) -> str:
    try:
        return os.pread(fd, 4096, 0).decode(errors="replace")
    except OSError:
        return ""


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 512, 0).decode(errors="replace").strip()
    except OSError:
        text = ""
    return text.splitlines()[0] if text else "pid unknown"


def _command() -> str:
    argv = [Path(sys.argv[0]).name, *sys.argv[1:]] if sys.argv and sys.argv[0] else ["python"]
    return " ".join(argv)[:200]
