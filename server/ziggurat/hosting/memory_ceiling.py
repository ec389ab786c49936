"""A ceiling on the bytes the server holds: past it, new calls are shed with a clear status.

The per-client caps (calls, connections, matches per address) bound what one client can make
the server hold, and ``--max-streams`` / ``--max-web-connections`` what all of them can in
count; but what a call holds varies (a request body, a stream's buffers, a match's log), so
the host's memory could still run out before any count does, and then the kernel's OOM
killer ends every match at once. The server therefore watches its own resident memory
(sampled every :data:`SAMPLE_EVERY_S`) against ``--max-memory-percent`` of the memory it may
use (the machine's, or its cgroup's limit when lower): at or over it, the guard refuses every
new call with RESOURCE_EXHAUSTED, ``SERVER_BUSY`` (calls already open go on, and so do the
matches), until the resident memory is back under the ceiling.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path

from ziggurat.hosting.memory import rss_bytes

log = logging.getLogger("ziggurat.limits")

SAMPLE_EVERY_S = 0.5
CGROUP_LIMIT = Path("/sys/fs/cgroup/memory.max")  # cgroup v2
MEMINFO = Path("/proc/meminfo")


def usable_memory_bytes() -> int:
    """The memory this process may use: the machine's, or its cgroup's limit if lower (0: unknown)."""
    total = 0
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in MEMINFO.read_text().splitlines():
            if line.startswith("MemTotal:"):
                total = int(line.split()[1]) * 1024
    with contextlib.suppress(OSError, ValueError):
        text = CGROUP_LIMIT.read_text().strip()
        if text != "max":
            limit = int(text)
            total = min(total, limit) if total else limit
    return total


class MemoryCeiling:
    """Samples the resident memory; :attr:`over` is True while it is at or over :attr:`limit`."""

    def __init__(self, percent: float) -> None:
        """``percent`` of :func:`usable_memory_bytes` (0: no ceiling, :attr:`over` stays False)."""
        usable = usable_memory_bytes()
        self.limit = int(usable * percent / 100) if percent > 0 and usable else 0
        self.over = False
        self._task: asyncio.Task[None] | None = None
        self._logged = 0.0

    def start(self) -> None:
        """Begin sampling (a task on the running loop); nothing to do without a ceiling or /proc."""
        if self.limit and rss_bytes() > 0 and self._task is None:
            self._task = asyncio.create_task(self._run(), name="memory-ceiling")

    async def stop(self) -> None:
        """Stop sampling."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    def sample(self) -> bool:
        """Read the resident memory now; returns (and keeps in :attr:`over`) whether it is at the ceiling."""
        rss = rss_bytes()
        over = bool(self.limit) and rss >= self.limit
        if over and (not self.over or time.monotonic() - self._logged >= 10.0):
            self._logged = time.monotonic()
            log.warning(
                "resident memory %.0f MiB is at the ceiling of %.0f MiB (--max-memory-percent): "
                "new calls are refused (SERVER_BUSY) until it falls",
                rss / 2**20,
                self.limit / 2**20,
            )
        elif self.over and not over:
            log.warning("resident memory %.0f MiB is under the ceiling again: calls admitted", rss / 2**20)
        self.over = over
        return over

    async def _run(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(SAMPLE_EVERY_S)
