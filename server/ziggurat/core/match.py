"""One live match: its log, its subscribers, its timers, around a pure decide/evolve core.

A change goes one way only: :func:`~ziggurat.core.decide.decide` turns a command
into events (and the state they lead to), the store commits them in one transaction,
and only then does the match adopt the new state, append to its in-memory log and
wake its subscribers. A failed commit changes nothing in memory: the caller gets
``UNAVAILABLE`` (``STORE_UNAVAILABLE``), and a change the server owes the match
(a timeout, a start, presence to record) is retried with backoff until the store
takes it. Restore replays the stored log through the same
:func:`~ziggurat.core.evolve.evolve`.

Concurrency model: every method that changes a match is synchronous and runs on the
event loop thread, so decide → commit → adopt is atomic without a lock and the order
of the log is the order of commits. Subscribers do not get a queue of their own: each
keeps a cursor into the shared, append-only log and sleeps on a per-match "something
changed" future; a slow subscriber costs no memory and simply catches up from its
cursor (the same code path as a client resuming after seq N).

Connection state (which seats have a stream open) is not match state: it is kept
here, shown live by GetMatch, and recorded in the log only within a per-turn budget
(see :data:`~ziggurat.core.decide.PRESENCE_EVENTS_PER_TURN`).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import random
import secrets
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import grpc

from ziggurat.core.decide import (
    MAX_MOVE_TEXT,
    MAX_NAME,
    Abort,
    Begin,
    Claim,
    Command,
    Context,
    Decision,
    Expire,
    Join,
    Move,
    Resign,
    Reveal,
    Settle,
    decide,
    seat_state,
)
from ziggurat.core.events import (
    Created,
    Ended,
    Event,
    Forfeited,
    MovePlayed,
    PresenceChanged,
    SeatJoined,
    Started,
    Strike,
    Substituted,
    TurnStarted,
    encode,
    from_stored,
)
from ziggurat.core.evolve import MatchState, Settings, evolve, initial_state
from ziggurat.core.group_commit import GroupCommit
from ziggurat.core.timecontrol import TimeControl
from ziggurat.core.tokens import new_token
from ziggurat.rules.core import Outcome
from ziggurat.rules.registry import AnyRules, get_rules
from ziggurat.rules.seeding import seat_order
from ziggurat.store.sqlite import EventRow, Store, StoredEvent, StoredMatch, StoreUnavailableError, Write
from ziggurat.wire import errors
from ziggurat.wire.reasons import Reason

__all__ = [
    "MAX_MOVE_TEXT",
    "MAX_NAME",
    "LogEntry",
    "Match",
    "StreamLimits",
    "Subscriber",
    "hash_token",
    "seat_by_token",
]

log = logging.getLogger("ziggurat.match")

STORE_UNAVAILABLE = Reason.STORE_UNAVAILABLE.name
RETRY_FIRST_S = 0.05
RETRY_MAX_S = 2.0


def hash_token(token: str) -> str:
    """Tokens are stored and compared only as SHA-256 hex digests."""
    return hashlib.sha256(token.encode()).hexdigest()


def seat_by_token(seats: dict[str, int], token: str) -> int:
    """The seat whose token hash (a key of ``seats``) is that of ``token``; BAD_TOKEN otherwise.

    Shared by live matches and the finished-match cache (manager.py), so that both answer a
    token alike; every known hash is compared in constant time.
    """
    digest = hash_token(token)
    for known, seat in seats.items():
        if hmac.compare_digest(known, digest):
            return seat
    raise errors.permission_denied("BAD_TOKEN", "the token is not a seat token of this match")


def store_unavailable(error: StoreUnavailableError) -> errors.ApiError:
    """The refusal for a change the store did not take (nothing changed; retry later)."""
    return errors.refuse(
        Reason.STORE_UNAVAILABLE,
        f"the match store refused the write ({error.code}); nothing changed, retry later",
    )


@dataclass(frozen=True, slots=True)
class StreamLimits:
    """How many streams (Play and WatchMatch) may be open at once on one match, and per seat."""

    per_match: int = 2000
    per_seat: int = 8


@dataclass(slots=True)
class LogEntry:
    """One event of the log with the rules' state just after it (rendered per audience by
    :mod:`ziggurat.core.render`, through the view of ``game``).
    """

    seq: int
    time_ms: int
    event: Event
    game: Any
    # Serialized renderings by audience, kept only for the newest commit (fan-out).
    cache: dict[int | None, bytes] | None = None
    # The whole response from this entry to the end of the log by audience, likewise kept
    # only for the newest commit: every stream that is up to date sends the same bytes.
    frames: dict[int | None, bytes] | None = None


class Subscriber:
    """One open stream of a match: who it is for, and a wake-up when something happens.

    ``outbox`` carries stream-specific messages (a refused move on a Play stream, or an
    error that ends the stream) that the stream's single writer sends after its events.
    """

    __slots__ = ("_future", "cursor", "outbox", "seat")

    def __init__(self, seat: int | None, cursor: int) -> None:
        self.seat = seat
        self.cursor = cursor  # number of log entries already sent
        self.outbox: list[Any] = []
        self._future: asyncio.Future[None] | None = None

    async def wait(self) -> None:
        """Sleep until :meth:`wake` (returns at once if woken since the last wait)."""
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
        try:
            await self._future
        finally:
            self._future = None

    async def wait_at_most(self, seconds: float | None) -> bool:
        """:meth:`wait`, for at most ``seconds`` (None: no limit); True when the time ran out.

        A timer that wakes the writer, not ``asyncio.wait_for``: no task per wait on the
        path every event of every stream takes."""
        if seconds is None:
            await self.wait()
            return False
        rang = False

        def ring() -> None:
            nonlocal rang
            rang = True
            self.wake()

        timer = asyncio.get_running_loop().call_later(seconds, ring)
        try:
            await self.wait()
        finally:
            timer.cancel()
        return rang

    def wake(self) -> None:
        """Wake the stream's writer; harmless when it is not waiting."""
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
        if not self._future.done():
            self._future.set_result(None)


@dataclass(frozen=True, slots=True)
class SeatView:
    """A seat as GetMatch shows it."""

    name: str
    state: str
    clock_ms: int


class Match:
    """A match from creation to the reveal. Build with :meth:`create` or :meth:`restore`."""

    def __init__(
        self,
        stored: StoredMatch,
        store: Store,
        *,
        log_events: Callable[[str], None],
        limits: StreamLimits | None = None,
    ) -> None:
        self.match_id = stored.match_id
        self.created_ms = stored.created_ms
        self.game = stored.game
        self.seat_count = stored.seats
        self.options = dict(stored.options)
        self.time_control = TimeControl.from_dict(stored.time_control)
        self.seat_assignment = stored.seat_assignment
        self.commitment = stored.commitment
        self.rules: AnyRules = get_rules(stored.game)
        self.config = self.rules.parse_config(stored.options, stored.seats)
        self.settings = Settings(
            match_id=stored.match_id,
            game=stored.game,
            rules=self.rules,
            config=self.config,
            seat_count=stored.seats,
            time_control=self.time_control,
            seat_assignment=stored.seat_assignment,
            order=tuple(seat_order(stored.seed, stored.seats)),
        )
        self.limits = limits or StreamLimits()
        # How long a seat must be away before another may claim the match (ClaimAbandoned);
        # 0 = claims off. Set by the manager, from the server's --claim-after and the match's
        # time control: a server setting, not match state, so not in the log.
        self.claim_after_ms = 0
        self.current: MatchState = initial_state(self.settings, stored.seed)
        self.entries: list[LogEntry] = []
        self.on_finished: Callable[[Match], None] | None = None
        self._seed = stored.seed
        self._store = store
        self._log = log_events
        self._by_token: dict[str, int] = {}
        self._subscribers: list[Subscriber] = []
        self._recent: list[LogEntry] = []  # entries of the newest commit (their caches are kept)
        self._rng = random.Random(secrets.randbits(64))
        self._closed = False
        # Transport state, not in the log: open streams per seat, and since when a seat has none.
        self._connections = [0] * stored.seats
        self._gone_since: list[float | None] = [None] * stored.seats
        # Since when a joined seat that has never had a stream open has been waited for (its
        # join, or the restart): its disconnect grace counts from then, so that a seat that is
        # joined and never connects cannot hold an untimed match for ever.
        self._joined_since: list[float | None] = [None] * stored.seats
        # The same moments on the wall clock (ms since the epoch, 0: none), for Seat.away_since_ms:
        # a fixed value, so that GetMatch answers the same while nothing changes.
        self._away_wall_ms: list[int] = [0] * stored.seats
        self._turn_started = time.monotonic()
        self._timer: asyncio.TimerHandle | None = None
        self._retry: asyncio.TimerHandle | None = None
        self._retry_delay = 0.0
        self._dirty = False  # a commit failed: check the store before the next change
        self._finishing = False  # the decision being adopted ends the match
        # Moves decided and waiting in a group commit (see play()); None when not grouped.
        self.group: GroupCommit | None = None
        self.pending = False  # a decision of this match waits in the group's next commit

    # ----------------------------------------------------------------- creation

    @classmethod
    def create(
        cls,
        store: Store,
        *,
        match_id: str,
        game: str,
        seats: int,
        options: dict[str, str],
        time_control: TimeControl,
        seat_assignment: str,
        seed: bytes,
        commitment: str,
        log_events: Callable[[str], None],
        limits: StreamLimits | None = None,
        held: bool = False,
        end_held: bool = False,
    ) -> Match:
        """A new match with open seats, persisted with its ``created`` event (``held``: it starts
        on :meth:`begin`, not on the last join; ``end_held``: it ends on :meth:`reveal`)."""
        now = _now_ms()
        created = Created(held, end_held)
        stored = StoredMatch(
            match_id=match_id,
            created_ms=now,
            game=game,
            seats=seats,
            options=options,
            time_control=dict(time_control.to_dict()),
            seat_assignment=seat_assignment,
            seed=seed,
            commitment=commitment,
            status="waiting",
            ended_ms=None,
            seat_rows=[],
            events=[StoredEvent(1, now, created.kind, created.data())],
        )
        match = cls(stored, store, log_events=log_events, limits=limits)
        try:
            store.create_match(stored)
        except StoreUnavailableError as error:
            raise store_unavailable(error) from None
        match.current = evolve(match.rules, match.current, created)  # after the commit above
        match.entries.append(LogEntry(1, now, created, match.current.game))
        match._log(f"match {match_id} created: {game} for {seats} seats, commitment {commitment[:16]}…")
        return match

    @classmethod
    def restore(
        cls,
        stored: StoredMatch,
        store: Store,
        *,
        log_events: Callable[[str], None],
        limits: StreamLimits | None = None,
    ) -> Match:
        """Rebuild a match by replaying its event log through ``evolve`` (crash recovery).

        Every seat that the log shows connected counts as disconnected from now on (no
        stream survived the restart), so its disconnect grace runs again; whatever the
        server owes the match (a start, a turn, presence to record) is done at once, or
        retried with backoff while the store refuses it.
        """
        match = cls(stored, store, log_events=log_events, limits=limits)
        match.current, match.entries = match._replay(stored)
        match._by_token = {
            record.token_hash: s for s, record in enumerate(match.current.seats) if record.token_hash
        }
        now = time.monotonic()
        since = match._logged_absences()
        for seat, record in enumerate(match.current.seats):
            if record.presence:
                match._gone_since[seat] = now
                # Away since its recorded departure; since now if the log last saw it connected.
                gone = since.get(seat, 0) if record.presence == "disconnected" else 0
                match._away_wall_ms[seat] = gone or _now_ms()
            elif record.standing != "open":
                match._joined_since[seat] = now
                match._away_wall_ms[seat] = since.get(seat, 0) or _now_ms()  # since it joined
        if match.current.status != "finished":
            match._drive()
        return match

    def _logged_absences(self) -> dict[int, int]:
        """Per seat, when the log last saw it go (joined without a stream, or disconnected):
        the wall-clock times Seat.away_since_ms keeps across a restart (0: it came back since)."""
        since: dict[int, int] = {}
        for entry in self.entries:
            event = entry.event
            if isinstance(event, SeatJoined):
                since[event.seat] = entry.time_ms
            elif isinstance(event, PresenceChanged):
                since[event.seat] = 0 if event.connected else entry.time_ms
        return since

    def _replay(self, stored: StoredMatch) -> tuple[MatchState, list[LogEntry]]:
        """The state and log a stored match holds (the same ``evolve`` as live play)."""
        tokens = {seat: token_hash for seat, _, token_hash in stored.seat_rows}
        state = initial_state(self.settings, self._seed)
        entries: list[LogEntry] = []
        for row in stored.events:
            event = from_stored(row.kind, row.data, self.seat_count)
            if isinstance(event, SeatJoined):
                event = replace(event, token_hash=tokens.get(event.seat, ""))
            state = evolve(self.rules, state, event)
            entries.append(LogEntry(row.seq, row.time_ms, event, state.game))
        for seat, count in sorted(stored.strikes.items()):
            state = evolve(self.rules, state, Strike(seat, count))
        return state, entries

    # ------------------------------------------------------------------ queries

    @property
    def status(self) -> str:
        """``waiting``, ``active`` or ``finished``."""
        return self.current.status

    @property
    def state(self) -> Any:
        """The rules' state now (authoritative: only ever sent through a view)."""
        return self.current.game

    @property
    def forfeited(self) -> frozenset[int]:
        """Seats that are out of the game."""
        return self.current.forfeited

    @property
    def moves(self) -> int:
        """Plies played so far."""
        return self.current.plies

    @property
    def last_seq(self) -> int:
        """Sequence number of the newest event."""
        return len(self.entries)

    @property
    def released(self) -> bool:
        """The match has ended and published its end: views may show the outcome and every
        secret. A decided game whose end is held (:attr:`decided`) is not released."""
        return self.current.status == "finished"

    @property
    def revealed_seed(self) -> bytes | None:
        """The secret seed, but only once the match is finished."""
        return self._seed if self.current.status == "finished" else None

    def outcome(self) -> Outcome | None:
        """The match's outcome once over (an aborted match included)."""
        return self.current.outcome

    @property
    def names(self) -> tuple[str, ...]:
        """Every seat's player name ("" while open)."""
        return tuple(record.name for record in self.current.seats)

    def presence(self, seat: int) -> str:
        """The live connection state of ``seat``: connected, disconnected, or "" (never)."""
        if self._connections[seat]:
            return "connected"
        return "" if self._gone_since[seat] is None else "disconnected"

    def seat_views(self) -> list[SeatView]:
        """Every seat as GetMatch shows it: final states once over, live presence before."""
        final = self.current.final_states if self.current.status == "finished" else ()
        return [
            SeatView(
                record.name,
                final[seat] if final else seat_state(record.standing, self.presence(seat)),
                record.clock_ms,
            )
            for seat, record in enumerate(self.current.seats)
        ]

    @property
    def token_seats(self) -> dict[str, int]:
        """Seat token hashes -> seat (a copy: the finished-match cache keeps it)."""
        return dict(self._by_token)

    def seat_for_token(self, token: str | None) -> int:
        """The seat a token belongs to in this match; raise the right ApiError otherwise."""
        if not token:
            raise errors.unauthenticated(
                "MISSING_TOKEN", "this call needs a seat token (authorization: Bearer …)"
            )
        return seat_by_token(self._by_token, token)

    def viewer_for_token(self, token: str | None) -> int | None:
        """The seat of a token, or None (spectator) when no token is given."""
        return None if not token else self.seat_for_token(token)

    # ------------------------------------------------------------------ actions

    def join(self, name: str, requested_seat: int | None, *, house_bot: str = "") -> tuple[str, int]:
        """Take a seat: returns (token, 0-based seat). Starts the match when it is full.

        ``house_bot`` records that the server's built-in bot of that name plays the seat.
        """
        token = new_token()
        decision = self._execute(Join(name, requested_seat, hash_token(token), house_bot))
        joined = next(e for e in decision.events if isinstance(e, SeatJoined))
        return token, joined.seat

    def submit(self, seat: int, move: str, ply_guard: int | None = None) -> LogEntry:
        """Play ``move`` for ``seat``; returns the ``move`` log entry. Refusals change nothing
        (but an illegal move counted against the conduct limit, or a move after the time
        ran out, is refused once that consequence is recorded).
        """
        first = self.last_seq
        self._execute(Move(seat, move, ply_guard))
        return self.entries[first]

    async def play(self, seat: int, move: str, ply_guard: int | None = None) -> LogEntry:
        """:meth:`submit`, with the write grouped with the moves of other matches that arrive
        in the same loop iteration (:mod:`~ziggurat.core.group_commit`): returns once the
        move is committed and told, or raises its refusal (STORE_UNAVAILABLE when the group's
        commit failed: then nothing changed). Without a group it is :meth:`submit`.
        """
        group = self.group
        if group is None:
            return self.submit(seat, move, ply_guard)
        if self.pending:
            group.flush()  # one waiting decision per match: decide on committed state
        if self._dirty:
            self._reload()
        first = self.last_seq
        decision = decide(self.settings, self.current, Move(seat, move, ply_guard), self._context())
        if decision.changes:
            now = _now_ms()
            await group.add(self, decision, now, self._write(decision, now))
        if decision.refusal is not None:
            raise decision.refusal
        return self.entries[first]

    def begin(self, opening: Sequence[str] = ()) -> None:
        """Start a held match now, after the ``opening`` moves (the organiser's seats are ready)."""
        self._execute(Begin(tuple(opening)))

    @property
    def decided(self) -> bool:
        """The game is over but its end is held: :meth:`reveal` ends the match."""
        return self.current.status == "active" and self.rules.outcome(self.current.game) is not None

    def reveal(self) -> None:
        """End a decided match whose end was held: outcome, seed and final views become visible."""
        self._execute(Reveal())

    def abort(self) -> LogEntry:
        """End a match that must not count (an organiser's decision): nobody wins, the seed is revealed."""
        self._execute(Abort())
        return self.entries[-1]

    def resign(self, seat: int) -> LogEntry:
        """``seat`` gives up: Pylos ends; in Kabaleo it ranks last and the server plays for it."""
        first = self.last_seq
        self._execute(Resign(seat))
        return self.entries[first]

    def away_ms(self, seat: int, now_ms: int | None = None) -> int:
        """How long ``seat`` has had no stream open (ms): since its last stream closed, or since
        it joined if none has opened since (across a restart, as the log recorded it). 0 while one
        is open, for a seat the server plays, once it has forfeited, and once the match is over."""
        since = self.away_since_ms(seat)
        return max(0, (_now_ms() if now_ms is None else now_ms) - since) if since else 0

    def away_since_ms(self, seat: int) -> int:
        """Since when (server wall clock, ms since the epoch) ``seat`` has had no stream open
        (Seat.away_since_ms); 0 whenever :meth:`away_ms` is 0 for want of an absence."""
        record = self.current.seats[seat]
        if self.current.status == "finished" or record.standing != "joined" or record.house_bot:
            return 0
        return 0 if self._connections[seat] else self._away_wall_ms[seat]

    def claim(self, seat: int) -> tuple[LogEntry, list[int]]:
        """``seat`` claims the match (ClaimAbandoned): every other seat away for at least
        :attr:`claim_after_ms` forfeits as abandoned. Returns the first event and those seats."""
        if not self.claim_after_ms:
            raise errors.refuse(
                Reason.CLAIMS_OFF,
                "this match cannot be claimed: absence is settled by its time control's disconnect "
                "grace, or by the competition's organiser",
            )
        now = _now_ms()
        away = {other: self.away_ms(other, now) for other in range(self.seat_count) if other != seat}
        claimable = tuple(other for other, ms in away.items() if ms >= self.claim_after_ms)
        if not claimable and self.current.status == "active" and not self.current.seats[seat].forfeited:
            waiting = {other: ms for other, ms in away.items() if ms > 0}
            if not waiting:
                raise errors.refuse(Reason.NOT_ABANDONED, "every other seat is still in the game")
            other, ms = max(waiting.items(), key=lambda item: item[1])
            remaining = self.claim_after_ms - ms
            raise errors.refuse(
                Reason.NOT_ABANDONED,
                f"seat {other + 1} has been away for {ms / 1000:.0f} s; it can be claimed after "
                f"{self.claim_after_ms / 1000:.0f} s (in {remaining / 1000:.0f} s)",
                metadata={"claimable_in_ms": str(remaining)},
            )
        first = self.last_seq
        self._execute(Claim(seat, claimable))
        forfeited = [other + 1 for other in claimable if self.current.seats[other].standing == "abandoned"]
        return self.entries[first], forfeited

    def connect(self, seat: int) -> None:
        """A stream authenticated as ``seat`` opened (Play or WatchMatch)."""
        self._connections[seat] += 1
        if self._connections[seat] == 1:
            self._gone_since[seat] = None
            self._away_wall_ms[seat] = 0
            self._drive()

    def disconnect(self, seat: int) -> None:
        """A stream of ``seat`` closed (or stopped sending); the last one starts the disconnect grace."""
        self._connections[seat] -= 1
        if self._connections[seat] == 0:
            self._gone_since[seat] = time.monotonic()
            self._away_wall_ms[seat] = _now_ms()
            self._drive()

    def subscribe(self, after_seq: int, seat: int | None) -> Subscriber:
        """Open a stream cursor after ``after_seq`` (checked here, before anything is sent)."""
        if not 0 <= after_seq <= self.last_seq:
            raise errors.ApiError(
                grpc.StatusCode.OUT_OF_RANGE, "BAD_SEQ", f"after_seq must be between 0 and {self.last_seq}"
            )
        if len(self._subscribers) >= self.limits.per_match:
            raise errors.refuse(
                Reason.TOO_MANY_STREAMS,
                f"this match has {self.limits.per_match} open streams, the most it takes",
            )
        if seat is not None and sum(1 for s in self._subscribers if s.seat == seat) >= self.limits.per_seat:
            raise errors.refuse(
                Reason.TOO_MANY_STREAMS,
                f"this seat has {self.limits.per_seat} open streams, the most it may have",
            )
        subscriber = Subscriber(seat, after_seq)
        self._subscribers.append(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        """Forget a closed stream."""
        if subscriber in self._subscribers:
            self._subscribers.remove(subscriber)

    async def batches(
        self, subscriber: Subscriber, *, heartbeat: float | None = None
    ) -> AsyncIterator[tuple[list[LogEntry], list[Any]]]:
        """(new entries, outbox items) for ``subscriber`` as they happen, until the end.

        Entries committed together arrive together. A subscriber that falls behind
        simply gets a bigger batch next time: nothing is queued per subscriber (the
        servicer cuts a big batch into messages of bounded size). With ``heartbeat``
        (seconds), a wait with nothing new that long yields an empty batch: the stream's
        writer sends a message anyway, so its reader can tell a quiet match from a
        server that no longer answers.
        """
        quiet = False  # the last wait ran out with nothing new
        while True:
            entries = self.entries[subscriber.cursor :]
            extras, subscriber.outbox = subscriber.outbox, []
            if entries or extras:
                subscriber.cursor = len(self.entries)
                quiet = False
                yield entries, extras
                continue
            if self.current.status == "finished" or self._closed:
                return
            if quiet:
                yield [], []
            quiet = await subscriber.wait_at_most(heartbeat)

    def follow(self, after_seq: int) -> AsyncIterator[LogEntry]:
        """Entries with seq > ``after_seq`` one by one, until the end (checked eagerly)."""
        if not 0 <= after_seq <= self.last_seq:
            raise errors.ApiError(
                grpc.StatusCode.OUT_OF_RANGE, "BAD_SEQ", f"after_seq must be between 0 and {self.last_seq}"
            )
        subscriber = Subscriber(None, after_seq)  # in-process: not counted against stream limits
        self._subscribers.append(subscriber)
        return self._follow(subscriber)

    async def _follow(self, subscriber: Subscriber) -> AsyncIterator[LogEntry]:
        try:
            async for entries, _ in self.batches(subscriber):
                for entry in entries:
                    yield entry
        finally:
            self.unsubscribe(subscriber)

    def close(self) -> None:
        """Stop timers and end every follower (server shutdown); the log already holds everything."""
        if self.pending and self.group is not None:
            self.group.flush()
        self._closed = True
        for subscriber in self._subscribers:
            subscriber.wake()
        for handle in (self._timer, self._retry):
            if handle is not None:
                handle.cancel()
        self._timer = self._retry = None

    # ------------------------------------------------------------ the one path

    def _execute(self, command: Command) -> Decision:
        """Decide → commit → adopt; raises the refusal (after committing what it entails)."""
        if self.pending and self.group is not None:
            self.group.flush()  # a move of this match waits in the group: commit it first
        if self._dirty:
            self._reload()
        decision = decide(self.settings, self.current, command, self._context())
        if decision.changes:
            self._commit(decision)
        if decision.refusal is not None:
            raise decision.refusal
        return decision

    @property
    def turn_started(self) -> float:
        """``time.monotonic()`` when the running turn's clock started: its ``time_left_ms`` is as of
        then (the server's built-in bots count their thinking time from it)."""
        return self._turn_started

    def _context(self) -> Context:
        turn = self.current.turn
        elapsed = int((time.monotonic() - self._turn_started) * 1000) if turn is not None else 0
        presence = tuple(self.presence(seat) for seat in range(self.seat_count))
        return Context(elapsed, presence, self._rng)

    def _commit(self, decision: Decision) -> None:
        """Persist ``decision`` in one transaction, then adopt it and wake subscribers."""
        now = _now_ms()
        try:
            self._store.commit_group([self._write(decision, now)])
        except StoreUnavailableError as error:
            self._dirty = True  # the store says nothing was written; check before the next change
            raise store_unavailable(error) from None
        # Durable: now change memory and tell the world.
        self._adopt(decision, now)
        self._tell(decision)

    def _write(self, decision: Decision, now: int) -> Write:
        """What the store must write for ``decision`` (the events numbered after the log)."""
        seq = self.last_seq
        events = decision.events
        status = decision.state.status if decision.state.status != self.current.status else None
        joined = next((e for e in events if isinstance(e, SeatJoined)), None)
        return Write(
            self.match_id,
            [EventRow(seq + i + 1, now, event.kind, encode(event)) for i, event in enumerate(events)],
            status=status,
            ended_ms=now if status == "finished" else None,
            seat=None if joined is None else (joined.seat, joined.name, joined.token_hash),
            strikes=[(strike.seat, strike.count) for strike in decision.strikes],
        )

    def _adopt(self, decision: Decision, now: int) -> None:
        """Memory takes a committed decision: state, tokens, log (nothing is told yet)."""
        events = decision.events
        self._finishing = decision.state.status == "finished" and self.current.status != "finished"
        self.current = decision.state
        joined = next((e for e in events if isinstance(e, SeatJoined)), None)
        if joined is not None:
            self._by_token[joined.token_hash] = joined.seat
            self._joined_since[joined.seat] = time.monotonic()
        # Seat.away_since_ms is the log's time where the log has one (the same after a restart).
        for event in events:
            if not isinstance(event, (SeatJoined, PresenceChanged)) or self._connections[event.seat]:
                continue
            if isinstance(event, SeatJoined) or not event.connected:
                self._away_wall_ms[event.seat] = now
        if not events:
            return
        seq = self.last_seq
        for entry in self._recent:
            entry.cache = entry.frames = None
        entries = [
            LogEntry(seq + i + 1, now, event, game, {}, {})
            for i, (event, game) in enumerate(zip(events, decision.games, strict=True))
        ]
        self._recent = entries
        self.entries.extend(entries)
        if any(isinstance(event, TurnStarted) for event in events):
            self._turn_started = time.monotonic()

    def _tell(self, decision: Decision) -> None:
        """After :meth:`_adopt`: log lines, the turn's timer, the streams, the owner's hook."""
        if not decision.events:
            return
        for event in decision.events:
            self._announce(event)
        self._arm_timer()
        self._wake()
        if self._finishing and self.on_finished is not None:
            self._finishing = False
            try:
                self.on_finished(self)
            except Exception:  # the match is over and recorded whatever its owner's hook does
                log.exception("match %s: the on_finished hook failed", self.match_id)

    def _reload(self) -> None:
        """After a failed commit: make sure memory is what the log says, reloading if the
        store holds more than memory (a commit reported failed that was in fact written).
        """
        try:
            stored = self._store.load(self.match_id)
        except (StoreUnavailableError, sqlite3.Error) as error:
            failure = error if isinstance(error, StoreUnavailableError) else StoreUnavailableError(error)
            raise store_unavailable(failure) from None
        if stored is None:  # pragma: no cover - a match row is never deleted
            raise store_unavailable(StoreUnavailableError(sqlite3.DatabaseError("the match row is gone")))
        if len(stored.events) != self.last_seq or stored.strikes != self._strikes():
            state, entries = self._replay(stored)
            log.warning("match %s: reloaded from the log after a failed write", self.match_id)
            self.current = state
            missing = entries[self.last_seq :]
            if any(isinstance(entry.event, TurnStarted) for entry in missing):
                self._turn_started = time.monotonic()
            for entry in self._recent:  # no longer the newest: their frames end too early
                entry.cache = entry.frames = None
            self._recent = []
            self.entries.extend(missing)
            self._by_token = {r.token_hash: s for s, r in enumerate(state.seats) if r.token_hash}
            for entry in missing:
                if isinstance(entry.event, SeatJoined):
                    self._joined_since[entry.event.seat] = time.monotonic()
                    self._away_wall_ms[entry.event.seat] = _now_ms()
            self._wake()
        self._dirty = False

    def _strikes(self) -> dict[int, int]:
        return {s: record.strikes for s, record in enumerate(self.current.seats) if record.strikes}

    def _announce(self, event: Event) -> None:
        """One log line per event (public facts only); turns are not logged, and moves only at
        DEBUG: a record built for every ply cost a tenth of the server's time per ply (issue 12).
        """
        mid = self.match_id
        if isinstance(event, TurnStarted):
            return
        if isinstance(event, MovePlayed):
            if log.isEnabledFor(logging.DEBUG):
                note = " (substituted)" if event.substituted else ""
                log.debug("match %s seat %d played %s%s", mid, event.seat + 1, event.move, note)
        elif isinstance(event, Started):
            self._log(f"match {mid} started: {', '.join(event.names)}")
        elif isinstance(event, Ended):
            self._log(f"match {mid} ended: {event.termination}, ranks {list(event.ranks)}; seed revealed")
        elif isinstance(event, Forfeited):
            self._log(f"match {mid} seat {event.seat + 1} forfeited ({event.termination})")
        elif isinstance(event, SeatJoined):
            self._log(f"match {mid} seat {event.seat + 1} joined")
        elif isinstance(event, PresenceChanged):
            self._log(f"match {mid} seat {event.seat + 1} {event.state}")
        elif isinstance(event, Substituted):
            self._log(f"match {mid} seat {event.seat + 1} substituted")

    def _wake(self) -> None:
        """Wake every stream, the seat to move first so that its turn reaches it soonest."""
        turn = self.current.turn
        to_move = turn.seat if turn is not None else None
        if to_move is not None:
            for subscriber in self._subscribers:
                if subscriber.seat == to_move:
                    subscriber.wake()
        for subscriber in self._subscribers:
            if subscriber.seat != to_move or to_move is None:
                subscriber.wake()

    # ------------------------------------------------- server-driven changes

    def _drive(self) -> None:
        """Do what the server owes the match now (presence to record, a start or turn that
        is due, an expired turn); when the store refuses, retry with backoff.
        """
        if self._closed or self.current.status == "finished" or self._retry is not None:
            return
        try:
            self._execute(Settle())
            turn = self.current.turn
            if turn is not None and self._due():
                self._execute(Expire(turn.ply))
        except Exception as error:
            if not (isinstance(error, errors.ApiError) and error.reason == STORE_UNAVAILABLE) and (
                not self._retry_delay
            ):  # a bug, not the store: say so once per outage, and keep trying all the same
                log.exception("match %s: a change the server owes the match failed", self.match_id)
            self._retry_delay = min(RETRY_MAX_S, max(RETRY_FIRST_S, self._retry_delay * 2))
            self._retry = asyncio.get_running_loop().call_later(self._retry_delay, self._retry_now)
            return
        self._retry_delay = 0.0
        self._arm_timer()

    def _retry_now(self) -> None:
        self._retry = None
        self._drive()

    def _deadline(self) -> float | None:
        """When the running turn expires (monotonic seconds): its time limit or the grace (which a
        seat that never had a stream open runs from its join, or from the restart)."""
        turn = self.current.turn
        if turn is None or self.current.status != "active":
            return None
        deadlines: list[float] = []
        if turn.time_left_ms:
            deadlines.append(self._turn_started + turn.time_left_ms / 1000)
        grace = self.time_control.disconnect_grace_ms
        gone = self._gone_since[turn.seat]
        if gone is None:  # never connected: waited for since its join (or the restart)
            gone = self._joined_since[turn.seat]
        if grace and gone is not None and not self._connections[turn.seat]:
            deadlines.append(max(gone, self._turn_started) + grace / 1000)
        return min(deadlines) if deadlines else None

    def _due(self) -> bool:
        deadline = self._deadline()
        return deadline is not None and time.monotonic() >= deadline - 1e-6

    def _arm_timer(self) -> None:
        """(Re)schedule the expiry of the running turn: its time limit, or the disconnect grace."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._closed or self._retry is not None:
            return  # closed: the streams ending at shutdown must not start a grace timer
        deadline = self._deadline()
        if deadline is not None:
            delay = max(0.0, deadline - time.monotonic())
            self._timer = asyncio.get_running_loop().call_later(delay, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._drive()


def _now_ms() -> int:
    return int(time.time() * 1000)
