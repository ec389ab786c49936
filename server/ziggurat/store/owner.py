"""One owner per database file: an exclusive lock beside it, naming the process that holds it.

Two servers (or a server and a tournament) writing one database would both accept moves
and diverge. SQLite's own locks only serialise single transactions, so the owner takes an
``flock`` on ``<database>.lock`` for as long as it runs and writes its pid and command line
into it. The kernel drops the lock when the process ends however it ends (kill -9 included),
so a stale file never blocks a restart; the file itself is left in place (removing it would
race with the next owner).
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
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
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
        os.ftruncate(fd, 0)
        os.write(fd, f"pid {os.getpid()}: {_command()}\n".encode())
        self._fd: int | None = fd

    @classmethod
    def check_free(cls, db_path: str | Path) -> None:
        """Raise :class:`StartupError` if another process owns ``db_path`` now (an early,
        friendly refusal; the real guarantee is the lock taken by the server itself)."""
        if Path(db_path).parent.is_dir():
            cls(db_path).release()

    def release(self) -> None:
        """Give up ownership (idempotent)."""
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 512, 0).decode(errors="replace").strip()
    except OSError:
        text = ""
    return text.splitlines()[0] if text else "pid unknown"


def _command() -> str:
    argv = [Path(sys.argv[0]).name, *sys.argv[1:]] if sys.argv and sys.argv[0] else ["python"]
    return " ".join(argv)[:200]
