"""The bot API: a bot author writes one method, ``choose(turn) -> move``.

A :class:`Turn` carries everything the seat may know when it must move: the
game and its rule options, the seat's own view (position text with hidden parts
as ``?``), the legal moves and the time left. Search bots can rebuild a rules
state from it (the server distribution's ``ziggurat.bots.positions`` does).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ziggurat_client.v1 import game_pb2


@dataclass(frozen=True, slots=True)
class Turn:
    """One decision: what the seat to move knows when it must move."""

    game: str
    options: dict[str, str]
    seats: int
    seat: int  # 1-based
    ply: int
    view: game_pb2.GameView
    legal_moves: tuple[str, ...]
    time_left_ms: int = 0  # 0 = untimed
    history: tuple[str, ...] = field(default=())  # moves played so far, in order
    # time.monotonic() when this seat learnt of the turn (its TurnStarted arrived): the clock
    # read time_left_ms then, so whatever a bot spends after it — queueing for a core included
    # — is already off its time. Same machine only (a monotonic clock is not shared).
    received: float = field(default_factory=time.monotonic, compare=False)

    @property
    def position(self) -> str:
        """The position text as this seat sees it."""
        return self.view.position

    def budget_seconds(self, default: float = 1.0, share: float = 0.25, margin_ms: int = 100) -> float:
        """Thinking time that honours the clock: a ``share`` of what is left after a safety
        margin for the network, never more than ``default`` (used when untimed).
        """
        if not self.time_left_ms:
            return default
        usable = max(0.0, self.time_left_ms - margin_ms) / 1000
        return max(0.005, min(default, usable * share))

    def seconds_since_received(self) -> float:
        """How long ago this seat learnt of the turn: already off its clock."""
        return time.monotonic() - self.received


@runtime_checkable
class Bot(Protocol):
    """What ``ziggurat bot`` runs: anything with a name and a ``choose`` method."""

    name: str

    def choose(self, turn: Turn) -> str | Awaitable[str]:
        """Return one of ``turn.legal_moves`` (may be a coroutine)."""
        ...
