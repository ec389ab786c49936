"""``decide``: what a command does to a match, as events, without doing it.

:func:`decide` takes the match's state, a command and the facts of the moment that
are not in the log (how long the running turn has lasted, which seats have a stream
open, a random source) and returns a :class:`Decision`: the events to append, the
state they lead to (folded with :func:`~ziggurat.core.evolve.evolve`, the same
function a restore uses) and, for a command that is refused after all, the refusal.
A plain refusal is raised as an :class:`~ziggurat.wire.errors.ApiError` and decides
nothing. Nothing here touches the store, the clock or the match object: the caller
commits the events and only then adopts the new state.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from ziggurat.core.botnames import claims_house_bot
from ziggurat.core.events import (
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
)
from ziggurat.core.evolve import _UNSET, MatchState, Settings, evolve
from ziggurat.rules.core import RulesError, Termination
from ziggurat.wire import errors

MAX_NAME = 64
MAX_MOVE_TEXT = 64
# Presence (connected/disconnected) events recorded per seat and turn: a connection, then
# up to two drops and returns. Further changes show in the next TurnStarted's seat states
# and, live, in GetMatch: flapping connections cannot grow the log.
PRESENCE_EVENTS_PER_TURN = 4


@dataclass(frozen=True, slots=True)
class Join:
    """Take a seat (``seat`` None: the lot or the lowest free one)."""

    name: str
    seat: int | None
    token_hash: str
    house_bot: str = ""  # the built-in bot the server plays this seat with (AddBot)


@dataclass(frozen=True, slots=True)
class Move:
    """Play ``move`` for ``seat``; ``ply`` guards against a move meant for an earlier turn."""

    seat: int
    move: str
    ply: int | None = None


@dataclass(frozen=True, slots=True)
class Resign:
    """``seat`` gives up."""

    seat: int


@dataclass(frozen=True, slots=True)
class Claim:
    """``seat`` claims the match: each seat of ``away`` (away for the match's claim time, as
    the caller measured: a fact of the moment, not of the log) forfeits as abandoned."""

    seat: int
    away: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Abort:
    """End the match without a winner (an organiser's decision)."""


@dataclass(frozen=True, slots=True)
class Expire:
    """The turn of ply ``ply`` ran out of time or of disconnect grace."""

    ply: int


@dataclass(frozen=True, slots=True)
class Begin:
    """Start a held match (every seat taken), from its set-up position after the ``opening``
    moves, which are played in order by the seats to move as part of the start: no turn is
    offered for them, the first turn is that of the position after them.
    """

    opening: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Reveal:
    """End a match whose end is held (its game decided): its outcome and seed may be shown now."""


@dataclass(frozen=True, slots=True)
class Settle:
    """Whatever the server owes the match now: a start, a turn, presence to record."""


Command = Join | Move | Resign | Claim | Abort | Expire | Settle | Begin | Reveal


@dataclass(frozen=True, slots=True)
class Context:
    """Facts of the moment that are not in the log.

    ``presence`` is each seat's live connection state (``connected``, ``disconnected``,
    or ``""`` for a seat that has not connected); ``elapsed_ms`` the time the running
    turn has lasted.
    """

    elapsed_ms: int
    presence: tuple[str, ...]
    rng: random.Random


@dataclass(frozen=True, slots=True)
class Decision:
    """Events to commit (with the rules' state after each), the state they lead to, and a
    refusal to give the caller once they are committed (a counted illegal move, a late move).
    """

    state: MatchState
    events: tuple[Event, ...] = ()
    games: tuple[Any, ...] = ()
    strikes: tuple[Strike, ...] = ()
    refusal: errors.ApiError | None = None

    @property
    def changes(self) -> bool:
        """True when there is something to commit."""
        return bool(self.events or self.strikes)


@dataclass(slots=True)
class _Plan:
    """A decision being built: every event is folded into ``state`` as it is added."""

    settings: Settings
    state: MatchState
    context: Context
    events: list[Event] = field(default_factory=list)
    games: list[Any] = field(default_factory=list)
    strikes: list[Strike] = field(default_factory=list)

    def add(self, event: Event, game: Any = _UNSET) -> None:
        self.state = evolve(self.settings.rules, self.state, event, game)
        self.events.append(event)
        self.games.append(self.state.game)

    def strike(self, seat: int, count: int) -> None:
        strike = Strike(seat, count)
        self.state = evolve(self.settings.rules, self.state, strike)
        self.strikes.append(strike)

    def decision(self, refusal: errors.ApiError | None = None) -> Decision:
        return Decision(self.state, tuple(self.events), tuple(self.games), tuple(self.strikes), refusal)


def decide(settings: Settings, state: MatchState, command: Command, context: Context) -> Decision:
    """The decision on ``command``; raises :class:`~ziggurat.wire.errors.ApiError` to refuse it."""
    plan = _Plan(settings, state, context)
    if isinstance(command, Move):
        return _move(plan, command)
    if isinstance(command, Expire):
        turn = state.turn
        if state.status == "active" and turn is not None and turn.ply == command.ply:
            _expire(plan)
        return plan.decision()
    if isinstance(command, Settle):
        _settle(plan)
        return plan.decision()
    if isinstance(command, Join):
        _join(plan, command)
        return plan.decision()
    if isinstance(command, Resign):
        _require_active(state)
        _require_undecided(settings, state)
        if state.seats[command.seat].forfeited:
            raise errors.precondition("SEAT_FORFEITED", "this seat has already forfeited")
        _forfeit(plan, command.seat, Termination.RESIGNATION)
        return plan.decision()
    if isinstance(command, Claim):
        _claim(plan, command)
        return plan.decision()
    if isinstance(command, Begin):
        _begin(plan, command)
        return plan.decision()
    if isinstance(command, Reveal):
        outcome = settings.rules.outcome(state.game)
        if state.status != "active" or not state.end_held or outcome is None:
            raise ValueError("only a match whose game is decided and whose end is held can be revealed")
        plan.add(Ended(outcome.termination.value, tuple(outcome.ranks), _snapshot(plan)))
        return plan.decision()
    if isinstance(command, Abort):
        if state.status == "finished":
            raise errors.precondition("GAME_OVER", "the match is over")
        ranks = (1,) * settings.seat_count
        plan.add(Ended(Termination.ABORTED.value, ranks, _snapshot(plan)))
        return plan.decision()
    raise TypeError(f"not a command: {command!r}")  # pragma: no cover - the union above is exhaustive


def seat_state(record_standing: str, presence: str) -> str:
    """A seat's state from its standing and its live connection state (one vocabulary)."""
    if record_standing != "joined":
        return record_standing  # open, or a forfeit
    return presence or "joined"


# ------------------------------------------------------------------------ commands


def _join(plan: _Plan, command: Join) -> None:
    settings, state = plan.settings, plan.state
    name = command.name.strip()
    if not name or len(name) > MAX_NAME or not name.isprintable():
        raise errors.invalid("BAD_NAME", f"player_name must be 1 to {MAX_NAME} printable characters")
    if not command.house_bot and claims_house_bot(name):
        raise errors.invalid(
            "BAD_NAME", f"player_name {name!r} reads as 'NAME (bot)', the name of the server's own bots"
        )
    if state.status == "finished":
        # Cancelled or expired before it filled: seats may be open, but nobody can take them.
        raise errors.precondition("GAME_OVER", "the match is over: it can no longer be joined")
    if state.status != "waiting":
        raise errors.precondition("MATCH_FULL", "every seat of this match is taken")
    free = [s for s, record in enumerate(state.seats) if record.standing == "open"]
    requested = command.seat
    if settings.seat_assignment == "lot":
        if requested is not None:
            raise errors.invalid("SEAT_BY_LOT", "seats of this match are drawn by lot; do not name one")
        seat = settings.order[settings.seat_count - len(free)]
    elif requested is None:
        seat = free[0]
    elif not 0 <= requested < settings.seat_count:
        raise errors.invalid("BAD_SEAT", f"seat must be between 1 and {settings.seat_count}")
    elif requested not in free:
        raise errors.precondition("SEAT_TAKEN", f"seat {requested + 1} is taken")
    else:
        seat = requested
    plan.add(SeatJoined(seat, name, command.token_hash, command.house_bot))
    if len(free) == 1 and not state.held:
        _start(plan)


def _begin(plan: _Plan, command: Begin) -> None:
    """The organiser's start (in-process, no RPC: its mistakes are ValueErrors, not refusals)."""
    state, rules = plan.state, plan.settings.rules
    if state.status != "waiting" or not state.held:
        raise ValueError("only a held match that has not started can be begun")
    if any(record.standing == "open" for record in state.seats):
        raise ValueError("a held match begins once every seat is taken")
    names = tuple(record.name for record in state.seats)
    plan.add(Started(names, _snapshot(plan)))
    for move in command.opening:
        game = plan.state.game
        seat = rules.to_move(game)
        try:
            if seat is None or rules.outcome(game) is not None:
                raise RulesError("the game is over before this move")
            canonical = rules.canonical_move(game, move)
            after = rules.apply(game, move)
        except RulesError as error:
            raise ValueError(f"opening move {move!r}: {error}") from None
        plan.add(MovePlayed(seat, canonical, False), after)
    if rules.outcome(plan.state.game) is not None:
        raise ValueError("the game is over after the opening")
    _advance(plan)


def _move(plan: _Plan, command: Move) -> Decision:
    settings, state, seat = plan.settings, plan.state, command.seat
    if len(command.move) > MAX_MOVE_TEXT:
        refusal = errors.invalid("MALFORMED_MOVE", f"a move is at most {MAX_MOVE_TEXT} characters")
        turn = state.turn
        on_turn = state.status == "active" and turn is not None and turn.seat == seat
        if not on_turn or state.seats[seat].forfeited or not settings.time_control.max_illegal_moves:
            raise refusal
        return _strike(plan, seat, refusal)  # a malformed move counts like an illegal one
    _require_active(state)
    _require_undecided(settings, state)
    turn = state.turn
    if turn is None or turn.seat != seat:
        raise errors.precondition("NOT_YOUR_TURN", f"it is not seat {seat + 1}'s turn")
    if command.ply is not None and command.ply != turn.ply:
        raise errors.precondition(
            "STALE_PLY", f"the move was meant for ply {command.ply}; it is ply {turn.ply}"
        )
    if state.seats[seat].forfeited:
        raise errors.precondition("SEAT_FORFEITED", "this seat has forfeited; the server plays for it")
    rules = settings.rules
    try:
        after, canonical = rules.apply_canonical(state.game, command.move)
    except RulesError as error:
        refusal = errors.from_rules_error(error)
        if not settings.time_control.max_illegal_moves:
            raise refusal from None
        return _strike(plan, seat, refusal)
    elapsed = plan.context.elapsed_ms
    if turn.time_left_ms and elapsed > turn.time_left_ms:
        _expire(plan)
        return plan.decision(
            errors.precondition("TIME_EXPIRED", "the move came after this seat's time ran out")
        )
    tc = settings.time_control
    clock = max(0, state.seats[seat].clock_ms - elapsed) + tc.increment_ms if tc.base_ms else None
    plan.add(MovePlayed(seat, canonical, False, clock), after)
    _advance(plan)
    return plan.decision()


def _strike(plan: _Plan, seat: int, refusal: errors.ApiError) -> Decision:
    """Count a refused move (illegal or malformed) against the conduct limit; past it, the seat forfeits."""
    limit = plan.settings.time_control.max_illegal_moves
    count = plan.state.seats[seat].strikes + 1
    plan.strike(seat, count)
    if count > limit:
        _forfeit(plan, seat, Termination.ILLEGAL_MOVE)
        refusal.message += f" (limit of {limit} illegal moves exceeded: the seat forfeits)"
    return plan.decision(refusal)


def _settle(plan: _Plan) -> None:
    """Presence to record (within the per-turn budget), and a start or a turn that is due
    (a match restored from a log that a crash cut between a change and its consequences).
    """
    state = plan.state
    if state.status == "finished":
        return
    for seat, record in enumerate(state.seats):
        live = plan.context.presence[seat]
        if (
            record.standing == "joined"
            and live
            and live != record.presence
            and record.presence_events < PRESENCE_EVENTS_PER_TURN
        ):
            plan.add(PresenceChanged(seat, record.name, live == "connected"))
    state = plan.state
    if state.status == "waiting" and not state.held and all(r.standing != "open" for r in state.seats):
        _start(plan)
    elif state.status == "active" and state.turn is None:
        _advance(plan)


# ----------------------------------------------------------------------- internals


def _require_active(state: MatchState) -> None:
    if state.status == "waiting":
        raise errors.precondition("NOT_STARTED", "the match has not started: seats are still open")
    if state.status == "finished":
        raise errors.precondition("GAME_OVER", "the match is over")


def _require_undecided(settings: Settings, state: MatchState) -> None:
    """A match whose end is held stays active once its game is decided: nothing is left to play."""
    if state.end_held and settings.rules.outcome(state.game) is not None:
        raise errors.precondition(
            "GAME_OVER", "the game is over (its end is held until the organiser reveals it)"
        )


def _snapshot(plan: _Plan) -> tuple[str, ...]:
    """Every seat's state now, as events record it."""
    presence = plan.context.presence
    return tuple(seat_state(record.standing, presence[s]) for s, record in enumerate(plan.state.seats))


def _start(plan: _Plan) -> None:
    names = tuple(record.name for record in plan.state.seats)
    plan.add(Started(names, _snapshot(plan)))
    _advance(plan)


def _advance(plan: _Plan) -> None:
    """After a change: the end, or random moves for forfeited seats, then the next turn."""
    rules = plan.settings.rules
    while True:
        state = plan.state
        outcome = rules.outcome(state.game)
        if outcome is not None:
            if not state.end_held:  # else the organiser reveals it (Reveal)
                plan.add(Ended(outcome.termination.value, tuple(outcome.ranks), _snapshot(plan)))
            return
        seat = rules.to_move(state.game)
        assert seat is not None
        if not state.seats[seat].forfeited:
            break
        move = rules.random_move(state.game, plan.context.rng)
        plan.add(MovePlayed(seat, move, True), rules.apply(state.game, move))
    tc = plan.settings.time_control
    # An empty Fischer clock is still a limit: 0 would mean "untimed" on the wire, and a
    # seat that ran out under random_move (no increment) would stall the match forever.
    clock = max(1, state.seats[seat].clock_ms) if tc.base_ms else 0
    limits = [limit for limit in (tc.per_move_ms, clock) if limit]
    clocks = tuple(record.clock_ms for record in state.seats)
    plan.add(TurnStarted(seat, state.plies, min(limits) if limits else 0, clocks, _snapshot(plan)))


def _forfeit(
    plan: _Plan, seat: int, termination: Termination, clock_ms: int | None = None, cause: str = ""
) -> None:
    state = plan.state
    rules = plan.settings.rules
    after = rules.forfeit(state.game, seat, termination)
    was_to_move = state.turn is not None and state.turn.seat == seat
    plan.add(Forfeited(seat, termination.value, clock_ms, cause), after)
    if rules.outcome(after) is not None or was_to_move:
        _advance(plan)


def _claim(plan: _Plan, command: Claim) -> None:
    """Every seat of ``command.away`` forfeits as abandoned, until the game is decided (in
    Pylos the first does it; in Kabaleo the server plays their pieces, as after a resignation)."""
    settings, state = plan.settings, plan.state
    _require_active(state)
    _require_undecided(settings, state)
    if state.seats[command.seat].forfeited:
        raise errors.precondition("SEAT_FORFEITED", "this seat has already forfeited")
    for seat in command.away:
        if plan.state.status != "active" or settings.rules.outcome(plan.state.game) is not None:
            break
        if seat != command.seat and not plan.state.seats[seat].forfeited:
            _forfeit(plan, seat, Termination.ABANDONED, cause="disconnected")


def _expire(plan: _Plan) -> None:
    """The running turn is over: apply the match's timeout policy (a forfeit records whether
    the seat had no stream open then: ``cause`` "disconnected").
    """
    state = plan.state
    assert state.turn is not None
    seat = state.turn.seat
    tc = plan.settings.time_control
    clock = max(0, state.seats[seat].clock_ms - plan.context.elapsed_ms) if tc.base_ms else None
    if tc.on_timeout == "random_move":
        rules = plan.settings.rules
        move = rules.random_move(state.game, plan.context.rng)
        after = rules.apply(state.game, move)
        plan.add(Substituted(seat, state.seats[seat].name))
        plan.add(MovePlayed(seat, move, True, None if clock is None else clock + tc.increment_ms), after)
        _advance(plan)
    else:
        cause = "disconnected" if plan.context.presence[seat] == "disconnected" else ""
        _forfeit(plan, seat, Termination.TIMEOUT, clock, cause)
