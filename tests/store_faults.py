"""Real store failures for tests: a held write lock, a full filesystem, an unwritable file.

Each fault is switched on and off around the calls under test; none of them reaches
into the server: they act on the database file the server uses, as an operator's
world would (another process holding the lock, a disk filling up, a file made
read-only).
"""

from __future__ import annotations

import contextlib
import errno
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from tests import processes


class LockedDatabase:
    """Another connection holds the write lock (``BEGIN IMMEDIATE``) on the real file."""

    name = "locked"

    def __init__(self, db: Path) -> None:
        self.db = db
        self._holder: sqlite3.Connection | None = None

    def on(self) -> None:
        self._holder = sqlite3.connect(self.db, timeout=5, isolation_level=None)
        self._holder.execute("BEGIN IMMEDIATE")

    def off(self) -> None:  # (idempotent)
        if self._holder is not None:
            self._holder.execute("ROLLBACK")
            self._holder.close()
            self._holder = None


class FullDisk:
    """The database lives on a tiny tmpfs: ``on`` empties the WAL (a TRUNCATE checkpoint,
    so the next commit needs new space) and fills the rest of the filesystem.
    """

    name = "disk-full"

    def __init__(self, db: Path) -> None:
        self.db = db
        self.filler = db.parent / "filler"

    def on(self) -> None:
        checkpoint = sqlite3.connect(self.db, timeout=5, isolation_level=None)
        try:
            busy, _, _ = checkpoint.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            assert busy == 0, "the WAL could not be emptied"
        finally:
            checkpoint.close()
        chunk = b"\0" * 65536
        with self.filler.open("wb", buffering=0) as out:
            try:
                while True:
                    out.write(chunk)
            except OSError as error:
                assert error.errno == errno.ENOSPC
            try:
                while True:
                    out.write(b"\0" * 512)
            except OSError as error:
                assert error.errno == errno.ENOSPC

    def off(self) -> None:
        self.filler.unlink(missing_ok=True)


class ReadOnlyFile:
    """The database file and its WAL made immutable (``chattr +i``): even root cannot write
    them (file permissions would not stop root); writes fail with SQLITE_IOERR.
    The shared-memory index is left alone (it is mapped; a write to it would be a SIGBUS).
    """

    name = "read-only"

    def __init__(self, db: Path) -> None:
        self.files = [db, db.with_name(db.name + "-wal")]

    def on(self) -> None:
        processes.run(["chattr", "+i", *map(str, self.files)], check=True, capture_output=True)

    def off(self) -> None:
        processes.run(["chattr", "-i", *map(str, self.files)], check=True, capture_output=True)


Fault = LockedDatabase | FullDisk | ReadOnlyFile


@contextlib.contextmanager
def tiny_filesystem(where: Path, size: str = "8m") -> Iterator[Path]:
    """A fresh tmpfs of ``size`` mounted at ``where`` (needs root), unmounted afterwards."""
    where.mkdir(parents=True, exist_ok=True)
    mounted = processes.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        raise PermissionError(f"cannot mount a tmpfs: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        processes.run(["umount", "-l", str(where)], check=False, capture_output=True)


def can_mount() -> bool:
    """True when this process may mount a tmpfs (root with CAP_SYS_ADMIN)."""
    probe = Path("/proc/self/status").read_text()
    caps = next((line.split()[1] for line in probe.splitlines() if line.startswith("CapEff:")), "0")
    return bool(int(caps, 16) & (1 << 21))


def can_chattr(directory: Path) -> bool:
    """True when files in ``directory`` can be made immutable (root with CAP_LINUX_IMMUTABLE)."""
    probe = directory / ".chattr-probe"
    probe.write_bytes(b"")
    try:
        done = processes.run(["chattr", "+i", str(probe)], capture_output=True)
        processes.run(["chattr", "-i", str(probe)], capture_output=True)
        return done.returncode == 0
    except FileNotFoundError:
        return False
    finally:
        probe.unlink(missing_ok=True)
