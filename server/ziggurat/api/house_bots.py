"""Built-in bots the server plays itself: what the API edge needs to know of them.

The bots live above the API edge (``ziggurat.bots``, which builds on the client
API), so the servicer talks to them through this protocol; ``ziggurat serve`` plugs in
:class:`ziggurat.bots.house.HouseBots`. A server built without one (an embedded server,
a tournament's) has no built-in bots: ListBuiltinBots is empty and AddBot says
UNKNOWN_BOT.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ziggurat.core.manager import MatchManager
from ziggurat.core.match import Match
from ziggurat.wire import errors


@dataclass(frozen=True, slots=True)
class HouseBotInfo:
    """A built-in bot as the lobby lists it."""

    name: str
    games: tuple[str, ...]
    description: str


class HouseBotSeater(Protocol):
    """Seats built-in bots and plays them until their match ends."""

    def catalogue(self) -> list[HouseBotInfo]:
        """Every built-in bot, by name."""
        ...

    async def add(self, match: Match, bot_name: str, seat: int | None) -> int:
        """Seat ``bot_name`` (0-based ``seat``, or by the match's rule); returns the seat."""
        ...

    def restore(self) -> int:
        """After a restart: seat again the bots the log says play unfinished matches; how many."""
        ...

    async def close(self) -> None:
        """Stop every bot (server shutdown)."""
        ...


HouseBotFactory = Callable[[MatchManager], HouseBotSeater]


class NoHouseBots:
    """The seater of a server without built-in bots."""

    def catalogue(self) -> list[HouseBotInfo]:
        """None."""
        return []

    async def add(self, match: Match, bot_name: str, seat: int | None) -> int:
        """Always refused."""
        raise errors.invalid("UNKNOWN_BOT", f"this server plays no built-in bots (asked for {bot_name!r})")

    def restore(self) -> int:
        """Nothing to restore."""
        return 0

    async def close(self) -> None:
        """Nothing to stop."""
