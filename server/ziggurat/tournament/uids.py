"""Sandbox user ids leased host-wide, so no two sandboxes anywhere on the machine share one.

Linux counts ``RLIMIT_NPROC`` per *user*: two sandboxes running as the same user share one
process quota, and a fork bomb in one starves the other — even in another tournament running
at the same time. So every sandbox's user is leased under a host-wide lock: a directory
(``/run/ziggurat/sandbox-uids`` by default, root's, emptied at boot) holds a lock file and one
lease file per uid in use, naming the owning process (pid and start time, so a recycled pid is
not mistaken for the owner). A uid is free when no live process holds its lease *and* no
process runs as it (a sandbox that outlived its owner keeps its uid taken). Leases of dead
owners are reclaimed by the next allocation.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

LEASE_DIR = Path("/run/ziggurat/sandbox-uids")


class NoFreeUid(RuntimeError):
    """Every uid of the range is in use."""


class UidLeases:
    """Leases of the uids ``base`` … ``base + slots - 1`` for this process's sandboxes."""

    def __init__(self, base: int, slots: int, directory: Path = LEASE_DIR) -> None:
        self.base = base
        self.slots = slots
        self.directory = directory
        self._mine = _identity(os.getpid())

    def acquire(self) -> int:
        """A uid nobody else holds nor runs as; leased to this process until :meth:`release`."""
        with self._locked():
            busy = _running_uids()
            for uid in range(self.base, self.base + self.slots):
                lease = self.directory / str(uid)
                if uid in busy or _held(lease):
                    continue
                lease.write_text(self._mine + "\n")
                return uid
        raise NoFreeUid(
            f"all {self.slots} sandbox users from {self.base} are in use (raise [sandbox] uid_slots "
            "or run fewer games at once)"
        )

    def release(self, uid: int) -> None:
        """Give ``uid`` back (only if this process holds it)."""
        with self._locked():
            lease = self.directory / str(uid)
            with contextlib.suppress(OSError):
                if lease.read_text().strip() == self._mine:
                    lease.unlink()

    def held(self) -> list[int]:
        """The uids this process holds now."""
        out = []
        for lease in self.directory.iterdir():
            with contextlib.suppress(OSError, ValueError):
                if lease.name.isdigit() and lease.read_text().strip() == self._mine:
                    out.append(int(lease.name))
        return sorted(out)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        with (self.directory / "lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _identity(pid: int) -> str:
    """``pid`` and its start time (field 22 of /proc/PID/stat): unique while the machine runs."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    fields = stat[stat.rindex(")") + 2 :].split()
    return f"{pid} {fields[19]}"


def _held(lease: Path) -> bool:
    """True when ``lease`` exists and names a process that is still running."""
    try:
        owner = lease.read_text().strip()
    except OSError:
        return False
    pid = owner.split(" ", 1)[0]
    return pid.isdigit() and _identity(int(pid)) == owner


def _running_uids() -> set[int]:
    """The real and effective uids of every process (from /proc/PID/status: the owner of
    /proc/PID is root for a while after a process changed its uid). Plain ``open``: this runs
    under the host-wide lock at every sandbox's start."""
    out: set[int] = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as status:
                for line in status:
                    if line.startswith(b"Uid:"):
                        out.update(int(word) for word in line.split()[1:3])
                        break
        except (OSError, ValueError):
            continue
    return out
