"""Remote bots: connected bot processes that are handed seats (as Lichess bots are).

A bot connects with a name and a bot token. The first connection under a name
registers it (the token is stored hashed); later ones must show the same token.
Whoever organises matches (a tournament, an operator) asks the registry to hand
a seat to a connected bot: the bot receives the match id and the seat token on
its stream and then plays like any other client.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from ziggurat.service.match import MAX_NAME, hash_token, store_unavailable
from ziggurat.store.sqlite import Store, StoreUnavailableError
from ziggurat.v1 import bot_service_pb2 as bpb
from ziggurat.wire import errors


@dataclass(eq=False)
class BotConnection:
    """One connected bot: what it accepts, what it plays now, and its outgoing assignments."""

    name: str
    games: frozenset[str]
    max_matches: int
    active: set[str] = field(default_factory=set)
    queue: asyncio.Queue[bpb.Assignment] = field(default_factory=asyncio.Queue)

    @property
    def free(self) -> int:
        """How many more matches it accepts now."""
        return self.max_matches - len(self.active)

    def plays(self, game: str) -> bool:
        """True when it accepts ``game``."""
        return not self.games or game in self.games


class BotRegistry:
    """The bots connected to this server."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.connected: dict[str, BotConnection] = {}
        self._arrived: asyncio.Event | None = None

    def connect(self, name: str, token: str | None, games: Iterable[str], max_matches: int) -> BotConnection:
        """Register or authenticate ``name`` and mark it connected."""
        if not token:
            raise errors.unauthenticated(
                "MISSING_TOKEN", "a bot connects with its bot token (authorization: Bearer …)"
            )
        if not name or len(name) > MAX_NAME or not name.isprintable():
            raise errors.invalid("BAD_NAME", f"a bot name is 1 to {MAX_NAME} printable characters")
        digest = hash_token(token)
        known = self.store.bot_token_hash(name)
        if known is None:
            try:
                self.store.register_bot(name, digest, int(time.time() * 1000))
            except StoreUnavailableError as error:
                raise store_unavailable(error) from None
        elif not hmac.compare_digest(known, digest):
            raise errors.permission_denied(
                "BAD_TOKEN", f"the bot name {name!r} is registered with another token"
            )
        if name in self.connected:
            raise errors.precondition("ALREADY_CONNECTED", f"a bot named {name!r} is already connected")
        connection = BotConnection(name, frozenset(games), max(1, max_matches))
        self.connected[name] = connection
        if self._arrived is not None:
            self._arrived.set()
            self._arrived = None
        return connection

    def disconnect(self, connection: BotConnection) -> None:
        """The bot's stream closed."""
        if self.connected.get(connection.name) is connection:
            del self.connected[connection.name]

    async def wait_for(self, name: str, timeout: float) -> BotConnection:
        """The connection of ``name``, waiting up to ``timeout`` seconds for it to connect."""
        deadline = time.monotonic() + timeout
        while name not in self.connected:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"bot {name!r} is not connected")
            if self._arrived is None:
                self._arrived = asyncio.Event()
            try:
                await asyncio.wait_for(self._arrived.wait(), remaining)
            except TimeoutError:
                continue
        return self.connected[name]

    def available(self, name: str, game: str) -> BotConnection:
        """The connection of ``name`` if it may be handed a seat of ``game`` now; refusals otherwise."""
        connection = self.connected.get(name)
        if connection is None:
            raise errors.precondition("BOT_NOT_CONNECTED", f"bot {name!r} is not connected")
        if not connection.plays(game):
            raise errors.precondition("BOT_GAME", f"bot {name!r} does not play {game}")
        if connection.free <= 0:
            raise errors.precondition("BOT_BUSY", f"bot {name!r} plays its maximum number of matches")
        return connection

    def assign(self, name: str, assignment: bpb.Assignment, game: str) -> BotConnection:
        """Hand a seat to a connected bot; it counts as busy until :meth:`release`."""
        connection = self.available(name, game)
        connection.active.add(assignment.match_id)
        connection.queue.put_nowait(assignment)
        return connection

    def release(self, name: str, match_id: str) -> None:
        """The bot's match is over: it may take another."""
        connection = self.connected.get(name)
        if connection is not None:
            connection.active.discard(match_id)
