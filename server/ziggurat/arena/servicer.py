"""ArenaService: the standing arena's ladder, entrant profiles and games, and self-registration.

Why it leaks nothing: every message is built field by field from the arena's tables and the
ladder in memory (which follows them): names, ratings, ranks and terminations of rated games,
the seats and match ids of live ones. A live game shows no ranks; a match's own secrets
(seed, hidden set-up) are only reachable through MatchService's per-viewer views. Token
hashes and bot seeds are never put in a message.
"""

from __future__ import annotations

import secrets
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from ziggurat.api.ratelimit import RateLimiter
from ziggurat.api.servicer import api
from ziggurat.arena.config import NAME_PATTERN
from ziggurat.arena.ladder import Ladder, displayed
from ziggurat.arena.store import ArenaStore, GameRow
from ziggurat.core.botnames import bot_key
from ziggurat.core.match import hash_token
from ziggurat.v1 import arena_service_pb2 as apb
from ziggurat.v1 import arena_service_pb2_grpc as agrpc
from ziggurat.wire import errors
from ziggurat.wire.codec import GAME_ENUMS, TERMINATIONS
from ziggurat.wire.reasons import Reason

if TYPE_CHECKING:
    from ziggurat.arena.runner import ArenaRunner

CACHE_SECONDS = 0.5  # many pages polling share one answer for this long
RECENT_GAMES = 50
STATES = {
    "active": apb.ENTRANT_STATE_ACTIVE,
    "pending": apb.ENTRANT_STATE_PENDING,
    "retired": apb.ENTRANT_STATE_RETIRED,
    "superseded": apb.ENTRANT_STATE_SUPERSEDED,
}
STATUSES = {
    "running": apb.ARENA_STATUS_RUNNING,
    "paused": apb.ARENA_STATUS_PAUSED,
    "stopping": apb.ARENA_STATUS_STOPPING,
}
GAME_STATUSES = {
    "playing": apb.ARENA_GAME_STATUS_PLAYING,
    "rated": apb.ARENA_GAME_STATUS_RATED,
    "void": apb.ARENA_GAME_STATUS_VOID,
}


class ArenaServicer(agrpc.ArenaServiceServicer):
    """Serves the arena its runner plays."""

    def __init__(self, runner: ArenaRunner, store: ArenaStore) -> None:
        self.runner = runner
        self.store = store
        self._cached: tuple[float, apb.Arena] | None = None
        per_hour = runner.config.registrations_per_hour
        self._registrations = RateLimiter(per_hour / 3600.0, float(per_hour))

    async def GetArena(self, request: apb.GetArenaRequest, context: Any) -> apb.GetArenaResponse:
        """The ladders and the live games."""
        now = time.monotonic()
        if self._cached is None or now - self._cached[0] > CACHE_SECONDS:
            self._cached = (now, self._arena())
        return apb.GetArenaResponse(arena=self._cached[1])

    @api
    async def GetEntrant(self, request: apb.GetEntrantRequest, context: Any) -> apb.GetEntrantResponse:
        """One entrant's lines, rating history and recent games."""
        state = self.runner.state
        key = bot_key(request.name.partition("@")[0]) if request.name.strip() else ""
        name = state.entrant_names.get(key)
        if name is None:
            raise errors.refuse(Reason.ENTRANT_NOT_FOUND, f"this arena has no entrant {request.name[:64]!r}")
        profile = apb.EntrantProfile(name=name)
        versions = state.versions.get(key, [""]) or [""]
        for ladder_config in self.runner.config.ladders:
            ladder = state.ladders.get(ladder_config.game) or Ladder(ladder_config.game)
            for version in reversed(versions):
                line = f"{name}@{version}" if version else name
                if line in ladder.lines or version == versions[-1]:
                    profile.lines.append(self._line(ladder, line, rank=0))
        games = [g for g in self.store.games() if any(state.line_entrant(s) == key for s in g.seats)]
        for row in sorted((g for g in games if g.status == "rated"), key=lambda g: g.rated_order or 0):
            if row.ratings is None:
                continue
            for seat, line in enumerate(row.seats):
                if state.line_entrant(line) != key:
                    continue
                mu, sigma = row.ratings[seat]["after"]
                profile.history.add(
                    game=GAME_ENUMS[row.game],
                    version=line.partition("@")[2],
                    game_number=row.number,
                    rated_order=row.rated_order or 0,
                    time_ms=row.end_ms or 0,
                    mu=mu,
                    sigma=sigma,
                    rating=displayed(mu, sigma),
                )
        profile.recent_games.extend(_game(row) for row in games[:RECENT_GAMES])
        return apb.GetEntrantResponse(entrant=profile)

    @api
    async def ListArenaGames(
        self, request: apb.ListArenaGamesRequest, context: Any
    ) -> apb.ListArenaGamesResponse:
        """Games, newest first, a page at a time."""
        limit = request.limit or 50
        if limit > 500:
            raise errors.invalid("INVALID_CONFIG", "limit is at most 500")
        state = self.runner.state
        if request.entrant:
            key = bot_key(request.entrant.partition("@")[0])
            if key not in state.entrant_names:
                raise errors.refuse(
                    Reason.ENTRANT_NOT_FOUND, f"this arena has no entrant {request.entrant[:64]!r}"
                )
            rows = [
                g
                for g in self.store.games(before=request.before)
                if any(state.line_entrant(s) == key for s in g.seats)
            ][:limit]
        else:
            rows = self.store.games(before=request.before, limit=limit)
        return apb.ListArenaGamesResponse(games=[_game(row) for row in rows])

    @api
    async def RegisterEntrant(
        self, request: apb.RegisterEntrantRequest, context: Any
    ) -> apb.RegisterEntrantResponse:
        """A new entrant under the arena's registration policy; its token, once."""
        config = self.runner.config
        if config.registration == "closed":
            raise errors.refuse(
                Reason.REGISTRATION_CLOSED,
                "this arena takes no self-registrations: ask its operator for a credential",
            )
        name = request.name.strip()
        if not NAME_PATTERN.fullmatch(name):
            raise errors.refuse(
                Reason.BAD_NAME,
                "an entrant's name is 1-32 letters, digits, '.', '_' or '-', starting with a letter or digit",
            )
        server = self.runner.server
        assert server is not None
        address = server.peers.address_of(context)
        key = bot_key(name)
        state = self.runner.state
        if key in state.entrant_names or server.store.bot_token_hash(key) is not None:
            raise errors.refuse(Reason.NAME_TAKEN, f"{name!r} (or a name that reads alike) is taken")
        if len(state.entrant_names) >= config.max_entrants or not self._registrations.allow(address):
            raise errors.refuse(
                Reason.RATE_LIMITED,
                f"this arena registers at most {config.registrations_per_hour} entrants an hour from one "
                f"address and {config.max_entrants} in all; try again later",
            )
        token = secrets.token_urlsafe(24)
        pending = config.registration == "approval"
        try:
            stored = self.store.register(
                key, name, hash_token(token), "pending" if pending else "active", address
            )
        except sqlite3.Error:
            raise errors.refuse(
                Reason.STORE_UNAVAILABLE, "the database refused the registration; retry later"
            ) from None
        if not stored:
            raise errors.refuse(Reason.NAME_TAKEN, f"{name!r} (or a name that reads alike) is taken")
        self.runner.register_on_server(name, hash_token(token), [])
        state.entrant_states[key] = "pending" if pending else "active"
        state.entrant_names[key] = name
        return apb.RegisterEntrantResponse(name=name, token=token, pending_approval=pending)

    def _arena(self) -> apb.Arena:
        state = self.runner.state
        arena = apb.Arena(
            name=self.runner.config.name, status=STATUSES[state.status], games_rated=state.games_rated
        )
        for ladder_config in self.runner.config.ladders:
            ladder = state.ladders.get(ladder_config.game) or Ladder(ladder_config.game)
            out = arena.ladders.add(
                game=GAME_ENUMS[ladder_config.game], table_sizes=ladder_config.table_sizes
            )
            names = set(ladder.lines)
            # an active entrant that has not played yet is on the ladder with the prior
            for key, entrant in state.entrant_names.items():
                if state.entrant_states.get(key) == "active" and not any(
                    state.line_entrant(n) == key for n in names
                ):
                    newest = state.newest(key)
                    names.add(f"{entrant}@{newest}" if newest else entrant)
            lines = [self._line(ladder, n, rank=0) for n in names]
            active = sorted(
                (line for line in lines if line.state == apb.ENTRANT_STATE_ACTIVE),
                key=lambda line: (-line.rating, line.entrant, line.version),
            )
            for rank, line in enumerate(active, start=1):
                line.rank = rank
            rest = sorted(
                (line for line in lines if line.state != apb.ENTRANT_STATE_ACTIVE),
                key=lambda line: (-line.rating, line.entrant, line.version),
            )
            out.standings.extend([*active, *rest])
        for live in sorted(state.live.values(), key=lambda g: g.number):
            arena.live_games.add(
                number=live.number,
                match_id=live.match_id,
                game=GAME_ENUMS[live.game],
                status=apb.ARENA_GAME_STATUS_PLAYING,
                seats=live.seats,
                start_ms=live.start_ms,
            )
        return arena

    def _line(self, ladder: Ladder, name: str, *, rank: int) -> apb.LadderLine:
        state = self.runner.state
        line = ladder.line(name)
        key = state.line_entrant(name)
        return apb.LadderLine(
            rank=rank,
            entrant=state.entrant_names.get(key, name.partition("@")[0]),
            version=name.partition("@")[2],
            mu=line.mu,
            sigma=line.sigma,
            rating=line.rating,
            games=line.games,
            wins=line.wins,
            state=STATES[state.line_state(name)],
            connected=name in state.connected,
            playing=sum(name in g.seats for g in state.live.values() if g.game == ladder.game),
            last_game_ms=line.last_game_ms,
            game=GAME_ENUMS[ladder.game],
        )


def _game(row: GameRow) -> apb.ArenaGame:
    """A stored game as the ladder shows it: ranks and rating changes once rated."""
    out = apb.ArenaGame(
        number=row.number,
        match_id=row.match_id or "",
        game=GAME_ENUMS[row.game],
        status=GAME_STATUSES[row.status],
        seats=row.seats,
        start_ms=row.start_ms,
        end_ms=row.end_ms or 0,
        rated_order=row.rated_order or 0,
    )
    if row.status == "rated" and row.result is not None and row.ratings is not None:
        from ziggurat.rules.core import Termination

        out.ranks.extend(row.result["ranks"])
        out.termination = TERMINATIONS[Termination(row.result["termination"])]
        out.rating_changes.extend(displayed(*r["after"]) - displayed(*r["before"]) for r in row.ratings)
    return out
