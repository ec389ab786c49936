"""Give freed memory back to the OS after a burst of connections (glibc malloc only).

Why: thousands of connections and streams opened and dropped leave freed memory scattered
over glibc's malloc arenas (the event loop's, and one per gRPC C-core thread). glibc gives a
free page back to the OS only when it lies at the top of a heap, so after the burst the
process keeps most of its peak RSS although nothing uses it. ``malloc_trim(0)`` walks every
arena and releases the free pages inside it too (measured with benchmarks/idle_soak.py:
171 -> 117 MB in 24 ms after a burst of 2,000 silent streams).

The trimmer calls it on a worker thread once a burst is over: when RSS has grown by
``growth`` since the last trim, or the open calls have fallen to half their peak (at least
``burst_calls`` of them), or malloc's free bytes have risen by ``free_floor`` (or ``free_share``
of RSS, if more) above their lowest since the last trim; and RSS then has not grown for
``settle`` seconds; at most once per ``min_interval`` seconds. A server whose memory is
really in use (live matches) trims rarely and frees little. On other C libraries (musl,
macOS) it does nothing.

Why the free bytes: the first two tests count calls, but a burst of connections that make
no call (idle TCP connections: gRPC core's buffers, half of the idle soak's load) changes
no call count, and if it lasts past one trim (RSS grew, settled: a trim at its plateau
frees nothing and resets the level to the plateau), neither test fires again when it
ends. What malloc holds free rises however the memory was freed.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import logging
import time
from collections.abc import Callable

log = logging.getLogger("ziggurat.memory")
PAGE = 4096


def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
    except OSError:
        return None
    function = getattr(libc, "malloc_trim", None)  # glibc only
    if function is None:
        return None
    function.argtypes = [ctypes.c_size_t]
    function.restype = ctypes.c_int
    return function  # type: ignore[no-any-return]


_MALLOC_TRIM = _malloc_trim()


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _mallinfo2() -> Callable[[], _MallInfo2] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        function = getattr(ctypes.CDLL(name), "mallinfo2", None)  # glibc 2.33 or later
    except OSError:
        return None
    if function is None:
        return None
    function.argtypes = []
    function.restype = _MallInfo2
    return function  # type: ignore[no-any-return]


_MALLINFO2 = _mallinfo2()


def malloc_free_bytes() -> int:
    """Bytes glibc's malloc holds free in all its arenas (0 where it cannot say)."""
    if _MALLINFO2 is None:
        return 0
    info = _MALLINFO2()
    return int(info.fordblks + info.fsmblks)


def trim() -> bool:
    """``malloc_trim(0)``: True when memory was given back to the OS."""
    return _MALLOC_TRIM is not None and bool(_MALLOC_TRIM(0))


def rss_bytes() -> int:
    """The resident set size of this process (0 where /proc is not there)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return 0


class Trimmer:
    """Watches RSS and the open calls (``open_calls()``), trims after bursts (see the module)."""

    def __init__(
        self,
        open_calls: Callable[[], int],
        *,
        check_every: float = 1.0,
        settle: float = 3.0,
        min_interval: float = 10.0,
        growth: float = 0.05,
        burst_calls: int = 200,
        free_floor: int = 8 << 20,
        free_share: float = 0.05,
    ) -> None:
        self.open_calls = open_calls
        self.check_every = check_every
        self.settle = settle
        self.min_interval = min_interval
        self.growth = growth
        self.burst_calls = burst_calls
        self.free_floor = free_floor
        self.free_share = free_share
        self.trims = 0
        self._task: asyncio.Task[None] | None = None

    @property
    def available(self) -> bool:
        """False where there is no malloc_trim or no /proc (the trimmer then never runs)."""
        return _MALLOC_TRIM is not None and rss_bytes() > 0

    def start(self) -> None:
        """Begin watching (a task on the running loop)."""
        if self.available and self._task is None:
            self._task = asyncio.create_task(self._run(), name="malloc-trim")

    async def stop(self) -> None:
        """Stop watching."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        level = high = rss_bytes()  # RSS after the last trim, and the highest since
        high_at = last = time.monotonic()
        peak_calls = self.open_calls()
        free_low = malloc_free_bytes()  # the least malloc held free since the last trim
        while True:
            await asyncio.sleep(self.check_every)
            now = time.monotonic()
            rss, calls, free = rss_bytes(), self.open_calls(), malloc_free_bytes()
            peak_calls = max(peak_calls, calls)
            free_low = min(free_low, free)
            if rss > high:
                high, high_at = rss, now
            grew = high >= level * (1 + self.growth)
            burst_over = peak_calls >= self.burst_calls and calls <= peak_calls // 2
            freed = free - free_low >= max(self.free_floor, self.free_share * rss)
            settled = now - high_at >= self.settle and now - last >= self.min_interval
            if not (grew or burst_over or freed) or not settled:
                continue
            started = time.perf_counter()
            await asyncio.to_thread(trim)
            self.trims += 1
            last = time.monotonic()
            level = high = rss_bytes()
            high_at, peak_calls, free_low = last, self.open_calls(), malloc_free_bytes()
            log.debug(
                "malloc_trim: RSS %.1f -> %.1f MB in %.1f ms",
                rss / 2**20,
                level / 2**20,
                (time.perf_counter() - started) * 1000,
            )
