"""The BotService servicer: remote bots connect and receive seat assignments."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import grpc

from ziggurat.api.bots import BotRegistry, Invitation
from ziggurat.api.guard import bearer_token
from ziggurat.api.peer import Peers
from ziggurat.api.servicer import api
from ziggurat.api.status_guard import end_call
from ziggurat.core.manager import MatchManager
from ziggurat.core.match import Match
from ziggurat.core.render import render_match
from ziggurat.v1 import bot_service_pb2 as bpb
from ziggurat.v1 import bot_service_pb2_grpc as bgrpc
from ziggurat.v1 import game_pb2 as gpb
from ziggurat.wire import errors
from ziggurat.wire.codec import GAME_ENUMS, GAME_NAMES

MAX_MATCHES_PER_BOT = 1000
# How soon a withdrawal of an expired invitation that the database refused is tried again.
RETRY_WITHDRAWAL_S = 5.0


class BotServicer(bgrpc.BotServiceServicer):
    """gRPC front of the :class:`BotRegistry`."""

    def __init__(self, registry: BotRegistry, manager: MatchManager, peers: Peers | None = None) -> None:
        self.registry = registry
        self.manager = manager
        # Each call's client address, also behind the gate (the per-address connect rate).
        self.peers = peers if peers is not None else Peers()
        self._releases: set[asyncio.Task[None]] = set()

    async def ConnectBot(
        self, request: bpb.ConnectBotRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[bpb.ConnectBotResponse]:
        """Register the bot, acknowledge, then stream assignments until it disconnects."""
        try:
            unknown = [g for g in request.games if g not in GAME_NAMES]
            if unknown:
                known = ", ".join(gpb.Game.Name(number) for number in GAME_ENUMS.values())
                raise errors.invalid("INVALID_CONFIG", f"games must be among {known}")
            if request.max_matches > MAX_MATCHES_PER_BOT:
                raise errors.invalid("INVALID_CONFIG", f"max_matches is at most {MAX_MATCHES_PER_BOT}")
            games = [GAME_NAMES[g] for g in request.games]
            connection = self.registry.connect(
                request.name,
                bearer_token(context),
                games,
                request.max_matches or 1,
                peer=self.peers.address_of(context),
            )
        except errors.ApiError as error:
            await end_call(context, error)
            return
        try:
            yield bpb.ConnectBotResponse(registered=bpb.BotRegistered(name=connection.name))
            while True:
                assignment = await connection.queue.get()
                if assignment is None:  # the name's token holder connected again: this stream ends
                    return
                yield bpb.ConnectBotResponse(assignment=assignment)
        finally:
            self.registry.disconnect(connection)

    async def ListBots(
        self, request: bpb.ListBotsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bpb.ListBotsResponse:
        """The connected bots."""
        from ziggurat.wire.codec import GAME_ENUMS

        out = bpb.ListBotsResponse()
        for connection in sorted(self.registry.connected.values(), key=lambda c: c.name):
            out.bots.add(
                name=connection.name,
                games=[GAME_ENUMS[g] for g in sorted(connection.games)],
                max_matches=connection.max_matches,
                active_matches=len(connection.active),
            )
        return out

    @api
    async def InviteBot(
        self, request: bpb.InviteBotRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bpb.InviteBotResponse:
        """Seat a connected bot in a waiting match (as JoinMatch would) and hand it the seat.

        Only the match's creator may (its creator token): a bot's seats are not for anyone
        to fill. The checks come first and nothing awaits between them, the join and the
        assignment, so a refusal changes nothing and a join is always followed by the
        bot's Assignment.
        """
        match = self.manager.get(request.match_id)
        self.manager.check_creator(match.match_id, bearer_token(context), "InviteBot")
        connection = self.registry.invitable(request.bot_name, match.game)
        token, seat = match.join(connection.name, request.seat - 1 if request.seat else None)
        public = render_match(match, None)
        assignment = bpb.Assignment(
            match_id=match.match_id,
            seat=seat + 1,
            token=token,
            config=public.config,
            time_control=public.time_control,
        )
        invitation = self.registry.invite(connection, assignment, match)
        task = asyncio.create_task(self._follow_invitation(invitation))
        self._releases.add(task)
        task.add_done_callback(self._releases.discard)
        return bpb.InviteBotResponse(seat=seat + 1, match=public)

    async def _follow_invitation(self, invitation: Invitation) -> None:
        """The invited bot counts against its max_matches until the match ends (or the server
        stops); an invitation still pending after the registry's TTL is withdrawn (the match
        cancelled), tried again a little later if the database refused it."""
        match = invitation.match
        over = asyncio.ensure_future(_until_over(match))
        try:
            wait = self.registry.invitation_ttl_s
            while not over.done():
                await asyncio.wait({over}, timeout=wait)
                if over.done() or self.registry.expire(invitation):
                    break
                wait = min(self.registry.invitation_ttl_s, RETRY_WITHDRAWAL_S)
            await over
        finally:
            over.cancel()
            self.registry.release(invitation.bot, match.match_id)


async def _until_over(match: Match) -> None:
    """Return when the match has ended (or the server stops and wakes its followers)."""
    async for _ in match.follow(match.last_seq):
        pass
