"""The MatchService servicer: thin handlers that authenticate, call the match, render.

Every message that reaches a client is built by :mod:`ziggurat.core.render`
from the caller's seat (or None for a spectator), so redaction has one code path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol

import grpc
from grpc.aio import AbortError

from ziggurat.api.access import Access
from ziggurat.api.guard import bearer_token
from ziggurat.api.house_bots import HouseBotSeater, NoHouseBots
from ziggurat.api.peer import Peers
from ziggurat.api.ratelimit import RateLimiter
from ziggurat.api.status_guard import close_requests, end_call, read_request, write
from ziggurat.core.events import MovePlayed
from ziggurat.core.manager import MatchManager, Page
from ziggurat.core.match import Match, Subscriber, hash_token
from ziggurat.core.render import (
    PLAY_SERVER_TIME,
    SEAT_ASSIGNMENTS,
    STATUSES,
    WATCH_SERVER_TIME,
    frame_field,
    frame_server_time,
    framed_batches,
    render_match,
)
from ziggurat.core.timecontrol import TimeControl
from ziggurat.core.tokens import new_token
from ziggurat.rules.core import RulesError
from ziggurat.rules.registry import GAMES
from ziggurat.v1 import match_pb2 as mpb
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.wire import errors
from ziggurat.wire.codec import GAME_NAMES, config_from_proto, game_info
from ziggurat.wire.reasons import Reason

_POLICIES = {
    mpb.TIMEOUT_POLICY_UNSPECIFIED: "forfeit",
    mpb.TIMEOUT_POLICY_FORFEIT: "forfeit",
    mpb.TIMEOUT_POLICY_RANDOM_MOVE: "random_move",
}
_ASSIGNMENTS = {value: name for name, value in SEAT_ASSIGNMENTS.items()}
_STATUS_NAMES = {value: name for name, value in STATUSES.items()}
DEFAULT_PAGE = 100
GAME_NUMBERS: dict[str, Any] = {name: value for value, name in GAME_NAMES.items()}
MAX_PAGE = 1000
# Refusals (MoveRejected) a Play stream may have waiting for its writer before its reader stops
# reading: a client that sends moves but does not read its stream would otherwise make the
# server queue a refusal for every move it sends (92,170 refusals, +49 MB in 12 s from one
# stream with a 1 KiB window). Once the reader stops, HTTP/2 flow control stops the client.
MAX_PENDING_REFUSALS = 32
# A WatchMatch stream with nothing to send for this long is sent a heartbeat (a message with
# no events, only server_time_ms): the web client reports a lost connection after about twice
# this long without a message (clients/web/src/match.ts, SILENCE_MS).
WATCH_HEARTBEAT_S = 2.0
log = logging.getLogger("ziggurat.server")
SERVICE = "ziggurat.v1.MatchService"


Handler = Callable[..., Awaitable[Any]]


def api(handler: Handler) -> Handler:
    """Turn ApiError/RulesError raised by a unary handler into a rich gRPC status (set after
    the ``except`` block, see :func:`~ziggurat.api.status_guard.end_call`)."""

    async def wrapped(self: Any, request: Any, context: grpc.aio.ServicerContext[Any, Any]) -> Any:
        try:
            return await handler(self, request, context)
        except errors.ApiError as error:
            refusal = error
        except RulesError as error:
            refusal = errors.from_rules_error(error)
        await end_call(context, refusal)
        return None

    wrapped.__name__ = handler.__name__
    wrapped.__doc__ = handler.__doc__
    return wrapped


class MatchLister(Protocol):
    """ListMatches over more than this process's matches (the hosting's merge of every worker's
    shard, ``ziggurat.hosting.shard_listing``), set by the server that hosts this servicer."""

    async def page(
        self, *, status: str | None, game: str | None, limit: int, cursor: str, token: str | None
    ) -> Page:
        """A page of every shard's matches after ``cursor`` (as MatchManager.list_page)."""


class MatchServicer:
    """gRPC front of the :class:`MatchManager`."""

    def __init__(
        self,
        manager: MatchManager,
        *,
        rate: float = 200.0,
        burst: float = 400.0,
        create_rate: float = 50.0,
        create_burst: float = 100.0,
        untimed_move_limit_ms: int = 0,
        access: Access | None = None,
        house_bots: HouseBotSeater | None = None,
        peers: Peers | None = None,
    ) -> None:
        self.manager = manager
        # Each call's client address, also behind the gate (the per-address create rate).
        self.peers = peers if peers is not None else Peers()
        self.limiter = RateLimiter(rate, burst)
        # Matches created (and built-in bots seated) per client address: a rate of its own, not
        # the per-seat move rate (which is 200/s so that a bot may play fast).
        self.create_limiter = RateLimiter(create_rate, create_burst)
        # The per-move limit of a match created untimed (timecontrol.DEFAULT_UNTIMED_MOVE_LIMIT_S).
        self.untimed_move_limit_ms = untimed_move_limit_ms
        self.access = access or Access()
        self.house_bots: HouseBotSeater = house_bots if house_bots is not None else NoHouseBots()
        # As one of several worker processes (docs/scaling.md): this worker's own address,
        # put in every Match it answers with, and the lister merging every worker's matches.
        self.address = ""
        self.lister: MatchLister | None = None
        self.watch_heartbeat_s = WATCH_HEARTBEAT_S

    def _render(self, match: Match, audience: int | None) -> mpb.Match:
        """The Match for ``audience``, naming the worker that owns it (when there are several)."""
        out = render_match(match, audience)
        if self.address:
            out.server_address = self.address
        return out

    def _seat(self, match: Match, context: grpc.aio.ServicerContext[Any, Any]) -> int:
        token = bearer_token(context)
        seat = match.seat_for_token(token)
        if not self.limiter.allow(f"{match.match_id}/{seat}"):
            raise errors.refuse(Reason.RATE_LIMITED, "too many requests for this seat; slow down")
        return seat

    @api
    async def CreateMatch(
        self, request: spb.CreateMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> spb.CreateMatchResponse:
        """Validate the configuration and time control, then create the match and its creator token."""
        self.access.require_create(bearer_token(context))
        address = self.peers.address_of(context)
        if not self.create_limiter.allow(address):
            raise errors.refuse(Reason.RATE_LIMITED, "too many matches created from this address; slow down")
        try:
            game, seats, options = config_from_proto(request.config)
            tc = request.time_control
            time_control = TimeControl(
                per_move_ms=tc.per_move_ms,
                base_ms=tc.base_ms,
                increment_ms=tc.increment_ms,
                on_timeout=_POLICIES.get(tc.on_timeout, "invalid"),
                disconnect_grace_ms=tc.disconnect_grace_ms,
                max_illegal_moves=tc.max_illegal_moves,
            ).with_default_move_limit(self.untimed_move_limit_ms)
        except RulesError as error:
            raise errors.refuse(Reason.INVALID_CONFIG, str(error)) from None
        if request.seat_assignment == mpb.SEAT_ASSIGNMENT_UNSPECIFIED:
            assignment = "lot"
        elif (known := _ASSIGNMENTS.get(request.seat_assignment)) is not None:
            assignment = known
        else:
            raise errors.refuse(
                Reason.INVALID_CONFIG, "seat_assignment must be SEAT_ASSIGNMENT_LOT or _CHOSEN"
            )
        creator_token = new_token()
        match = self.manager.create(
            game,
            seats,
            options,
            time_control,
            assignment,
            creator_hash=hash_token(creator_token),
            creator_address=address,
        )
        return spb.CreateMatchResponse(match=self._render(match, None), creator_token=creator_token)

    @api
    async def CancelMatch(
        self, request: spb.CancelMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> spb.CancelMatchResponse:
        """The creator cancels its waiting match (creator token)."""
        match = self.manager.cancel(request.match_id, bearer_token(context))
        return spb.CancelMatchResponse(match=self._render(match, None))

    @api
    async def JoinMatch(
        self, request: spb.JoinMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> spb.JoinMatchResponse:
        """Take a seat and hand back its token (shown once, stored hashed)."""
        match = self.manager.get(request.match_id)
        token, seat = match.join(request.player_name, request.seat - 1 if request.seat else None)
        return spb.JoinMatchResponse(token=token, seat=seat + 1, match=self._render(match, seat))

    @api
    async def ListMatches(
        self, request: spb.ListMatchesRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bytes:
        """A page of matches newest first, as a spectator (or the token's seat) sees them.

        Returns the serialized ListMatchesResponse: stored summaries are already Match
        bytes, so they are framed as they are rather than parsed and serialized again.
        """
        limit = min(request.page_size or DEFAULT_PAGE, MAX_PAGE)
        status = _STATUS_NAMES.get(request.status) if request.status else None
        game = GAME_NAMES.get(request.game) if request.game else None
        if (request.status and status is None) or (request.game and game is None):
            raise errors.refuse(Reason.BAD_FILTER, "unknown status or game filter")
        if self.lister is not None:
            page = await self.lister.page(
                status=status, game=game, limit=limit, cursor=request.page_token, token=bearer_token(context)
            )
        else:
            page = self.manager.list_page(
                status=status, game=game, limit=limit, cursor=request.page_token, token=bearer_token(context)
            )
        token = frame_field(2, page.next_cursor.encode()) if page.next_cursor else b""
        return b"".join(frame_field(1, match) for match in page.matches) + token

    @api
    async def GetMatch(
        self, request: spb.GetMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> spb.GetMatchResponse:
        """The match as the caller's seat (token) or a spectator (no token) sees it; a finished
        match from the manager's finished views when it is there (no log kept or replayed)."""
        token = bearer_token(context)
        finished = self.manager.finished_rendering(request.match_id, token)
        if finished is not None:
            out = mpb.Match.FromString(finished)
            if self.address:
                out.server_address = self.address
            return spb.GetMatchResponse(match=out)
        match = self.manager.get(request.match_id)
        viewer = match.viewer_for_token(token)
        return spb.GetMatchResponse(match=self._render(match, viewer))

    @api
    async def SubmitMove(
        self, request: spb.SubmitMoveRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> spb.SubmitMoveResponse:
        """Play a move for the token's seat."""
        match = self.manager.get(request.match_id)
        seat = self._seat(match, context)
        entry = await match.play(seat, request.move, request.ply if request.HasField("ply") else None)
        assert isinstance(entry.event, MovePlayed)
        return spb.SubmitMoveResponse(seq=entry.seq, move=entry.event.move)

    @api
    async def Resign(
        self, request: spb.ResignRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> spb.ResignResponse:
        """The token's seat resigns."""
        match = self.manager.get(request.match_id)
        seat = self._seat(match, context)
        entry = match.resign(seat)
        return spb.ResignResponse(seq=entry.seq)

    @api
    async def ClaimAbandoned(
        self, request: spb.ClaimAbandonedRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> spb.ClaimAbandonedResponse:
        """The token's seat claims the match against the seats away for its claim time."""
        match = self.manager.get(request.match_id)
        seat = self._seat(match, context)
        entry, seats = match.claim(seat)
        return spb.ClaimAbandonedResponse(seq=entry.seq, seats=seats)

    @api
    async def GetMatchRecord(
        self, request: spb.GetMatchRecordRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> spb.GetMatchRecordResponse:
        """The verifiable record of a finished match (refused while it is running)."""
        from ziggurat.core.records import match_record

        match = self.manager.get(request.match_id)
        if match.status != "finished":
            raise errors.refuse(Reason.NOT_FINISHED, "the record is available once the match is over")
        return spb.GetMatchRecordResponse(record=match_record(match))

    @api
    async def ListGames(
        self, request: spb.ListGamesRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> spb.ListGamesResponse:
        """Every game of the registry, as the games declare themselves."""
        return spb.ListGamesResponse(games=[game_info(rules) for rules in GAMES.values()])

    @api
    async def ListBuiltinBots(
        self, request: spb.ListBuiltinBotsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> spb.ListBuiltinBotsResponse:
        """The bots AddBot can seat."""
        return spb.ListBuiltinBotsResponse(
            bots=[
                spb.BuiltinBot(
                    name=info.name,
                    games=[GAME_NUMBERS[game] for game in info.games],
                    description=info.description,
                )
                for info in self.house_bots.catalogue()
            ]
        )

    @api
    async def AddBot(
        self, request: spb.AddBotRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> spb.AddBotResponse:
        """Seat a built-in bot, which the server then plays."""
        if not self.create_limiter.allow(self.peers.address_of(context)):
            raise errors.refuse(Reason.RATE_LIMITED, "too many requests from this address; slow down")
        match = self.manager.get(request.match_id)
        seat = await self.house_bots.add(match, request.bot, request.seat - 1 if request.seat else None)
        return spb.AddBotResponse(seat=seat + 1, match=self._render(match, None))

    async def WatchMatch(
        self, request: spb.WatchMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[bytes]:
        """Stream the log after ``after_seq`` as the caller may see it, until the end.

        A stream with nothing to send for :attr:`watch_heartbeat_s` seconds is sent a
        message with no events, only ``server_time_ms`` (docs/protocol.md, "Heartbeats"): a
        browser cannot see HTTP/2 pings, and a silent stream says nothing about whether the
        server still runs.

        Yields serialized WatchMatchResponse messages (see :func:`method_handlers`); the web
        port iterates this generator, the gRPC port writes it out with :meth:`watch_written`.
        """
        try:
            match = self.manager.get(request.match_id)
            viewer = match.viewer_for_token(bearer_token(context))
            subscriber = match.subscribe(request.after_seq, viewer)
        except errors.ApiError as error:
            await end_call(context, error)
            return
        if viewer is not None:
            match.connect(viewer)
        try:
            async for entries, _ in match.batches(subscriber, heartbeat=self.watch_heartbeat_s):
                if not entries:  # quiet for a while: a heartbeat, the server's clock alone
                    yield frame_server_time(WATCH_SERVER_TIME)
                    continue
                for message in framed_batches(match, entries, viewer):
                    yield message + frame_server_time(WATCH_SERVER_TIME)
        finally:
            match.unsubscribe(subscriber)
            if viewer is not None:
                match.disconnect(viewer)

    async def watch_written(
        self, request: spb.WatchMatchRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        """WatchMatch on the gRPC port: each message written with ``context.write``.

        A message yielded by a gRPC handler climbs through both interceptors' generator
        layers on its way out, once per spectator per change; a written one goes straight
        to gRPC (benchmarks/profiles/README.md: the stream path's cost per message).
        """
        async for message in self.WatchMatch(request, context):
            if not await write(context, message):
                return  # the client is gone

    async def Play(
        self, request_iterator: AsyncIterator[spb.PlayRequest], context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        """Bidirectional bot stream: events out, moves in, on one call.

        One writer (this coroutine, with ``context.write``, as WatchMatch) sends each batch
        of events together with any refusal of a move; a reader task applies the moves
        that come in. The first request comes through the guards' request iterator (it
        carries the first-message deadline); the reader takes the rest with
        ``context.read()``, one gRPC read per message instead of a climb through every
        guard's generator layer. The request iterator is closed when the stream ends
        (:func:`~ziggurat.api.status_guard.close_requests`: else gRPC's call is left in
        a reference cycle).
        """
        try:
            await self._play(request_iterator, context)
        finally:
            await close_requests(request_iterator)

    async def _play(
        self, request_iterator: AsyncIterator[spb.PlayRequest], context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        """The Play stream itself: its first request, then the writer with its reader task."""
        try:
            first = await anext(request_iterator)
        except StopAsyncIteration:
            return
        try:
            match = self.manager.get(first.match_id)
            seat = match.seat_for_token(bearer_token(context))
            subscriber = match.subscribe(first.after_seq, seat)
        except errors.ApiError as error:
            await end_call(context, error)
            return
        match.connect(seat)
        presence = _SeatPresence(match, seat)
        taken = asyncio.Event()  # set whenever the writer takes the refusals waiting in the outbox
        reader = asyncio.create_task(
            self._play_reader(match, seat, subscriber, first, context, presence=presence, taken=taken)
        )
        try:
            async for entries, extras in match.batches(subscriber):
                if extras:
                    taken.set()
                for message in framed_batches(match, entries, seat):
                    if not await write(context, message + frame_server_time(PLAY_SERVER_TIME)):
                        return  # the client is gone
                for item in extras:
                    if isinstance(item, errors.ApiError):  # the reader failed: end the stream, clearly
                        await end_call(context, item)
                        return
                    # move_rejected is a singular field: two in one message would be merged
                    # into one by the receiver, so every refusal gets a response of its own.
                    rejected = frame_field(2, item.SerializeToString())
                    if not await write(context, rejected + frame_server_time(PLAY_SERVER_TIME)):
                        return
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reader
            match.unsubscribe(subscriber)
            presence.leave()

    async def _play_reader(
        self,
        match: Match,
        seat: int,
        subscriber: Subscriber,
        first: spb.PlayRequest,
        context: grpc.aio.ServicerContext[Any, Any],
        *,
        presence: _SeatPresence,
        taken: asyncio.Event,
    ) -> None:
        """Apply every move that arrives on a Play stream; refusals go back as MoveRejected.

        When the client closes its sending side the seat counts as disconnected (it can
        no longer move) while its events keep flowing. A stream that cannot be read any
        more ends with a status; nothing ends silently, and failures are logged.

        Backpressure: while :data:`MAX_PENDING_REFUSALS` refusals wait for the writer (which
        waits on the client's flow control when the client does not read), the reader reads
        nothing more; the client's own sends then wait on the server's flow control. A stream
        thus holds at most twice that many refusals (those waiting, and those being written).
        """
        request: spb.PlayRequest | None = first
        while request is not None:
            while len(subscriber.outbox) >= MAX_PENDING_REFUSALS:
                taken.clear()
                await taken.wait()
            if request.move:
                try:
                    if not self.limiter.allow(f"{match.match_id}/{seat}"):
                        raise errors.refuse(Reason.RATE_LIMITED, "too many requests for this seat; slow down")
                    await match.play(seat, request.move, request.ply if request.HasField("ply") else None)
                except errors.ApiError as error:
                    # A refusal's traceback and context (the rules' error) hold the rules'
                    # frames, one of them the refusal itself: dropped here, so a refused move
                    # leaves no reference cycle for the garbage collector.
                    error.__traceback__ = error.__context__ = None
                    self._reject(subscriber, request.move, error)
                except Exception:
                    log.exception(
                        "match %s seat %d: a move on a Play stream failed", match.match_id, seat + 1
                    )
                    failure = errors.refuse(Reason.SERVER_ERROR, "the server could not process this move")
                    self._reject(subscriber, request.move, failure)
            try:
                request = await read_request(context)
            except (asyncio.CancelledError, AbortError):
                raise
            except Exception as error:
                log.warning("match %s seat %d: Play stream unreadable: %r", match.match_id, seat + 1, error)
                subscriber.outbox.append(
                    errors.refuse(Reason.SERVER_ERROR, "the Play stream could not be read")
                )
                subscriber.wake()
                return
        presence.leave()  # half-closed: the seat cannot move on this stream any more

    @staticmethod
    def _reject(subscriber: Subscriber, move: str, error: errors.ApiError) -> None:
        subscriber.outbox.append(spb.MoveRejected(move=move[:64], reason=error.reason, message=error.message))
        subscriber.wake()


class _SeatPresence:
    """A Play stream's share in its seat's connection count, given back exactly once
    (when the client half-closes, or when the stream ends).
    """

    __slots__ = ("_match", "_seat")

    def __init__(self, match: Match, seat: int) -> None:
        self._match: Match | None = match
        self._seat = seat

    def leave(self) -> None:
        if self._match is not None:
            self._match.disconnect(self._seat)
            self._match = None


def method_handlers(servicer: MatchServicer) -> dict[str, grpc.RpcMethodHandler[Any, Any]]:
    """The MatchService method handlers by method name; the two streams and ListMatches send
    pre-serialized bytes.

    Streaming responses are assembled from per-audience cached event bytes
    (:func:`~ziggurat.core.render.frame_events`) and ListMatches from stored
    summaries, so their serializer is the identity; every other method uses the
    generated message serializers.
    """
    generic: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
    unary: dict[str, tuple[Any, Any]] = {
        "CreateMatch": (spb.CreateMatchRequest, spb.CreateMatchResponse),
        "CancelMatch": (spb.CancelMatchRequest, spb.CancelMatchResponse),
        "JoinMatch": (spb.JoinMatchRequest, spb.JoinMatchResponse),
        "ListMatches": (spb.ListMatchesRequest, spb.ListMatchesResponse),
        "GetMatch": (spb.GetMatchRequest, spb.GetMatchResponse),
        "SubmitMove": (spb.SubmitMoveRequest, spb.SubmitMoveResponse),
        "Resign": (spb.ResignRequest, spb.ResignResponse),
        "ClaimAbandoned": (spb.ClaimAbandonedRequest, spb.ClaimAbandonedResponse),
        "GetMatchRecord": (spb.GetMatchRecordRequest, spb.GetMatchRecordResponse),
        "ListBuiltinBots": (spb.ListBuiltinBotsRequest, spb.ListBuiltinBotsResponse),
        "AddBot": (spb.AddBotRequest, spb.AddBotResponse),
        "ListGames": (spb.ListGamesRequest, spb.ListGamesResponse),
    }
    for name, (request_type, response_type) in unary.items():
        generic[name] = grpc.unary_unary_rpc_method_handler(
            getattr(servicer, name),
            request_deserializer=request_type.FromString,
            response_serializer=_identity if name in _PRESERIALIZED else response_type.SerializeToString,
        )
    generic["WatchMatch"] = grpc.unary_stream_rpc_method_handler(
        servicer.watch_written,
        request_deserializer=spb.WatchMatchRequest.FromString,
        response_serializer=_identity,
    )
    generic["Play"] = grpc.stream_stream_rpc_method_handler(
        servicer.Play,
        request_deserializer=spb.PlayRequest.FromString,
        response_serializer=_identity,
    )
    return generic


# Unary methods whose handler returns the response already serialized.
_PRESERIALIZED = frozenset({"ListMatches"})


def _identity(data: bytes) -> bytes:
    return data
