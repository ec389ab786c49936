"""One live match: authoritative state, append-only event log, seats, clocks, subscribers.

Concurrency model: every method that changes a match is synchronous and runs on
the event loop thread, so a change (validate → apply → commit to the database →
append to the log → wake subscribers) is atomic without a lock, and the order of
the log is the order of commits. Subscribers do not get a queue of their own:
each one keeps a cursor into the shared, append-only log and sleeps on a
per-match "something changed" future. A slow subscriber therefore costs no memory
and never blocks anyone; it simply catches up from its cursor (the same code path
as a client resuming after seq N).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import random
import secrets
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from ziggurat.rules.core import Outcome, RulesError, Termination
from ziggurat.rules.registry import AnyRules, get_rules
from ziggurat.rules.seeding import seat_order
from ziggurat.service.timecontrol import TimeControl
from ziggurat.store.sqlite import Store, StoredEvent, StoredMatch
from ziggurat.wire import errors

MAX_NAME = 64
MAX_MOVE_TEXT = 64


def hash_token(token: str) -> str:
    """Tokens are stored and compared only as SHA-256 hex digests."""
    return hashlib.sha256(token.encode()).hexdigest()


@dataclass(slots=True)
class LogEntry:
    """One event of the log. ``data`` is the authoritative (unredacted) payload; it is
    only ever turned into bytes for a client by :mod:`ziggurat.service.render`, through
    the per-seat view of ``state``, the game state just after this event.
    """

    seq: int
    time_ms: int
    kind: str
    data: dict[str, Any]
    state: Any
    # Serialized renderings by audience, kept only for the newest commit (fan-out).
    cache: dict[int | None, bytes] | None = None


class Subscriber:
    """One open stream of a match: who it is for, and a wake-up when something happens.

    ``outbox`` carries stream-specific messages (a refused move on a Play stream)
    that the stream's single writer sends with the next batch of events.
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

    def wake(self) -> None:
        """Wake the stream's writer; harmless when it is not waiting."""
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
        if not self._future.done():
            self._future.set_result(None)


@dataclass(slots=True)
class SeatInfo:
    """What the server knows of a seat (the token only as a hash)."""

    name: str = ""
    token_hash: str = ""
    state: str = "open"
    clock_ms: int = 0
    connections: int = 0
    disconnected_at: float | None = None


@dataclass(slots=True)
class _Turn:
    """The running turn: whose, since when (monotonic seconds), how long it may last."""

    seat: int
    ply: int
    started: float
    time_left_ms: int
    timer: asyncio.TimerHandle | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Match:
    """A match from creation to the reveal. Build with :meth:`create` or :meth:`restore`."""

    def __init__(self, stored: StoredMatch, store: Store, *, log_events: Callable[[str], None]) -> None:
        self.match_id = stored.match_id
        self.created_ms = stored.created_ms
        self.game = stored.game
        self.seat_count = stored.seats
        self.options = dict(stored.options)
        self.time_control = TimeControl.from_dict(stored.time_control)
        self.seat_assignment = stored.seat_assignment
        self.commitment = stored.commitment
        self.status = "waiting"
        self.rules: AnyRules = get_rules(stored.game)
        self.config = self.rules.parse_config(stored.options, stored.seats)
        self._seed = stored.seed
        self._store = store
        self._log = log_events
        self.state: Any = self.rules.new_game(self.config, stored.seed)
        self.entries: list[LogEntry] = []
        self.seats = [SeatInfo(clock_ms=self.time_control.base_ms) for _ in range(stored.seats)]
        self.forfeited: set[int] = set()
        self.moves = 0  # plies played so far
        self.illegal_moves: dict[int, int] = {}  # refused moves by seat (counted with a conduct limit)
        self.ended_outcome: Outcome | None = None
        self._by_token: dict[str, int] = {}
        self._subscribers: list[Subscriber] = []
        self._recent: list[LogEntry] = []  # entries of the newest commit (their caches are kept)
        self._turn: _Turn | None = None
        self._rng = random.Random(secrets.randbits(64))
        self._order = seat_order(stored.seed, stored.seats)
        self._closed = False
        self.on_finished: Callable[[Match], None] | None = None

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
    ) -> Match:
        """A new match with open seats, persisted with its ``created`` event."""
        now = _now_ms()
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
            events=[StoredEvent(1, now, "created", {})],
        )
        match = cls(stored, store, log_events=log_events)
        store.create_match(stored)
        match.entries.append(LogEntry(1, now, "created", {}, match.state))
        match._log(f"match {match_id} created: {game} for {seats} seats, commitment {commitment[:16]}…")
        return match

    @classmethod
    def restore(cls, stored: StoredMatch, store: Store, *, log_events: Callable[[str], None]) -> Match:
        """Rebuild a match by replaying its event log through the rules (crash recovery)."""
        match = cls(stored, store, log_events=log_events)
        for seat, name, token_hash in stored.seat_rows:
            match.seats[seat].name = name
            match.seats[seat].token_hash = token_hash
            match.seats[seat].state = "joined"
            match._by_token[token_hash] = seat
        for event in stored.events:
            match._replay(event)
        if stored.status == "finished":
            match.status = "finished"
        elif match.status == "waiting" and all(s.token_hash for s in match.seats):
            match._commit(match._start_events())  # crashed between the last join and the start
        elif match.status == "active" and match._turn is None:
            match._commit(match._advance_events(match.state, match.moves))
        if match.status == "active" and match._turn is not None:
            match._arm_timer()
        return match

    def _replay(self, event: StoredEvent) -> None:
        data = event.data
        if event.kind == "move":
            self.state = self.rules.apply(self.state, data["move"])
            self.moves += 1
            self._turn = None
        elif event.kind == "forfeit":
            self.forfeited.add(data["seat"])
            self.seats[data["seat"]].state = _FORFEIT_STATES[data["termination"]]
            self.state = self.rules.forfeit(self.state, data["seat"], Termination(data["termination"]))
        elif event.kind == "started":
            self.status = "active"
        elif event.kind == "turn":
            for seat, clock in enumerate(data["clocks"]):
                self.seats[seat].clock_ms = clock
            self._turn = _Turn(data["seat"], data["ply"], time.monotonic(), data["time_left_ms"])
        elif event.kind == "ended":
            self.status = "finished"
            self.ended_outcome = Outcome(Termination(data["termination"]), tuple(data["ranks"]))
            self._turn = None
        elif event.kind == "seat" and data["state"] not in ("connected", "disconnected"):
            self.seats[data["seat"]].state = data["state"]
        self.entries.append(LogEntry(event.seq, event.time_ms, event.kind, data, self.state))

    # ------------------------------------------------------------------ queries

    @property
    def last_seq(self) -> int:
        """Sequence number of the newest event."""
        return len(self.entries)

    @property
    def revealed_seed(self) -> bytes | None:
        """The secret seed, but only once the match is finished."""
        return self._seed if self.status == "finished" else None

    def outcome(self) -> Outcome | None:
        """The match's outcome once over (an aborted match included)."""
        return self.ended_outcome

    def seat_for_token(self, token: str | None) -> int:
        """The seat a token belongs to in this match; raise the right ApiError otherwise."""
        if not token:
            raise errors.unauthenticated(
                "MISSING_TOKEN", "this call needs a seat token (authorization: Bearer …)"
            )
        digest = hash_token(token)
        for known, seat in self._by_token.items():
            if hmac.compare_digest(known, digest):
                return seat
        raise errors.permission_denied("BAD_TOKEN", "the token is not a seat token of this match")

    def viewer_for_token(self, token: str | None) -> int | None:
        """The seat of a token, or None (spectator) when no token is given."""
        return None if not token else self.seat_for_token(token)

    # ------------------------------------------------------------------ actions

    def join(self, name: str, requested_seat: int | None) -> tuple[str, int]:
        """Take a seat: returns (token, 0-based seat). Starts the match when it is full."""
        name = name.strip() or "anonymous"
        if len(name) > MAX_NAME or not name.isprintable():
            raise errors.invalid("BAD_NAME", f"player_name must be at most {MAX_NAME} printable characters")
        if self.status != "waiting":
            raise errors.precondition("MATCH_FULL", "every seat of this match is taken")
        free = [s for s, info in enumerate(self.seats) if not info.token_hash]
        if self.seat_assignment == "lot":
            if requested_seat is not None:
                raise errors.invalid("SEAT_BY_LOT", "seats of this match are drawn by lot; do not name one")
            seat = self._order[self.seat_count - len(free)]
        elif requested_seat is None:
            seat = free[0]
        elif not 0 <= requested_seat < self.seat_count:
            raise errors.invalid("BAD_SEAT", f"seat must be between 1 and {self.seat_count}")
        elif requested_seat not in free:
            raise errors.precondition("SEAT_TAKEN", f"seat {requested_seat + 1} is taken")
        else:
            seat = requested_seat
        token = secrets.token_urlsafe(32)
        info = self.seats[seat]
        info.name, info.token_hash, info.state = name, hash_token(token), "joined"
        pending = [("seat", {"seat": seat, "name": name, "state": "joined"}, self.state)]
        full = len(free) == 1
        if full:
            pending += self._start_events()
        try:
            self._commit(pending, join=(seat, name, info.token_hash))
        except Exception:
            info.name, info.token_hash, info.state = "", "", "open"
            raise
        self._by_token[info.token_hash] = seat
        return token, seat

    def submit(self, seat: int, move: str, ply_guard: int | None = None) -> LogEntry:
        """Play ``move`` for ``seat``; returns the ``move`` log entry. Refusals change nothing."""
        if len(move) > MAX_MOVE_TEXT:
            raise errors.invalid("MALFORMED_MOVE", f"a move is at most {MAX_MOVE_TEXT} characters")
        self._require_active()
        turn = self._turn
        if turn is None or turn.seat != seat:
            raise errors.precondition("NOT_YOUR_TURN", f"it is not seat {seat + 1}'s turn")
        if ply_guard is not None and ply_guard != turn.ply:
            raise errors.precondition(
                "STALE_PLY", f"the move was meant for ply {ply_guard}; it is ply {turn.ply}"
            )
        if seat in self.forfeited:
            raise errors.precondition("SEAT_FORFEITED", "this seat has forfeited; the server plays for it")
        try:
            new_state = self.rules.apply(self.state, move)
            canonical = self.rules.canonical_move(self.state, move)
        except RulesError as error:
            refusal = errors.from_rules_error(error)
            self._count_illegal(seat, refusal)
            raise refusal from None
        elapsed = self._elapsed_ms(turn)
        if turn.time_left_ms and elapsed > turn.time_left_ms:
            self._expire(turn.ply)
            raise errors.precondition("TIME_EXPIRED", "the move came after this seat's time ran out")
        self._charge_clock(seat, elapsed)
        pending = [("move", {"seat": seat, "move": canonical, "substituted": False}, new_state)]
        entries = self._commit(pending + self._advance_events(new_state, turn.ply + 1))
        return entries[0]

    def _count_illegal(self, seat: int, refusal: errors.ApiError) -> None:
        """Apply the match's conduct limit: past ``max_illegal_moves`` refusals the seat forfeits."""
        limit = self.time_control.max_illegal_moves
        if not limit:
            return
        self.illegal_moves[seat] = self.illegal_moves.get(seat, 0) + 1
        if self.illegal_moves[seat] > limit:
            self._commit(self._forfeit_events(seat, Termination.ILLEGAL_MOVE))
            refusal.message += f" (limit of {limit} illegal moves exceeded: the seat forfeits)"

    def abort(self) -> LogEntry:
        """End a match that must not count (an organiser's decision): nobody wins, the seed is revealed."""
        if self.status == "finished":
            raise errors.precondition("GAME_OVER", "the match is over")
        data = {"termination": Termination.ABORTED.value, "ranks": [1] * self.seat_count}
        if self.status == "waiting":
            self.status = "active"  # so that the end is recorded like any other
        return self._commit([("ended", data, self.state)])[0]

    def resign(self, seat: int) -> LogEntry:
        """``seat`` gives up: Pylos ends; in Kabaleo it ranks last and the server plays for it."""
        self._require_active()
        if seat in self.forfeited:
            raise errors.precondition("SEAT_FORFEITED", "this seat has already forfeited")
        entries = self._commit(self._forfeit_events(seat, Termination.RESIGNATION))
        return entries[0]

    def connect(self, seat: int) -> None:
        """A stream authenticated as ``seat`` opened (Play or WatchMatch)."""
        info = self.seats[seat]
        info.connections += 1
        if info.connections == 1 and self.status != "finished":
            info.disconnected_at = None
            self._commit([("seat", {"seat": seat, "name": info.name, "state": "connected"}, self.state)])
            if self._turn is not None and self._turn.seat == seat:
                self._arm_timer()

    def disconnect(self, seat: int) -> None:
        """A stream of ``seat`` closed; the last one closing starts the disconnect grace."""
        info = self.seats[seat]
        info.connections -= 1
        if info.connections == 0 and self.status != "finished":
            info.disconnected_at = time.monotonic()
            self._commit([("seat", {"seat": seat, "name": info.name, "state": "disconnected"}, self.state)])
            if self._turn is not None and self._turn.seat == seat:
                self._arm_timer()

    def subscribe(self, after_seq: int, seat: int | None) -> Subscriber:
        """Open a stream cursor after ``after_seq`` (checked here, before anything is sent)."""
        if not 0 <= after_seq <= self.last_seq:
            raise errors.ApiError(
                grpc.StatusCode.OUT_OF_RANGE, "BAD_SEQ", f"after_seq must be between 0 and {self.last_seq}"
            )
        subscriber = Subscriber(seat, after_seq)
        self._subscribers.append(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        """Forget a closed stream."""
        if subscriber in self._subscribers:
            self._subscribers.remove(subscriber)

    async def batches(self, subscriber: Subscriber) -> AsyncIterator[tuple[list[LogEntry], list[Any]]]:
        """(new entries, outbox items) for ``subscriber`` as they happen, until the end.

        Entries committed together arrive together. A subscriber that falls behind
        simply gets a bigger batch next time: nothing is queued per subscriber.
        """
        while True:
            entries = self.entries[subscriber.cursor :]
            extras, subscriber.outbox = subscriber.outbox, []
            if entries or extras:
                subscriber.cursor = len(self.entries)
                yield entries, extras
                continue
            if self.status == "finished" or self._closed:
                return
            await subscriber.wait()

    def follow(self, after_seq: int) -> AsyncIterator[LogEntry]:
        """Entries with seq > ``after_seq`` one by one, until the end (checked eagerly)."""
        subscriber = self.subscribe(after_seq, None)
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
        self._closed = True
        for subscriber in self._subscribers:
            subscriber.wake()
        if self._turn is not None and self._turn.timer is not None:
            self._turn.timer.cancel()

    # ----------------------------------------------------------------- internals

    def _require_active(self) -> None:
        if self.status == "waiting":
            raise errors.precondition("NOT_STARTED", "the match has not started: seats are still open")
        if self.status == "finished":
            raise errors.precondition("GAME_OVER", "the match is over")

    def _start_events(self) -> list[tuple[str, dict[str, Any], Any]]:
        names = [info.name for info in self.seats]
        return [("started", {"names": names}, self.state), *self._advance_events(self.state, self.moves)]

    def _advance_events(self, state: Any, ply: int) -> list[tuple[str, dict[str, Any], Any]]:
        """After a change to ``state`` (at ``ply``): the end, or random moves for forfeited
        seats, then the next turn.
        """
        out: list[tuple[str, dict[str, Any], Any]] = []
        while True:
            outcome = self.rules.outcome(state)
            if outcome is not None:
                data = {"termination": outcome.termination.value, "ranks": list(outcome.ranks)}
                out.append(("ended", data, state))
                return out
            seat = self.rules.to_move(state)
            assert seat is not None
            if seat not in self.forfeited:
                break
            move = self.rules.random_move(state, self._rng)
            state = self.rules.apply(state, move)
            ply += 1
            out.append(("move", {"seat": seat, "move": move, "substituted": True}, state))
        out.append(("turn", self._turn_data(seat, ply), state))
        return out

    def _turn_data(self, seat: int, ply: int) -> dict[str, Any]:
        tc = self.time_control
        # An empty Fischer clock is still a limit: 0 would mean "untimed" on the wire, and a
        # seat that ran out under random_move (no increment) would stall the match forever.
        clock = max(1, self.seats[seat].clock_ms) if tc.base_ms else 0
        limits = [limit for limit in (tc.per_move_ms, clock) if limit]
        return {
            "seat": seat,
            "ply": ply,
            "time_left_ms": min(limits) if limits else 0,
            "clocks": [info.clock_ms for info in self.seats],
        }

    def _forfeit_events(self, seat: int, termination: Termination) -> list[Any]:
        self.forfeited.add(seat)
        state = self.rules.forfeit(self.state, seat, termination)
        pending: list[Any] = [("forfeit", {"seat": seat, "termination": termination.value}, state)]
        if self.rules.outcome(state) is not None or (self._turn is not None and self._turn.seat == seat):
            pending += self._advance_events(state, self.moves)
        return pending

    def _commit(
        self,
        pending: list[tuple[str, dict[str, Any], Any]],
        *,
        join: tuple[int, str, str] | None = None,
    ) -> list[LogEntry]:
        """Persist ``pending`` in one transaction, then apply it in memory and wake subscribers."""
        now = _now_ms()
        seq = self.last_seq
        entries = [
            LogEntry(seq + i + 1, now, kind, data, state) for i, (kind, data, state) in enumerate(pending)
        ]
        stored = [StoredEvent(e.seq, e.time_ms, e.kind, e.data) for e in entries]
        kinds = {e.kind for e in entries}
        status = "finished" if "ended" in kinds else "active" if "started" in kinds else None
        if join is not None:
            self._store.add_seat(self.match_id, join[0], join[1], join[2], stored, status=status)
        else:
            self._store.append(
                self.match_id, stored, status=status, ended_ms=now if status == "finished" else None
            )
        # Durable: now change memory and tell the world.
        for entry in self._recent:
            entry.cache = None
        self._recent = entries
        for entry in entries:
            self.entries.append(entry)
            self.state = entry.state
            self._on_entry(entry)
        self._wake()
        return entries

    def _on_entry(self, entry: LogEntry) -> None:
        data = entry.data
        kind = entry.kind
        if kind == "started":
            self.status = "active"
            self._log(f"match {self.match_id} started: {', '.join(data['names'])}")
        elif kind == "turn":
            self._set_turn(_Turn(data["seat"], data["ply"], time.monotonic(), data["time_left_ms"]))
        elif kind == "move":
            self.moves += 1
            self._clear_turn()
            note = " (substituted)" if data["substituted"] else ""
            self._log(f"match {self.match_id} seat {data['seat'] + 1} played {data['move']}{note}")
        elif kind == "ended":
            self.status = "finished"
            self.ended_outcome = Outcome(Termination(data["termination"]), tuple(data["ranks"]))
            self._clear_turn()
            if self.on_finished is not None:
                self.on_finished(self)
            self._log(
                f"match {self.match_id} ended: {data['termination']}, ranks {data['ranks']}; seed revealed"
            )
        elif kind == "seat":
            if data["state"] not in ("connected", "disconnected"):
                self.seats[data["seat"]].state = data["state"]
            self._log(f"match {self.match_id} seat {data['seat'] + 1} {data['state']}")
        elif kind == "forfeit":
            self.seats[data["seat"]].state = _FORFEIT_STATES[data["termination"]]
            self._log(f"match {self.match_id} seat {data['seat'] + 1} forfeited ({data['termination']})")

    def _wake(self) -> None:
        """Wake every stream, the seat to move first so that its turn reaches it soonest."""
        to_move = self._turn.seat if self._turn is not None else None
        for subscriber in self._subscribers:
            if subscriber.seat == to_move and to_move is not None:
                subscriber.wake()
        for subscriber in self._subscribers:
            if subscriber.seat != to_move or to_move is None:
                subscriber.wake()

    # -------------------------------------------------------------------- clocks

    def _set_turn(self, turn: _Turn) -> None:
        self._clear_turn()
        self._turn = turn
        self._arm_timer()

    def _clear_turn(self) -> None:
        if self._turn is not None and self._turn.timer is not None:
            self._turn.timer.cancel()
        self._turn = None

    def _elapsed_ms(self, turn: _Turn) -> int:
        return int((time.monotonic() - turn.started) * 1000)

    def _charge_clock(self, seat: int, elapsed_ms: int) -> None:
        tc = self.time_control
        if tc.base_ms:
            info = self.seats[seat]
            info.clock_ms = max(0, info.clock_ms - elapsed_ms) + tc.increment_ms

    def _arm_timer(self) -> None:
        """(Re)schedule the expiry of the running turn: its time limit, or the disconnect grace."""
        turn = self._turn
        if turn is None:
            return
        if turn.timer is not None:
            turn.timer.cancel()
            turn.timer = None
        if self.status != "active" or self._closed:
            return  # closed: the streams ending at shutdown must not start a grace timer
        now = time.monotonic()
        deadlines = []
        if turn.time_left_ms:
            deadlines.append(turn.started + turn.time_left_ms / 1000)
        info = self.seats[turn.seat]
        grace = self.time_control.disconnect_grace_ms
        if grace and info.connections == 0 and info.disconnected_at is not None:
            deadlines.append(max(info.disconnected_at, turn.started) + grace / 1000)
        if deadlines:
            delay = max(0.0, min(deadlines) - now)
            turn.timer = asyncio.get_running_loop().call_later(delay, self._expire, turn.ply)

    def _expire(self, ply: int) -> None:
        """The running turn's time is up: apply the match's timeout policy."""
        turn = self._turn
        if turn is None or turn.ply != ply or self.status != "active" or self._closed:
            return
        seat = turn.seat
        info = self.seats[seat]
        if self.time_control.base_ms:
            info.clock_ms = max(0, info.clock_ms - self._elapsed_ms(turn))
        if self.time_control.on_timeout == "random_move":
            move = self.rules.random_move(self.state, self._rng)
            state = self.rules.apply(self.state, move)
            self._charge_clock(seat, 0)
            pending: list[Any] = [
                ("seat", {"seat": seat, "name": info.name, "state": "substituted"}, self.state),
                ("move", {"seat": seat, "move": move, "substituted": True}, state),
                *self._advance_events(state, turn.ply + 1),
            ]
            self._commit(pending)
        else:
            self._commit(self._forfeit_events(seat, Termination.TIMEOUT))


_FORFEIT_STATES = {
    Termination.RESIGNATION.value: "resigned",
    Termination.TIMEOUT.value: "timed_out",
    Termination.ILLEGAL_MOVE.value: "resigned",
}


def _now_ms() -> int:
    return int(time.time() * 1000)
