"""Search bots think in worker processes of their own, never in the process that hosts them.

A search (``mcts``, ``alphabeta``) holds a core for its whole budget and pauses the garbage
collector while it runs. Inside the process that hosts the bots — the server's event loop
for the lobby's built-in bots, or one ``ziggurat bot NAME --remote`` process that a
tournament hands many seats — it would stall the loop, make every other seat's search queue
behind it (their clocks running), and switch the collector off for the whole server. So,
as lichess sends engine work to its fishnet workers, the host keeps only the bookkeeping and
each search runs in a worker process whose only job is searching:

* A :class:`SearchPool` holds up to ``max_workers`` worker processes, forked from a
  forkserver that has loaded the bots and their tables once
  (:mod:`ziggurat.bots.worker_preload`): nothing is forked from the (threaded) host.
* :meth:`SearchPool.open` gives one seat of one game a :class:`PooledBot`, a *session*:
  the bot object (its seed, its random generator, its transposition table) is built in
  one worker and lives there until the session is released, so its moves are the ones
  the same bot would play in-process: an iteration-limited search replays from its seed.
* A new session goes to an idle worker, else to a new worker while there are fewer than
  ``max_workers``, else to the worker with the fewest sessions — only then can two
  searches queue for one worker. A host sized with one worker per seat it plays at once
  never queues; the cores are shared by the operating system instead.
* The clock is the turn's: a bot's deadline counts from ``Turn.received`` (when the seat
  learnt of the turn), so time spent queueing or waiting for a core is off its budget
  and a search never answers later than it would have in-process.
* The collector is paused around a search only in the worker (:func:`_choose`).
* A safety net: if the worker has not answered when half of the turn's time (after a
  100 ms network margin) is gone — its process was still starting, or the machine is
  so loaded that it got no core — the host answers a random legal move itself (seeded by
  the bot's seed) and logs a warning, rather than lose the game on time. A search's own
  budget is at most a quarter of that time, so on a working host this never happens.
* Released sessions are dropped from their worker; idle workers beyond ``keep_idle``
  exit, and every worker exits within a second of its host's death (kill -9 included).
  A worker that dies (killed, out of memory) fails the move it was thinking about — the
  host resigns that seat as for any bot failure — and is never used again.

``greedy`` and ``random`` decide in microseconds to milliseconds and stay in-process.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import logging
import multiprocessing
import os
import random
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.context import BaseContext
from typing import Any

from ziggurat.bots.common import gc_paused
from ziggurat_client.bot import Turn

log = logging.getLogger("ziggurat.bots.workers")

FALLBACK_SHARE = 0.5
"""Share of the turn's time (after the margin) the host waits for its worker before it answers
a random legal move itself."""
FALLBACK_MARGIN_MS = 100

SEARCH_BOTS = frozenset({"mcts", "alphabeta"})
"""The built-in bots that search for their whole budget, hence think in worker processes."""

PRELOAD = "ziggurat.bots.worker_preload"

# ------------------------------------------------------------------ inside a worker process

_sessions: dict[int, Any] = {}
"""In a worker: the bots it holds, by session number."""


HOST_CHECK_SECONDS = 1.0


def _watch_host(host: int) -> None:
    """Worker initialiser: exit when the host process is gone.

    A pool worker holds both ends of its own task pipe, so it never sees an end of file when
    its host dies without shutting it down (kill -9, a crash); and a forkserver lives as long as
    any of its children. Without this watch they would outlive the host for good.
    """

    def watch() -> None:
        while True:
            time.sleep(HOST_CHECK_SECONDS)
            try:
                os.kill(host, 0)
            except ProcessLookupError:
                os._exit(0)
            except PermissionError:  # pragma: no cover - a pid reused by another user's process
                os._exit(0)

    threading.Thread(target=watch, name="host-watch", daemon=True).start()


def _worker_pid() -> int:
    """A worker's answer to "are you up": its process id."""
    return os.getpid()


def _open(session: int, name: str, options: dict[str, Any]) -> None:
    """Build the session's bot in this worker (``make_bot`` raises for a bad name or option)."""
    from ziggurat.bots import make_bot

    _sessions[session] = make_bot(name, **options)


def _choose(session: int, turn: Turn) -> str:
    """One search, with the collector paused: this process does nothing else meanwhile."""
    bot = _sessions[session]
    with gc_paused():
        move = bot.choose(turn)
    if not isinstance(move, str):
        raise TypeError(f"the built-in bot {bot.name} returned {type(move).__name__}, not a move")
    return move


def _close(session: int) -> None:
    """Forget a session's bot (its tree and table are freed with it)."""
    _sessions.pop(session, None)


# ------------------------------------------------------------------------- in the host


def _context() -> BaseContext:
    """Forkserver where the platform has it (every worker a fork of a clean, preloaded
    process, never of the threaded host); spawn elsewhere."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([PRELOAD])
        return context
    return multiprocessing.get_context("spawn")


async def _off_loop(start: Callable[[], int]) -> int:
    """``start()`` in a daemon thread of its own. Not ``asyncio.to_thread``: a worker process
    starting on a loaded host takes seconds, and ``asyncio.run`` waits for the default
    executor's threads when it ends, so a server stopped meanwhile took that long to exit
    (17 s at load 30) after its "stopped" line."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[int] = loop.create_future()

    def settle(result: int | None, error: BaseException | None) -> None:
        if answer.done():
            return
        if error is not None:
            answer.set_exception(error)
        else:
            answer.set_result(result or 0)

    def run() -> None:
        try:
            result = start()
        except BaseException as error:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(settle, None, error)
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, result, None)

    threading.Thread(target=run, name="search worker start", daemon=True).start()
    return await answer


class WorkerDied(RuntimeError):
    """The worker process of a bot exited (killed, out of memory) while it held the bot."""


class _Worker:
    """One worker process (a one-process executor: its searches run one after another)."""

    def __init__(self, context: BaseContext) -> None:
        self.executor = ProcessPoolExecutor(
            max_workers=1, mp_context=context, initializer=_watch_host, initargs=(os.getpid(),)
        )
        self.sessions: set[int] = set()
        self.broken = False
        self.pid: int | None = None
        self._lock = threading.Lock()

    def start(self) -> int:
        """Start the process if it is not running yet (blocking: called off the event loop)."""
        with self._lock:
            if self.pid is None:
                self.pid = self.executor.submit(_worker_pid).result()
            return self.pid

    def submit(self, fn: Any, *args: Any) -> Future[Any]:
        """Queue ``fn(*args)`` in the worker (raises WorkerDied if it is gone)."""
        try:
            return self.executor.submit(fn, *args)
        except (BrokenProcessPool, RuntimeError) as error:
            self.broken = True
            raise WorkerDied(f"the search worker is gone ({error})") from error

    def stop(self) -> None:
        """Let the process exit once its current search (bounded by its deadline) ends.

        From a daemon thread: ``shutdown`` takes the executor's lock, which a ``submit`` holds
        while the forkserver starts the process, seconds on a loaded host; called on the event
        loop, it froze the whole server's shutdown that long (17 s at load 30)."""
        threading.Thread(
            target=self.executor.shutdown,
            kwargs={"wait": False, "cancel_futures": True},
            name="search worker stop",
            daemon=True,
        ).start()


class SearchPool:
    """Worker processes for the search bots of one host; see the module docstring.

    ``max_workers`` is how many searches can run at once without queueing: give it the
    number of seats the host plays at once. ``keep_idle`` workers (default: all) stay
    up with no session, ready for the next game.
    """

    def __init__(self, max_workers: int, *, keep_idle: int | None = None) -> None:
        if max_workers < 1:
            raise ValueError("a search pool needs at least one worker")
        self.max_workers = max_workers
        self.keep_idle = max_workers if keep_idle is None else keep_idle
        self._context = _context()
        self._workers: list[_Worker] = []
        self._numbers = itertools.count(1)
        self._released: collections.deque[tuple[_Worker, int]] = collections.deque()
        self._closed = False
        self.fallbacks = 0  # moves its bots' hosts answered themselves (a worker too late)

    @property
    def workers(self) -> int:
        """Worker processes held now (started or about to be)."""
        self._settle()
        return len(self._workers)

    def pids(self) -> list[int]:
        """Process ids of the started workers (for tests and operators)."""
        return [w.pid for w in self._workers if w.pid is not None and not w.broken]

    async def warm(self, count: int | None = None) -> None:
        """Start ``count`` workers (default ``max_workers``) now and wait until they answer,
        so that no first move pays for a process start."""
        self._settle()
        wanted = min(self.max_workers, self.max_workers if count is None else count)
        while len(self._workers) < wanted:
            self._workers.append(_Worker(self._context))
        await asyncio.gather(*(_off_loop(w.start) for w in self._workers if not w.broken))

    def open(self, name: str, options: dict[str, Any] | None = None) -> PooledBot:
        """A session for one seat: the built-in bot ``name`` built with ``options`` in a worker."""
        if self._closed:
            raise RuntimeError("the search pool is closed")
        self._settle()
        worker = self._place()
        session = next(self._numbers)
        worker.sessions.add(session)
        return PooledBot(self, worker, session, name=name, options=dict(options or {}))

    def _place(self) -> _Worker:
        live = [w for w in self._workers if not w.broken]
        self._workers = live
        for worker in live:
            if not worker.sessions:
                return worker
        if len(live) < self.max_workers:
            worker = _Worker(self._context)
            self._workers.append(worker)
            return worker
        return min(live, key=lambda w: len(w.sessions))

    def _release(self, worker: _Worker, session: int) -> None:
        """A session is over. Called from a finaliser, which may run at any point (even inside
        an executor call of this thread), so it only queues the release for :meth:`_settle`."""
        self._released.append((worker, session))

    def _settle(self) -> None:
        """Apply the queued releases: drop the bots from their workers, let surplus idle
        workers exit."""
        while self._released:
            worker, session = self._released.popleft()
            worker.sessions.discard(session)
            if not self._closed and not worker.broken and worker.pid is not None:
                with contextlib.suppress(WorkerDied):
                    worker.submit(_close, session)
        idle = [w for w in self._workers if not w.sessions and not w.broken]
        for worker in idle[self.keep_idle :]:
            worker.stop()
            self._workers.remove(worker)

    async def close(self) -> None:
        """Stop every worker (each exits once its current search ends)."""
        self._closed = True
        for worker in self._workers:
            worker.stop()
        self._workers.clear()


def _forget(searching: asyncio.Future[str]) -> None:
    """A search answered too late: its move is dropped (and its failure, if any, was logged)."""
    if not searching.cancelled() and searching.exception() is not None:
        log.info("a search answered too late failed too: %s", searching.exception())


class PooledBot:
    """A built-in search bot whose every move is searched in a worker process of its pool.

    It is a :class:`~ziggurat_client.bot.Bot` with an asynchronous ``choose``: the host's
    event loop only waits. Its session is released by :meth:`close` or, at the latest,
    when the object is garbage-collected (the seat runner that held it is gone).
    """

    def __init__(
        self, pool: SearchPool, worker: _Worker, session: int, *, name: str, options: dict[str, Any]
    ) -> None:
        self.name = name
        self._pool = pool
        self._worker = worker
        self._session = session
        self._options = options
        self._opened: Future[None] | None = None
        seed = options.get("seed")
        self._fallback = random.Random(seed if isinstance(seed, int) else None)
        self.fallbacks = 0  # moves the host answered itself (the worker was too late)
        self._release = weakref.finalize(self, pool._release, worker, session)

    @property
    def pid(self) -> int | None:
        """The worker process that holds this bot (None until it has started)."""
        return self._worker.pid

    async def start(self) -> None:
        """Build the bot in its worker (starting the worker if need be); raises what the
        bot's constructor raised. ``choose`` calls it; call it earlier to pay for it before
        the first turn."""
        self._pool._settle()
        if self._opened is None:
            await _off_loop(self._worker.start)
            if self._opened is None:
                self._opened = self._worker.submit(_open, self._session, self.name, self._options)
        await self._wait(self._opened)

    def prepare(self) -> None:
        """Start :meth:`start` in the background (a failure shows again on the first move)."""
        starting = asyncio.ensure_future(self.start())
        starting.add_done_callback(lambda done: done.cancelled() or done.exception())

    async def choose(self, turn: Turn) -> str:
        """The bot's move for ``turn``, searched in its worker within the turn's budget (or, if
        the worker is too late for the clock, a random legal move: see the module docstring)."""
        searching = asyncio.ensure_future(self._search(turn))
        if not turn.time_left_ms:
            return await searching
        usable = max(0, turn.time_left_ms - FALLBACK_MARGIN_MS) / 1000
        wait = turn.received + usable * FALLBACK_SHARE - time.monotonic()
        try:
            return await asyncio.wait_for(asyncio.shield(searching), max(0.0, wait))
        except TimeoutError:
            searching.add_done_callback(_forget)
            self.fallbacks += 1
            self._pool.fallbacks += 1
            log.warning(
                "%s: no move from its search worker %.0f ms into the turn (ply %d): a random legal move",
                self.name,
                1000 * turn.seconds_since_received(),
                turn.ply,
            )
            return turn.legal_moves[self._fallback.randrange(len(turn.legal_moves))]

    async def _search(self, turn: Turn) -> str:
        await self.start()
        move: str = await self._wait(self._worker.submit(_choose, self._session, turn))
        return move

    async def _wait(self, future: Future[Any]) -> Any:
        try:
            return await asyncio.wrap_future(future)
        except BrokenProcessPool as error:
            self._worker.broken = True
            raise WorkerDied(f"the search worker of {self.name} exited ({error})") from None

    def close(self) -> None:
        """Release the session now (its bot is dropped from the worker)."""
        self._release()
