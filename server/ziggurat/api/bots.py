"""Remote bots: connected bot processes that are handed seats (as Lichess bots are).

A bot connects with a name and a bot token. The first connection under a name
registers it (the token is stored hashed); later ones must show the same token.
Whoever organises matches (a tournament, an operator) asks the registry to hand
a seat to a connected bot: the bot receives the match id and the seat token on
its stream and then plays like any other client.

Names are registered under their key (:mod:`ziggurat.core.botnames`): other case,
outer spaces, compatibility forms and look-alike letters do not make another name. An
organiser may register a name in advance with the hash of the token it issued
(:meth:`BotRegistry.preregister`), so no one else can take it first. The holder of a
name's token takes it over at once: a new connection replaces one still registered
(whose network connection may have been cut without the server noticing yet), instead
of being refused until the old one times out. New registrations are rate-limited per
address and per server.

Anyone who created a match may also *invite* a connected bot into it (BotService.InviteBot).
An invitation is *pending* until the match has started and the bot has opened a stream on its
seat. Pending invitations are bounded so that invitations alone cannot take a bot away from
the organisers and players who want it: at most :attr:`BotRegistry.max_pending` per bot, each
expires after :attr:`BotRegistry.invitation_ttl_s` (its match is cancelled, the bot released),
and an organiser's seat (:meth:`BotRegistry.assign`) never waits for one: pending invitations
do not count in :attr:`BotConnection.free`, and the oldest ones are withdrawn (their matches
cancelled) when the bot would otherwise play more than its ``max_matches``. Cancelling ends the
match as aborted (its ``Ended`` event committed to the match's log, as CancelMatch does) before
the registry forgets the invitation.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import re
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from ziggurat.api.ratelimit import RateLimiter
from ziggurat.core.botnames import bot_key, display_name, skeleton
from ziggurat.core.match import Match, hash_token, store_unavailable
from ziggurat.store.sqlite import Store, StoreUnavailableError
from ziggurat.v1 import bot_service_pb2 as bpb
from ziggurat.wire import errors
from ziggurat.wire.reasons import Reason

log = logging.getLogger("ziggurat.bots")

# Defaults of ``ziggurat serve --max-pending-invitations`` and ``--invitation-ttl``
# (docs/operations.md, the limits table).
DEFAULT_MAX_PENDING_INVITATIONS = 2
DEFAULT_INVITATION_TTL_S = 120.0


@dataclass(eq=False)
class Invitation:
    """A seat a bot was invited into (InviteBot), until the match ends."""

    bot: str  # the bot's name
    match: Match
    seat: int  # 0-based

    @property
    def played(self) -> bool:
        """The match has started and the bot has opened a stream on its seat: no longer pending."""
        match = self.match
        return match.status != "waiting" and match.presence(self.seat) != ""

    @property
    def pending(self) -> bool:
        """Still waiting to be played (and its match not over)."""
        return self.match.status != "finished" and not self.played


@dataclass(eq=False)
class BotConnection:
    """One connected bot: what it accepts, what it plays now, and its outgoing assignments."""

    name: str
    games: frozenset[str]
    max_matches: int
    # Every match it was handed and that is not over, pending invitations included.
    active: set[str] = field(default_factory=set)
    # None ends the stream: the name's token holder connected again (a takeover)
    queue: asyncio.Queue[bpb.Assignment | None] = field(default_factory=asyncio.Queue)
    # The invitations of its matches (match id -> invitation), pending or played.
    invitations: dict[str, Invitation] = field(default_factory=dict)

    @property
    def pending(self) -> list[Invitation]:
        """Its pending invitations, oldest first."""
        return [i for i in self.invitations.values() if i.pending and i.match.match_id in self.active]

    @property
    def free(self) -> int:
        """How many more matches an organiser may hand it now: pending invitations do not count
        (an organiser's seat withdraws them, :meth:`BotRegistry.assign`)."""
        return self.max_matches - len(self.active) + len(self.pending)

    def plays(self, game: str) -> bool:
        """True when it accepts ``game``."""
        return not self.games or game in self.games


log = logging.getLogger("ziggurat.bots")

VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}")
REGISTRATIONS_PER_ADDRESS = (1 / 6, 10.0)  # new names per second from one address, burst
REGISTRATIONS_PER_SERVER = (2.0, 100.0)  # new names per second on the whole server, burst


def _stored_key(name: str) -> str:
    """Today's key of a key stored by an earlier version (keys are names, so they fold again)."""
    return skeleton(name)


class BotRegistry:
    """The bots connected to this server (keyed by :func:`~ziggurat.core.botnames.bot_key`)."""

    def __init__(
        self,
        store: Store,
        *,
        max_pending: int = DEFAULT_MAX_PENDING_INVITATIONS,
        invitation_ttl_s: float = DEFAULT_INVITATION_TTL_S,
    ) -> None:
        self.store = store
        # Pending invitations one bot may have at once, and how long one may stay pending.
        self.max_pending = max_pending
        self.invitation_ttl_s = invitation_ttl_s
        self.connected: dict[str, BotConnection] = {}
        # An arena's entrants connect as NAME@VERSION with NAME's token (_version_of).
        self.versioned = False
        self._arrived: asyncio.Event | None = None
        self._per_address = RateLimiter(*REGISTRATIONS_PER_ADDRESS)
        self._per_server = RateLimiter(*REGISTRATIONS_PER_SERVER)
        if not store.readonly:
            # Names registered under an older key function (case-folded before the look-alike
            # mapping) are stored again under today's key, so that their holders keep them.
            for name in store.rekey_bots(_stored_key):
                log.warning("remote-bot name %r dropped: it reads as a name registered before it", name)

    def _version_of(self, shown: str, key: str, digest: str) -> str | None:
        """On an arena: ``NAME@VERSION`` is a version of entrant ``NAME`` and connects with NAME's
        token; the first connection registers the versioned name under that token. None when
        NAME is not registered (then the name is new, as any other) or the version is malformed."""
        base, _, version = shown.partition("@")
        base_hash = self.store.bot_token_hash(bot_key(base))
        if base_hash is None or not VERSION.fullmatch(version):
            if base_hash is not None:
                raise errors.invalid(
                    "BAD_NAME", "a version is 1-32 letters, digits, '.', '_' or '-' after the '@'"
                )
            return None
        if not hmac.compare_digest(base_hash, digest):
            raise errors.permission_denied(
                "BAD_TOKEN", f"the bot name {base!r} is registered with another token"
            )
        try:
            self.store.register_bot(key, base_hash, int(time.time() * 1000))
        except StoreUnavailableError as error:
            raise store_unavailable(error) from None
        return base_hash

    def preregister(self, name: str, token_hash: str) -> None:
        """Bind ``name`` to the hash of a token the organiser issued (replacing any earlier holder)."""
        key = bot_key(name)
        self.store.register_bot(key, token_hash, int(time.time() * 1000), replace=True)

    def connect(
        self, name: str, token: str | None, games: Iterable[str], max_matches: int, *, peer: str = ""
    ) -> BotConnection:
        """Register or authenticate ``name`` and mark it connected (taking over from a connection
        of the same name still registered)."""
        if not token:
            raise errors.unauthenticated(
                "MISSING_TOKEN", "a bot connects with its bot token (authorization: Bearer …)"
            )
        shown = display_name(name)
        key = bot_key(name)
        digest = hash_token(token)
        known = self.store.bot_token_hash(key)
        if known is None and self.versioned and "@" in shown:
            known = self._version_of(shown, key, digest)
        if known is None:
            if not (self._per_address.allow(peer) and self._per_server.allow("")):
                raise errors.exhausted("RATE_LIMITED", "too many new bot names registered; try again later")
            try:
                self.store.register_bot(key, digest, int(time.time() * 1000))
            except StoreUnavailableError as error:
                raise store_unavailable(error) from None
        elif not hmac.compare_digest(known, digest):
            raise errors.permission_denied(
                "BAD_TOKEN", f"the bot name {shown!r} is registered with another token"
            )
        connection = BotConnection(shown, frozenset(games), max(1, max_matches))
        previous = self.connected.get(key)
        if previous is not None:
            connection.active = previous.active  # its matches go on; the old stream ends
            connection.invitations = previous.invitations
            previous.queue.put_nowait(None)
        self.connected[key] = connection
        if self._arrived is not None:
            self._arrived.set()
            self._arrived = None
        return connection

    def disconnect(self, connection: BotConnection) -> None:
        """The bot's stream closed."""
        key = bot_key(connection.name)
        if self.connected.get(key) is connection:
            del self.connected[key]

    async def wait_for(self, name: str, timeout: float) -> BotConnection:
        """The connection of ``name``, waiting up to ``timeout`` seconds for it to connect."""
        deadline = time.monotonic() + timeout
        name = bot_key(name)
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
        """The connection of ``name`` if an organiser may hand it a seat of ``game`` now; refusals
        otherwise (its pending invitations do not count: :meth:`assign` withdraws them)."""
        connection = self._connection(name, game)
        if connection.free <= 0:
            raise errors.precondition("BOT_BUSY", f"bot {name!r} plays its maximum number of matches")
        return connection

    def invitable(self, name: str, game: str) -> BotConnection:
        """The connection of ``name`` if it may be invited into a match of ``game`` now: it plays
        the game, has a free match (pending invitations count) and fewer than
        :attr:`max_pending` pending invitations; refusals otherwise."""
        connection = self._connection(name, game)
        if len(connection.active) >= connection.max_matches:
            raise errors.precondition("BOT_BUSY", f"bot {name!r} plays its maximum number of matches")
        if len(connection.pending) >= self.max_pending:
            raise errors.refuse(
                Reason.TOO_MANY_INVITATIONS,
                f"bot {name!r} already has {self.max_pending} invitations waiting to be played",
            )
        return connection

    def _connection(self, name: str, game: str) -> BotConnection:
        connection = self.connected.get(bot_key(name))
        if connection is None:
            raise errors.precondition("BOT_NOT_CONNECTED", f"bot {name!r} is not connected")
        if not connection.plays(game):
            raise errors.precondition("BOT_GAME", f"bot {name!r} does not play {game}")
        return connection

    def assign(self, name: str, assignment: bpb.Assignment, game: str) -> BotConnection:
        """An organiser hands a seat to a connected bot; it counts as busy until :meth:`release`.

        Pending invitations give way: while the bot would play more than its ``max_matches``,
        its oldest pending invitation is withdrawn (its match cancelled, :meth:`withdraw`).
        """
        connection = self.available(name, game)
        for invitation in connection.pending:
            if len(connection.active) < connection.max_matches:
                break
            self.withdraw(invitation, "an organiser's seat needs the bot")
        connection.active.add(assignment.match_id)
        connection.queue.put_nowait(assignment)
        return connection

    def invite(self, connection: BotConnection, assignment: bpb.Assignment, match: Match) -> Invitation:
        """Hand the seat of an invitation (checked with :meth:`invitable`) to the bot."""
        invitation = Invitation(connection.name, match, assignment.seat - 1)
        connection.invitations[match.match_id] = invitation
        connection.active.add(match.match_id)
        connection.queue.put_nowait(assignment)
        return invitation

    def expire(self, invitation: Invitation) -> bool:
        """Withdraw ``invitation`` if it is still pending after :attr:`invitation_ttl_s`; True when
        it is settled (played, over or withdrawn), False when the withdrawal must be tried again."""
        if not invitation.pending:
            return True
        return self.withdraw(invitation, f"not played within {self.invitation_ttl_s:g} s")

    def withdraw(self, invitation: Invitation, why: str) -> bool:
        """Cancel a pending invitation: the match ends as aborted (committed first), then the bot
        is released. False (logged) when the database refused the cancellation: nothing changed."""
        match = invitation.match
        if match.status != "finished":
            try:
                match.abort()
            except (errors.ApiError, sqlite3.Error) as error:
                log.warning("match %s: could not withdraw the invitation: %s", match.match_id, error)
                return False
            log.info(
                "match %s cancelled: the invitation of seat %d %s", match.match_id, invitation.seat + 1, why
            )
        self.release(invitation.bot, match.match_id)
        return True

    def release(self, name: str, match_id: str) -> None:
        """The bot's match is over: it may take another."""
        connection = self.connected.get(bot_key(name))
        if connection is not None:
            connection.active.discard(match_id)
            connection.invitations.pop(match_id, None)
