"""A match's state and ``evolve``: the one function that applies an event to it.

The state is immutable: :func:`evolve` returns a new one, so a decision can be folded
ahead of its commit and simply dropped when the commit fails. Live play (through
:mod:`ziggurat.core.decide`) and restore (replaying the stored log) both go
through :func:`evolve`; nothing else changes a match's state.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from ziggurat.core.events import (
    FORFEIT_STATES,
    FORFEITED,
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
)
from ziggurat.core.timecontrol import TimeControl
from ziggurat.rules.core import Outcome, Termination
from ziggurat.rules.registry import AnyRules


@dataclass(frozen=True, slots=True)
class Settings:
    """What never changes after creation."""

    match_id: str
    game: str
    rules: AnyRules
    config: Any
    seat_count: int
    time_control: TimeControl
    seat_assignment: str  # "lot" or "chosen"
    order: tuple[int, ...]  # the lot: the k-th joiner gets seat order[k]


@dataclass(frozen=True, slots=True)
class SeatRecord:
    """One seat as the log says.

    ``standing`` is ``open``, ``joined`` or a forfeit state (``timed_out``, ``resigned``,
    ``illegal_moves``); ``presence`` is the connection state last recorded (``""`` when
    the seat has never been recorded connected) and ``presence_events`` how many presence
    events were recorded for it during the running turn.
    """

    name: str = ""
    token_hash: str = ""
    house_bot: str = ""  # a built-in bot's name when the server plays this seat (AddBot)
    standing: str = "open"
    presence: str = ""
    presence_events: int = 0
    clock_ms: int = 0
    strikes: int = 0

    @property
    def forfeited(self) -> bool:
        """True once the seat has resigned, timed out or exceeded the conduct limit."""
        return self.standing in FORFEITED


@dataclass(frozen=True, slots=True)
class Turn:
    """The running turn."""

    seat: int
    ply: int
    time_left_ms: int


@dataclass(frozen=True, slots=True)
class MatchState:
    """Everything the log says about a match at one point."""

    status: str  # waiting | active | finished
    game: Any  # the rules' state (authoritative, never sent as is)
    seats: tuple[SeatRecord, ...]
    plies: int = 0
    turn: Turn | None = None
    outcome: Outcome | None = None
    final_states: tuple[str, ...] = ()
    held: bool = False  # the start waits for the organiser (see events.Created)
    end_held: bool = False  # the end waits for the organiser (see events.Created)

    @property
    def forfeited(self) -> frozenset[int]:
        """Seats that are out of the game."""
        return frozenset(s for s, record in enumerate(self.seats) if record.forfeited)


_UNSET: Any = object()


def initial_state(settings: Settings, seed: bytes) -> MatchState:
    """The state before the ``created`` event: open seats, full clocks, the dealt set-up."""
    game = settings.rules.new_game(settings.config, seed)
    clock = settings.time_control.base_ms
    return MatchState("waiting", game, tuple(SeatRecord(clock_ms=clock) for _ in range(settings.seat_count)))


def evolve(rules: AnyRules, state: MatchState, event: Event | Strike, game: Any = _UNSET) -> MatchState:
    """The state after ``event``.

    ``game`` is the rules' state after a move or forfeit when the caller has computed it
    already (:mod:`~ziggurat.core.decide` must, to validate the move); it is
    computed from ``rules`` otherwise (restore).
    """
    # The two events of every ply build the new state directly (``replace`` costs more than
    # the rest of evolve together); a field added to MatchState must be added here too
    # (tests/core/test_decide_evolve.py checks that every other field is carried over).
    if isinstance(event, MovePlayed):
        after = rules.apply(state.game, event.move) if game is _UNSET else game
        seats = state.seats
        if event.clock_ms is not None:
            seats = _with(seats, event.seat, clock_ms=event.clock_ms)
        return MatchState(
            state.status,
            after,
            seats,
            state.plies + 1,
            None,
            state.outcome,
            state.final_states,
            state.held,
            state.end_held,
        )
    if isinstance(event, TurnStarted):
        return MatchState(
            state.status,
            state.game,
            _turn_seats(state.seats, event),
            state.plies,
            Turn(event.seat, event.ply, event.time_left_ms),
            state.outcome,
            state.final_states,
            state.held,
            state.end_held,
        )
    if isinstance(event, PresenceChanged):
        record = state.seats[event.seat]
        return replace(
            state,
            seats=_with(
                state.seats, event.seat, presence=event.state, presence_events=record.presence_events + 1
            ),
        )
    if isinstance(event, Forfeited):
        after = (
            rules.forfeit(state.game, event.seat, Termination(event.termination)) if game is _UNSET else game
        )
        changes: dict[str, Any] = {"standing": FORFEIT_STATES[event.termination]}
        if event.clock_ms is not None:
            changes["clock_ms"] = event.clock_ms
        # The turn ends with its seat's forfeit, and with the game: a forfeit that decides a match
        # whose end is held (no Ended follows) must not leave another seat a turn the rules refuse.
        over = rules.outcome(after) is not None
        turn = None if over or (state.turn is not None and state.turn.seat == event.seat) else state.turn
        return replace(state, game=after, seats=_with(state.seats, event.seat, **changes), turn=turn)
    if isinstance(event, SeatJoined):
        seats = _with(
            state.seats,
            event.seat,
            name=event.name,
            token_hash=event.token_hash,
            house_bot=event.house_bot,
            standing="joined",
        )
        return replace(state, seats=seats)
    if isinstance(event, Started):
        seats = tuple(
            replace(record, presence=_presence(record.presence, event.states[s]), presence_events=0)
            for s, record in enumerate(state.seats)
        )
        return replace(state, status="active", seats=seats, held=False)
    if isinstance(event, Ended):
        return replace(state, status="finished", outcome=event.outcome, turn=None, final_states=event.states)
    if isinstance(event, Strike):
        return replace(state, seats=_with(state.seats, event.seat, strikes=event.count))
    if isinstance(event, Created):
        return replace(state, held=event.held, end_held=event.end_held)
    if isinstance(event, Substituted):
        return state
    raise TypeError(f"not an event: {event!r}")  # pragma: no cover - the union above is exhaustive


def _turn_seats(seats: tuple[SeatRecord, ...], event: TurnStarted) -> tuple[SeatRecord, ...]:
    """The seats at the start of a turn: clocks and presence from the event, presence budget
    reset; a seat that this changes in nothing is kept as it is (the usual case).
    """
    changed = False
    out = []
    for s, record in enumerate(seats):
        clock, presence = event.clocks[s], _presence(record.presence, event.states[s])
        if record.clock_ms != clock or record.presence != presence or record.presence_events:
            out.append(replace(record, clock_ms=clock, presence=presence, presence_events=0))
            changed = True
        else:
            out.append(record)
    return tuple(out) if changed else seats


def _with(seats: tuple[SeatRecord, ...], seat: int, **changes: Any) -> tuple[SeatRecord, ...]:
    return (*seats[:seat], replace(seats[seat], **changes), *seats[seat + 1 :])


def _presence(recorded: str, state: str) -> str:
    """The recorded presence after a snapshot showing ``state`` for the seat."""
    return state if state in ("connected", "disconnected") else recorded
