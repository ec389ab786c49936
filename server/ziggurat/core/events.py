"""The events of a match's log, one frozen dataclass per kind.

These are the only facts a match is made of: :mod:`ziggurat.core.decide` proposes
them, the store persists them, :func:`ziggurat.core.evolve.evolve` folds them into
the state (live and on restore alike), and :mod:`ziggurat.core.render` turns them
into protobuf for one audience. Nothing else interprets stored payloads.

The stored form (``kind`` + JSON ``data``) is the one earlier versions wrote, with
optional fields added; :func:`from_stored` reads both. :func:`encode` writes it: byte for
byte what ``json.dumps(event.data(), separators=(",", ":"))`` gives, built directly for
the two events of every ply (a move and the next turn), where the generic encoder was a
measurable part of the cost of a ply. The format on disk is therefore unchanged: older
servers, ``ziggurat check`` and any SQL reader read new rows as they read old ones.

Seat states (the vocabulary of ``ziggurat.v1.SeatState``, as lower-case strings):
``open``, ``joined``, ``connected``, ``disconnected``, ``timed_out``, ``resigned``,
``illegal_moves`` and, only in the :class:`Substituted` event, ``substituted``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as _json_string
from typing import Any

from ziggurat.rules.core import Outcome, Termination

# Seat standings that end a seat's part in the game (the server plays for it, or the game ends).
FORFEIT_STATES = {
    Termination.RESIGNATION.value: "resigned",
    Termination.TIMEOUT.value: "timed_out",
    Termination.ILLEGAL_MOVE.value: "illegal_moves",
    Termination.ABANDONED.value: "abandoned",
}
FORFEITED = frozenset(FORFEIT_STATES.values())


@dataclass(frozen=True, slots=True)
class Created:
    """The match exists; its settings are in the match row.

    ``held``: its start waits for the organiser's ``Begin`` (a tournament starts the clock only
    once every participant is ready), instead of following the last join. ``end_held``: once
    the game is decided, its end (outcome, reveal) waits for the organiser's ``Reveal`` — the
    rotations of a duplicate deal share their secrets, so none may be revealed while another
    is still played; until then the match is active with no turn, and nothing of its end is
    in the log for any call to show.
    """

    held: bool = False
    end_held: bool = False
    kind = "created"

    def data(self) -> dict[str, Any]:
        """The stored payload."""
        out: dict[str, Any] = {}
        if self.held:
            out["held"] = True
        if self.end_held:
            out["end_held"] = True
        return out


@dataclass(frozen=True, slots=True)
class SeatJoined:
    """A seat was taken (the token is stored hashed beside the log, never in it).

    ``house_bot`` names the server's built-in bot that plays the seat (AddBot), so that a
    restarted server seats it again: who plays a seat is in the log, not only in memory.
    """

    seat: int
    name: str
    token_hash: str = ""
    house_bot: str = ""
    kind = "seat"

    def data(self) -> dict[str, Any]:
        """The stored payload (``house_bot`` only for a built-in bot's seat)."""
        payload: dict[str, Any] = {"seat": self.seat, "name": self.name, "state": "joined"}
        if self.house_bot:
            payload["house_bot"] = self.house_bot
        return payload


@dataclass(frozen=True, slots=True)
class PresenceChanged:
    """A seat's streams opened (``connected``) or all closed (``disconnected``).

    Recorded at most :data:`~ziggurat.core.decide.PRESENCE_EVENTS_PER_TURN` times per
    seat and turn, so flapping connections cannot grow the log; the real state of every
    seat is in each :class:`TurnStarted`.
    """

    seat: int
    name: str
    connected: bool
    kind = "seat"

    @property
    def state(self) -> str:
        """The seat state this event announces."""
        return "connected" if self.connected else "disconnected"

    def data(self) -> dict[str, Any]:
        """The stored payload."""
        return {"seat": self.seat, "name": self.name, "state": self.state}


@dataclass(frozen=True, slots=True)
class Substituted:
    """The seat's time ran out under the random-move policy: the next move is the server's."""

    seat: int
    name: str
    kind = "seat"

    def data(self) -> dict[str, Any]:
        """The stored payload."""
        return {"seat": self.seat, "name": self.name, "state": "substituted"}


@dataclass(frozen=True, slots=True)
class Started:
    """Every seat is taken; ``states`` are the seats' states at that moment."""

    names: tuple[str, ...]
    states: tuple[str, ...]
    kind = "started"

    def data(self) -> dict[str, Any]:
        """The stored payload."""
        return {"names": list(self.names), "states": list(self.states)}


@dataclass(frozen=True, slots=True)
class TurnStarted:
    """``seat`` must play ply ``ply`` within ``time_left_ms`` (0 = untimed)."""

    seat: int
    ply: int
    time_left_ms: int
    clocks: tuple[int, ...]
    states: tuple[str, ...]
    kind = "turn"

    def data(self) -> dict[str, Any]:
        """The stored payload."""
        return {
            "seat": self.seat,
            "ply": self.ply,
            "time_left_ms": self.time_left_ms,
            "clocks": list(self.clocks),
            "states": list(self.states),
        }


@dataclass(frozen=True, slots=True)
class MovePlayed:
    """A move (canonical) by ``seat``; ``clock_ms`` is the seat's clock after it (timed matches)."""

    seat: int
    move: str
    substituted: bool
    clock_ms: int | None = None
    kind = "move"

    def data(self) -> dict[str, Any]:
        """The stored payload."""
        out: dict[str, Any] = {"seat": self.seat, "move": self.move, "substituted": self.substituted}
        if self.clock_ms is not None:
            out["clock_ms"] = self.clock_ms
        return out


@dataclass(frozen=True, slots=True)
class Forfeited:
    """``seat`` is out (resigned, timed out, too many illegal moves).

    ``clock_ms`` is its clock after the time it used (timed matches); ``cause`` is
    ``"disconnected"`` for a time-out of a seat that had no stream open.
    """

    seat: int
    termination: str
    clock_ms: int | None = None
    cause: str = ""
    kind = "forfeit"

    @property
    def state(self) -> str:
        """The seat state a forfeit leaves the seat in."""
        return FORFEIT_STATES[self.termination]

    def data(self) -> dict[str, Any]:
        """The stored payload."""
        out: dict[str, Any] = {"seat": self.seat, "termination": self.termination}
        if self.clock_ms is not None:
            out["clock_ms"] = self.clock_ms
        if self.cause:
            out["cause"] = self.cause
        return out


@dataclass(frozen=True, slots=True)
class Ended:
    """The game is over (or aborted); ``states`` are the seats' final states."""

    termination: str
    ranks: tuple[int, ...]
    states: tuple[str, ...]
    kind = "ended"

    @property
    def outcome(self) -> Outcome:
        """The outcome as the rules express it."""
        return Outcome(Termination(self.termination), self.ranks)

    def data(self) -> dict[str, Any]:
        """The stored payload."""
        return {"termination": self.termination, "ranks": list(self.ranks), "states": list(self.states)}


@dataclass(frozen=True, slots=True)
class Strike:
    """A refused move counted against the conduct limit: ``seat`` has ``count`` so far.

    Not part of the public log (it has no sequence number): it is stored beside it, in
    the same transaction as any events of the same decision, and survives restarts.
    """

    seat: int
    count: int
    kind = "strike"


Event = (
    Created
    | SeatJoined
    | PresenceChanged
    | Substituted
    | Started
    | TurnStarted
    | MovePlayed
    | Forfeited
    | Ended
)


def encode(event: Event) -> str:
    """The stored JSON text of ``event``'s payload (see the module notes)."""
    if isinstance(event, MovePlayed):
        substituted = "true" if event.substituted else "false"
        clock = "" if event.clock_ms is None else f',"clock_ms":{int(event.clock_ms)}'
        move = _json_string(event.move)
        return f'{{"seat":{int(event.seat)},"move":{move},"substituted":{substituted}{clock}}}'
    if isinstance(event, TurnStarted):
        clocks = ",".join(str(int(clock)) for clock in event.clocks)
        states = ",".join(_json_string(state) for state in event.states)
        return (
            f'{{"seat":{int(event.seat)},"ply":{int(event.ply)},"time_left_ms":{int(event.time_left_ms)},'
            f'"clocks":[{clocks}],"states":[{states}]}}'
        )
    return json.dumps(event.data(), separators=(",", ":"))


def from_stored(kind: str, data: dict[str, Any], seats: int) -> Event:
    """The typed event of a stored ``(kind, data)`` pair (older payloads included)."""
    if kind == "move":
        clock = data.get("clock_ms")
        return MovePlayed(data["seat"], data["move"], bool(data["substituted"]), clock)
    if kind == "turn":
        states = tuple(data.get("states") or ["joined"] * seats)
        return TurnStarted(data["seat"], data["ply"], data["time_left_ms"], tuple(data["clocks"]), states)
    if kind == "seat":
        state = data["state"]
        if state == "joined":
            return SeatJoined(data["seat"], data["name"], house_bot=data.get("house_bot", ""))
        if state == "substituted":
            return Substituted(data["seat"], data["name"])
        return PresenceChanged(data["seat"], data["name"], state == "connected")
    if kind == "forfeit":
        return Forfeited(data["seat"], data["termination"], data.get("clock_ms"), data.get("cause", ""))
    if kind == "started":
        names = tuple(data["names"])
        return Started(names, tuple(data.get("states") or ["joined"] * len(names)))
    if kind == "ended":
        states = tuple(data.get("states") or ["joined"] * seats)
        return Ended(data["termination"], tuple(data["ranks"]), states)
    if kind == "created":
        return Created(bool(data.get("held", False)), bool(data.get("end_held", False)))
    raise ValueError(f"unknown event kind {kind!r}")
