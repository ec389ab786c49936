"""Run a bot as a remote bot: connect once, play every seat the server hands it.

This is how a bot joins tournaments it does not launch itself (and how ziggurat
hosts its built-in bots). The connection is re-established with backoff when it
drops; seats already being played carry on independently.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

import grpc

from ziggurat_client.bot import Bot
from ziggurat_client.client import MatchHandle, ZigguratClient
from ziggurat_client.errors import RETRYABLE_CODES, ZigguratError
from ziggurat_client.games import game_enum
from ziggurat_client.runner import Backoff, SeatRunner
from ziggurat_client.v1 import bot_service_pb2 as bpb
from ziggurat_client.v1 import bot_service_pb2_grpc as bgrpc

log = logging.getLogger("ziggurat_client.remote")


class RemoteBot:
    """Connects under ``name`` and plays assigned seats with ``make_bot(assignment)`` (one bot per seat)."""

    def __init__(
        self,
        client: ZigguratClient,
        make_bot: Callable[[bpb.Assignment], Bot],
        *,
        name: str,
        token: str,
        games: Sequence[str] = (),
        max_matches: int = 1,
        on_registered: Callable[[], None] | None = None,
    ) -> None:
        self.client = client
        self.make_bot = make_bot
        self.name = name
        self.token = token
        self.games = list(games)
        self.max_matches = max_matches
        self.on_registered = on_registered
        self.played: list[str] = []  # match ids, in order of assignment
        self._tasks: set[asyncio.Task[None]] = set()
        self._stub = bgrpc.BotServiceStub(client.channel)

    @property
    def busy(self) -> bool:
        """True while a handed seat is being played."""
        return bool(self._tasks)

    async def run(self, *, backoff: Backoff | None = None) -> None:
        """Serve assignments until cancelled; non-retryable refusals (BAD_TOKEN…) are raised."""
        backoff = backoff or Backoff(attempts=1_000_000)
        while True:
            try:
                await self._session(backoff)
            except grpc.aio.AioRpcError as error:
                if error.code() not in RETRYABLE_CODES:
                    raise ZigguratError.from_rpc(error) from None
                log.info("bot %s: connection lost (%s); reconnecting", self.name, error.code().name)
            await asyncio.sleep(backoff.next_delay())

    async def _session(self, backoff: Backoff) -> None:
        request = bpb.ConnectBotRequest(
            name=self.name, games=[game_enum(g) for g in self.games], max_matches=self.max_matches
        )
        call = self._stub.ConnectBot(request, metadata=(("authorization", f"Bearer {self.token}"),))
        try:
            async for response in call:
                backoff.reset()
                if response.WhichOneof("kind") == "registered":
                    log.info("bot %s: connected, waiting for seats", self.name)
                    if self.on_registered is not None:
                        self.on_registered()
                    continue
                assignment = response.assignment
                self.played.append(assignment.match_id)
                task = asyncio.create_task(self._play(assignment))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        finally:
            call.cancel()

    async def _play(self, assignment: bpb.Assignment) -> None:
        handle = MatchHandle(assignment.match_id, assignment.seat, assignment.token)
        try:
            ended = await SeatRunner(self.client, handle, self.make_bot(assignment)).run()
            log.info("bot %s: match %s over, ranks %s", self.name, handle.match_id, list(ended.outcome.ranks))
        except ZigguratError as error:
            log.warning("bot %s: match %s: %s", self.name, handle.match_id, error)
        except Exception as error:  # the bot's own bug: its seat resigns, the other seats play on
            log.warning(
                "bot %s: match %s: the bot failed (%s: %s); resigning its seat",
                self.name,
                handle.match_id,
                type(error).__name__,
                error,
            )
            log.debug("the bot's failure", exc_info=True)
            try:
                await self.client.resign(handle)
            except ZigguratError as refusal:  # already over, or the server is gone
                log.info("bot %s: match %s: could not resign: %s", self.name, handle.match_id, refusal)
