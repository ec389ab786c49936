"""The asyncio client: create, join, watch and play matches.

Thin by design: every call is one RPC of ``proto/ziggurat/v1/match_service.proto``;
failures surface as :class:`ZigguratError` carrying the status code and the
server's machine-readable reason.

A server run as several worker processes (``ziggurat serve --workers N``) names the process
that owns a match in ``Match.server_address``, and answers a call that reached another one
with ``MATCH_ELSEWHERE`` and that address: the client remembers it for the match (one channel
per address) and sends that match's calls there, so callers never see the difference. When that
address stops answering (its worker was restarted on another port, or the whole server was)
the client forgets it and asks the public address again, which serves the match or names its
owner now: a unary call is retried there at once, streams on their next reconnection.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import grpc

from ziggurat_client.bot import Bot, Turn
from ziggurat_client.errors import RETRYABLE_CODES, ZigguratError
from ziggurat_client.v1 import bot_service_pb2 as bpb
from ziggurat_client.v1 import bot_service_pb2_grpc as bgrpc
from ziggurat_client.v1 import game_pb2, match_pb2
from ziggurat_client.v1 import match_service_pb2 as spb
from ziggurat_client.v1 import match_service_pb2_grpc as sgrpc

__all__ = ["CHANNEL_OPTIONS", "RETRYABLE_CODES", "MatchHandle", "ZigguratClient", "ZigguratError"]

ELSEWHERE = "MATCH_ELSEWHERE"
"""The reason of a call that reached a worker process not owning the match (docs/scaling.md)."""

MAX_REDIRECTS = 2
"""How many MATCH_ELSEWHERE answers one call follows (one is enough unless workers move)."""

UNREACHABLE_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED})
"""Codes that, with no reason from the server, mean an address did not answer at all."""

CHANNEL_OPTIONS = [
    ("grpc.keepalive_time_ms", 20_000),
    ("grpc.keepalive_timeout_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    # An address that refused a connection is tried again within 2 s, not gRPC's up to 120 s:
    # until then every call to it fails at once, so a server (or a worker) back on its port
    # would go unused while this channel waits (all channels to one address share this wait).
    ("grpc.initial_reconnect_backoff_ms", 200),
    ("grpc.max_reconnect_backoff_ms", 2_000),
]


def _bearer(token: str) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),)


@dataclass(frozen=True, slots=True)
class MatchHandle:
    """A joined seat: the match id, the 1-based seat and its secret token."""

    match_id: str
    seat: int
    token: str

    @property
    def metadata(self) -> tuple[tuple[str, str], ...]:
        """The call metadata that authenticates as this seat."""
        return _bearer(self.token)


class ZigguratClient:
    """An open connection to a server. Use as ``async with ZigguratClient(address) as client``."""

    def __init__(
        self,
        address: str,
        *,
        tls: bool = False,
        root_certificates: bytes | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        """Open a channel to ``address`` (HOST:PORT).

        ``tls=True`` speaks TLS, trusting the system's roots or ``root_certificates``
        (PEM bytes, e.g. a LAN server's self-signed certificate); ``credentials`` gives
        full control instead. ``options`` are more gRPC channel arguments, e.g.
        ``[("grpc.use_local_subchannel_pool", 1)]`` for a TCP connection of this client's own
        (clients in one process otherwise share one connection per address).
        """
        self.address = address
        self._options = [*CHANNEL_OPTIONS, *options]
        if credentials is None and (tls or root_certificates is not None):
            credentials = grpc.ssl_channel_credentials(root_certificates=root_certificates)
        if credentials is None:
            self._channel = grpc.aio.insecure_channel(address, options=self._options)
        else:
            self._channel = grpc.aio.secure_channel(address, credentials, options=self._options)
        self._credentials = credentials
        self.stub = sgrpc.MatchServiceStub(self._channel)
        self.bots = bgrpc.BotServiceStub(self._channel)
        self.creator_tokens: dict[str, str] = {}  # match id -> creator token (cancel_match, invite_bot)
        # Where each match is served, when that is not ``address`` (several worker processes).
        self.routes: dict[str, str] = {}
        # This machine's clock minus the server's, in ms, as of the newest WatchMatch message
        # (its server_time_ms; 0 before any): a turn's deadline on this machine's clock is
        # turn_started's time_ms + time_left_ms + this, however far the two clocks differ.
        self.server_clock_offset_ms = 0
        self._owners: dict[str, tuple[grpc.aio.Channel, sgrpc.MatchServiceAsyncStub]] = {}

    @property
    def channel(self) -> grpc.aio.Channel:
        """The underlying channel (for the other services, e.g. BotService)."""
        return self._channel

    async def __aenter__(self) -> ZigguratClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the channel (and those opened to the processes that own matches)."""
        for channel, _ in self._owners.values():
            await channel.close(None)
        self._owners.clear()
        await self._channel.close(None)

    def stub_for(self, match_id: str) -> sgrpc.MatchServiceAsyncStub:
        """The MatchService stub of the process that serves ``match_id`` (as far as known)."""
        address = self.routes.get(match_id)
        if address is None or address == self.address:
            return self.stub
        owner = self._owners.get(address)
        if owner is None:
            if self._credentials is None:
                channel = grpc.aio.insecure_channel(address, options=self._options)
            else:
                channel = grpc.aio.secure_channel(address, self._credentials, options=self._options)
            owner = (channel, sgrpc.MatchServiceStub(channel))
            self._owners[address] = owner
        return owner[1]

    def learn_route(self, match_id: str, server_address: str) -> None:
        """Send ``match_id``'s calls to ``server_address`` (a Match.server_address or the address
        of a MATCH_ELSEWHERE refusal; an empty host means the host of :attr:`address`)."""
        if not server_address:
            return
        if server_address.startswith(":"):
            server_address = self.address.rsplit(":", 1)[0] + server_address
        self.routes[match_id] = server_address

    def forget_route(self, match_id: str, address: str, error: ZigguratError) -> bool:
        """Forget that ``match_id`` is served at ``address`` when ``error`` says that address did
        not answer (UNAVAILABLE or DEADLINE_EXCEEDED without a reason from a server): the match's
        calls go to :attr:`address` again, which serves it or names its owner now. True when
        forgotten. A refusal from the owner itself (it answered) keeps the route."""
        if error.reason or error.code not in UNREACHABLE_CODES or address == self.address:
            return False
        if self.routes.get(match_id) != address:
            return False
        del self.routes[match_id]
        return True

    def _note(self, match: match_pb2.Match) -> match_pb2.Match:
        self.learn_route(match.match_id, match.server_address)
        return match

    async def _call(self, name: str, request: Any, *, match_id: str = "", **kwargs: Any) -> Any:
        """One unary call, to the process that owns ``match_id`` (following MATCH_ELSEWHERE, and
        back to the public address when the owner's address does not answer)."""
        silent: ZigguratError | None = None  # the owner's address did not answer
        for hop in range(MAX_REDIRECTS + 1):
            stub = self.stub_for(match_id) if match_id else self.stub
            route = self.routes.get(match_id, "")
            try:
                return await getattr(stub, name)(request, **kwargs)
            except grpc.aio.AioRpcError as rpc_error:
                error = ZigguratError.from_rpc(rpc_error)
            if route and match_id and self.forget_route(match_id, route, error):
                silent = error
                # Retried on the public address: once the owner does not answer, the call did not
                # run there, or ran and was lost with the process (as after any connection loss).
                if error.code == grpc.StatusCode.UNAVAILABLE and hop < MAX_REDIRECTS:
                    continue
                raise error from None  # DEADLINE_EXCEEDED: the caller's time is spent
            if error.reason != ELSEWHERE or not match_id:
                raise error from None
            self.learn_route(match_id, error.metadata.get("address", ""))
            if hop == MAX_REDIRECTS:
                # Sent back to an owner that did not answer: the owner is the problem (still
                # starting, say), a retryable one; a refusal would tell the caller to give up.
                raise (silent or error) from None
        raise AssertionError("unreachable")

    async def create_match(
        self,
        config: game_pb2.GameConfig,
        *,
        time_control: match_pb2.TimeControl | None = None,
        seat_assignment: match_pb2.SeatAssignment.ValueType = match_pb2.SEAT_ASSIGNMENT_LOT,
        create_token: str | None = None,
    ) -> match_pb2.Match:
        """Create a match; returns it as a spectator sees it.

        ``create_token`` is for servers started with a create token. The creator token the
        server hands back is kept in :attr:`creator_tokens` for :meth:`cancel_match`.
        """
        request = spb.CreateMatchRequest(
            config=config, time_control=time_control, seat_assignment=seat_assignment
        )
        metadata = _bearer(create_token) if create_token else ()
        response: spb.CreateMatchResponse = await self._call("CreateMatch", request, metadata=metadata)
        self.creator_tokens[response.match.match_id] = response.creator_token
        return self._note(response.match)

    async def cancel_match(self, match_id: str, creator_token: str | None = None) -> match_pb2.Match:
        """Cancel a match that is still waiting for players (it ends as aborted).

        The creator token defaults to the one this client received when it created the match.
        """
        token = creator_token or self.creator_tokens.get(match_id, "")
        response: spb.CancelMatchResponse = await self._call(
            "CancelMatch",
            spb.CancelMatchRequest(match_id=match_id),
            match_id=match_id,
            metadata=_bearer(token),
        )
        return self._note(response.match)

    async def invite_bot(
        self, match_id: str, bot_name: str, seat: int = 0, *, creator_token: str | None = None
    ) -> int:
        """Invite a connected remote bot into a waiting match; returns the seat it took.

        Only the match's creator may: the creator token defaults to the one this client
        received when it created the match (:attr:`creator_tokens`). Refused (ZigguratError)
        with MISSING_TOKEN or BAD_TOKEN without the right creator token; BOT_NOT_CONNECTED,
        BOT_GAME, BOT_BUSY or TOO_MANY_INVITATIONS when the bot cannot take it; or with
        JoinMatch's reasons when the match cannot.
        """
        token = creator_token or self.creator_tokens.get(match_id, "")
        request = bpb.InviteBotRequest(match_id=match_id, bot_name=bot_name, seat=seat)
        try:
            metadata = _bearer(token) if token else ()
            response: bpb.InviteBotResponse = await self.bots.InviteBot(request, metadata=metadata)
        except grpc.aio.AioRpcError as error:
            raise ZigguratError.from_rpc(error) from None
        return response.seat

    async def list_bots(self) -> list[bpb.ConnectedBot]:
        """The remote bots connected now, with the games they play and how busy they are."""
        try:
            response: bpb.ListBotsResponse = await self.bots.ListBots(bpb.ListBotsRequest())
        except grpc.aio.AioRpcError as error:
            raise ZigguratError.from_rpc(error) from None
        return list(response.bots)

    async def list_games(self) -> list[game_pb2.GameInfo]:
        """The games the server hosts, as each declares itself: name, title, seat counts and
        the rule options ``GameConfig.rule_options`` takes (what a create form offers)."""
        response: spb.ListGamesResponse = await self._call("ListGames", spb.ListGamesRequest())
        return list(response.games)

    async def game_config(
        self, name: str, seats: int = 0, options: Mapping[str, str] | None = None
    ) -> game_pb2.GameConfig:
        """The configuration of a ``name`` game as this server lists it (:meth:`list_games`): any
        game it hosts, also one this client was written before. ``seats`` 0 is the game's fewest;
        ``options`` go by name (``GameConfig.rule_options``), checked by the server on create.
        ValueError names the server's games when it hosts no ``name``."""
        games = await self.list_games()
        info = next((game for game in games if game.name == name), None)
        if info is None:
            hosted = ", ".join(game.name for game in games)
            raise ValueError(f'unknown game "{name}": this server hosts {hosted}')
        return game_pb2.GameConfig(
            game=info.game, seats=seats or info.min_seats, rule_options=dict(options or {})
        )

    async def list_builtin_bots(self) -> list[spb.BuiltinBot]:
        """The server's own bots (what :meth:`add_bot` takes), with the games each plays."""
        request = spb.ListBuiltinBotsRequest()
        response: spb.ListBuiltinBotsResponse = await self._call("ListBuiltinBots", request)
        return list(response.bots)

    async def add_bot(self, match_id: str, bot: str, seat: int = 0) -> int:
        """Seat one of the server's built-in bots in a waiting match; returns its seat.

        The server then plays that seat itself. Refused (ZigguratError) with UNKNOWN_BOT,
        BOT_GAME or TOO_MANY_BOTS, or with JoinMatch's reasons when the match cannot.
        """
        request = spb.AddBotRequest(match_id=match_id, bot=bot, seat=seat)
        response: spb.AddBotResponse = await self._call("AddBot", request, match_id=match_id)
        self._note(response.match)
        return response.seat

    async def join(self, match_id: str, name: str, seat: int = 0) -> MatchHandle:
        """Take a seat (``seat`` only for SEAT_ASSIGNMENT_CHOSEN matches)."""
        request = spb.JoinMatchRequest(match_id=match_id, player_name=name, seat=seat)
        response: spb.JoinMatchResponse = await self._call("JoinMatch", request, match_id=match_id)
        self._note(response.match)
        return MatchHandle(match_id, response.seat, response.token)

    async def get_match(self, match_id: str, handle: MatchHandle | None = None) -> match_pb2.Match:
        """The match as ``handle``'s seat (or a spectator) sees it."""
        metadata = handle.metadata if handle else ()
        response: spb.GetMatchResponse = await self._call(
            "GetMatch", spb.GetMatchRequest(match_id=match_id), match_id=match_id, metadata=metadata
        )
        return self._note(response.match)

    async def list_matches(
        self, status: match_pb2.MatchStatus.ValueType = match_pb2.MATCH_STATUS_UNSPECIFIED
    ) -> list[match_pb2.Match]:
        """Matches newest first."""
        response: spb.ListMatchesResponse = await self._call(
            "ListMatches", spb.ListMatchesRequest(status=status)
        )
        return [self._note(match) for match in response.matches]

    async def submit_move(
        self, handle: MatchHandle, move: str, ply: int | None = None
    ) -> spb.SubmitMoveResponse:
        """Play ``move`` for ``handle``'s seat; ``ply`` guards against playing it on a later turn."""
        request = spb.SubmitMoveRequest(match_id=handle.match_id, move=move, ply=ply)
        response: spb.SubmitMoveResponse = await self._call(
            "SubmitMove", request, match_id=handle.match_id, metadata=handle.metadata
        )
        return response

    async def resign(self, handle: MatchHandle) -> None:
        """Resign ``handle``'s seat."""
        await self._call(
            "Resign",
            spb.ResignRequest(match_id=handle.match_id),
            match_id=handle.match_id,
            metadata=handle.metadata,
        )

    async def claim_abandoned(self, handle: MatchHandle) -> list[int]:
        """End the part of every other seat away (no stream open) for the match's
        ``claim_after_ms``: they forfeit as abandoned. Returns those seats (1-based); refused
        with NOT_ABANDONED (metadata ``claimable_in_ms``) while none has been away long enough."""
        response: spb.ClaimAbandonedResponse = await self._call(
            "ClaimAbandoned",
            spb.ClaimAbandonedRequest(match_id=handle.match_id),
            match_id=handle.match_id,
            metadata=handle.metadata,
        )
        return list(response.seats)

    async def record(self, match_id: str) -> spb.MatchRecord:
        """The verifiable record of a finished match."""
        response: spb.GetMatchRecordResponse = await self._call(
            "GetMatchRecord", spb.GetMatchRecordRequest(match_id=match_id), match_id=match_id
        )
        return response.record

    async def watch(
        self, match_id: str, *, handle: MatchHandle | None = None, after_seq: int = 0
    ) -> AsyncIterator[match_pb2.Event]:
        """Events after ``after_seq`` as the seat (or a spectator) sees them, until the match ends."""
        metadata = handle.metadata if handle else ()
        silent: ZigguratError | None = None  # the owner's address did not answer
        for hop in range(MAX_REDIRECTS + 1):
            route = self.routes.get(match_id, "")
            call = self.stub_for(match_id).WatchMatch(
                spb.WatchMatchRequest(match_id=match_id, after_seq=after_seq), metadata=metadata
            )
            received = False
            try:
                async for response in call:
                    received = True
                    if response.server_time_ms:
                        self.server_clock_offset_ms = int(time.time() * 1000) - response.server_time_ms
                    for event in response.events:
                        yield event
                return
            except grpc.aio.AioRpcError as rpc_error:
                error = ZigguratError.from_rpc(rpc_error)
                if route and self.forget_route(match_id, route, error):
                    if received or hop == MAX_REDIRECTS:
                        raise error from None
                    silent = error
                    continue  # the owner's address did not answer: ask the public one
                if error.reason != ELSEWHERE:
                    raise error from None
                self.learn_route(match_id, error.metadata.get("address", ""))  # refused before any event
                if hop == MAX_REDIRECTS:
                    raise (silent or error) from None  # as in _call
            finally:
                call.cancel()

    async def follow(
        self,
        match_id: str,
        *,
        handle: MatchHandle | None = None,
        after_seq: int = 0,
        attempts: int = 30,
        initial_backoff: float = 0.1,
        max_backoff: float = 5.0,
    ) -> AsyncIterator[match_pb2.Event]:
        """Like :meth:`watch`, but survives the network: on a dropped stream it reconnects
        with exponential backoff and resumes after the last event it yielded, so the
        caller sees every event exactly once, in order, until the match ends."""
        last = after_seq
        failures = 0
        delay = 0.0
        while True:
            try:
                async for event in self.watch(match_id, handle=handle, after_seq=last):
                    failures, delay = 0, 0.0
                    last = event.seq
                    yield event
                    if event.WhichOneof("kind") == "match_ended":
                        return
            except ZigguratError as error:
                if error.code not in RETRYABLE_CODES:
                    raise
            failures += 1
            if failures > attempts:
                raise ZigguratError(
                    grpc.StatusCode.UNAVAILABLE, "GAVE_UP", "could not reconnect to the server"
                )
            delay = initial_backoff if not delay else min(max_backoff, delay * 2)
            await asyncio.sleep(delay * random.uniform(0.5, 1.5))

    async def play(
        self,
        handle: MatchHandle,
        choose: Bot | Callable[[Turn], Awaitable[str] | str],
        *,
        on_event: Callable[[match_pb2.Event], None] | None = None,
        after_seq: int = 0,
    ) -> match_pb2.MatchEndedEvent:
        """Play ``handle``'s seat until the match ends; returns the MatchEnded event.

        ``choose`` is a :class:`Bot` or one function that gets a :class:`Turn` (the seat's
        view, legal moves, ply and time left) and returns a move, for the turn in progress
        only. Dropped connections are resumed exactly (see :class:`SeatRunner`).
        """
        from ziggurat_client.runner import FunctionBot, SeatRunner

        bot = choose if isinstance(choose, Bot) else FunctionBot(choose)
        return await SeatRunner(self, handle, bot, on_event=on_event, after_seq=after_seq).run()
