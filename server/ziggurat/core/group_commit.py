"""Group commit: the moves of many matches that arrive in one event-loop iteration are
written in ONE SQLite transaction, and each mover is answered only after it.

A move played through :meth:`~ziggurat.core.match.Match.play` is decided at once
(against the match's committed state) and queued here with a future; the first move
queued schedules :meth:`GroupCommit.flush` for the next iteration of the loop (or after
``window_s``), so every move that comes in meanwhile joins the same transaction. Then:

* the transaction commits: every match adopts its decision, and only then are streams
  woken and movers answered (persist before notify, as for a single commit);
* it fails: nothing of any of them was written; every move in it is refused with
  ``STORE_UNAVAILABLE`` and no match's memory changes (each checks the store before its
  next change, as after any failed write).

A match has at most one decision waiting: any other change to it (a second move, a
join, a timeout, a connection) first flushes the group, so decisions are always taken
on committed state, in the order of the log. The saving is the per-transaction cost
(BEGIN IMMEDIATE, COMMIT and, with ``--durable``, the fsync) shared by every move of
the group.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ziggurat.store.sqlite import Store, StoreUnavailableError, Write

if TYPE_CHECKING:
    from ziggurat.core.decide import Decision
    from ziggurat.core.match import Match

log = logging.getLogger("ziggurat.match")


@dataclass(slots=True)
class _Queued:
    match: Match
    decision: Decision
    now: int
    write: Write
    done: asyncio.Future[None]


class GroupCommit:
    """The moves waiting for the next transaction of one store."""

    def __init__(self, store: Store, *, window_s: float = 0.0) -> None:
        self.store = store
        self.window_s = window_s
        self.groups = 0  # transactions committed (or attempted): for tests and benchmarks
        self.writes = 0  # decisions in them
        self._queue: list[_Queued] = []
        self._handle: asyncio.Handle | asyncio.TimerHandle | None = None

    @property
    def queued(self) -> int:
        """Decisions waiting for the next transaction."""
        return len(self._queue)

    def add(self, match: Match, decision: Decision, now: int, write: Write) -> asyncio.Future[None]:
        """Queue ``decision`` of ``match`` for the next transaction; the future is done once it
        is committed and adopted, or fails with the refusal for a failed commit.
        """
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._queue.append(_Queued(match, decision, now, write, done))
        match.pending = True
        if self._handle is None:
            if self.window_s > 0:
                self._handle = loop.call_later(self.window_s, self._scheduled)
            else:
                self._handle = loop.call_soon(self._scheduled)
        return done

    def _scheduled(self) -> None:
        self._handle = None
        self.flush()

    def flush(self) -> None:
        """Commit every queued decision now, in one transaction (nothing to do when none is)."""
        from ziggurat.core.match import store_unavailable

        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        queued, self._queue = self._queue, []
        if not queued:
            return
        self.groups += 1
        self.writes += len(queued)
        try:
            self.store.commit_group([item.write for item in queued])
        except StoreUnavailableError as error:
            for item in queued:
                item.match.pending = False
                item.match._dirty = True  # nothing was written: check the store before the next change
                if not item.done.done():
                    item.done.set_exception(store_unavailable(error))
            return
        # Durable: every match adopts its decision first (so that whatever is told next sees
        # them all), then streams, timers and hooks are told and the movers answered.
        for item in queued:
            item.match.pending = False
            item.match._adopt(item.decision, item.now)
        for item in queued:
            try:
                item.match._tell(item.decision)
            except Exception:  # pragma: no cover - telling is logging and waking; never fails a move
                log.exception("match %s: telling a committed move failed", item.match.match_id)
            if not item.done.done():
                item.done.set_result(None)
