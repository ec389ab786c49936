"""Run a :class:`~ziggurat_client.bot.Bot` for one seat, surviving dropped connections.

The runner keeps the Play stream open, builds a :class:`Turn` for every
``turn_started`` of its seat, and sends the bot's move with the ply guard. When
the stream drops it reconnects with exponential backoff and resumes from the
last event it handled, so the bot misses nothing and answers each turn exactly
once: a turn whose move was not yet acknowledged is replayed, and the same move
(remembered by ply) is sent again; the ply guard makes a duplicate harmless.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import grpc

from ziggurat_client.bot import Bot, Turn
from ziggurat_client.client import MatchHandle, ZigguratClient
from ziggurat_client.errors import RETRYABLE_CODES, ZigguratError
from ziggurat_client.games import config_strings
from ziggurat_client.v1 import game_pb2, match_pb2
from ziggurat_client.v1 import match_service_pb2 as spb

log = logging.getLogger("ziggurat_client.runner")

RETRYABLE = RETRYABLE_CODES


@dataclass
class Backoff:
    """Exponential backoff with jitter between reconnection attempts."""

    initial: float = 0.1
    maximum: float = 5.0
    attempts: int = 30
    _delay: float = field(default=0.0, init=False)

    def reset(self) -> None:
        """A successful connection resets the delay."""
        self._delay = 0.0

    def next_delay(self) -> float:
        """The next wait, doubling up to ``maximum``, with +/-50 % jitter."""
        self._delay = self.initial if not self._delay else min(self.maximum, self._delay * 2)
        return self._delay * random.uniform(0.5, 1.5)


class SeatRunner:
    """Plays one seat of one match with ``bot`` until the match ends."""

    def __init__(
        self,
        client: ZigguratClient,
        handle: MatchHandle,
        bot: Bot,
        *,
        on_event: Callable[[match_pb2.Event], None] | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        self.client = client
        self.handle = handle
        self.bot = bot
        self.on_event = on_event
        self.backoff = backoff or Backoff()
        self.last_seq = 0  # newest event handled
        self.view: game_pb2.GameView | None = None
        self.history: list[str] = []
        self.rejections: list[spb.MoveRejected] = []
        self._chosen: dict[int, str] = {}
        self._pending_turn_seq: int | None = None
        self._config: tuple[str, int, dict[str, str]] | None = None

    async def run(self) -> match_pb2.MatchEndedEvent:
        """Play to the end; raises ZigguratError on a non-retryable refusal."""
        match = await self.client.get_match(self.handle.match_id, self.handle)
        self._config = config_strings(match.config)
        failures = 0
        while True:
            try:
                ended = await self._session()
            except ZigguratError as error:
                if error.code not in RETRYABLE:
                    raise
                log.info("seat %d: stream lost (%s); reconnecting", self.handle.seat, error.code.name)
                ended = None
            if ended is not None:
                return ended
            failures += 1
            if failures > self.backoff.attempts:
                raise ZigguratError(
                    grpc.StatusCode.UNAVAILABLE, "GAVE_UP", "could not reconnect to the server"
                )
            await asyncio.sleep(self.backoff.next_delay())

    async def _session(self) -> match_pb2.MatchEndedEvent | None:
        resume = self.last_seq if self._pending_turn_seq is None else self._pending_turn_seq - 1
        call = self.client.stub.Play(metadata=self.handle.metadata)  # type: ignore[call-arg]
        try:
            await call.write(spb.PlayRequest(match_id=self.handle.match_id, after_seq=resume))
            async for response in call:
                self.backoff.reset()
                if response.HasField("move_rejected"):
                    self.rejections.append(response.move_rejected)
                    log.warning("seat %d: move refused: %s", self.handle.seat, response.move_rejected.message)
                for event in response.events:
                    ended = await self._handle(call, event)
                    if ended is not None:
                        return ended
        except grpc.aio.AioRpcError as error:
            raise ZigguratError.from_rpc(error) from None
        except asyncio.InvalidStateError:
            # The call ended (connection lost) while we were writing a move: reconnect.
            log.info("seat %d: stream closed while sending a move; reconnecting", self.handle.seat)
        finally:
            call.cancel()
        return None

    async def _handle(self, call: Any, event: match_pb2.Event) -> match_pb2.MatchEndedEvent | None:
        fresh = event.seq > self.last_seq
        self.last_seq = max(self.last_seq, event.seq)
        if fresh and self.on_event is not None:
            self.on_event(event)
        kind = event.WhichOneof("kind")
        if kind == "match_started":
            self.view = event.match_started.view
        elif kind == "move_played":
            self.view = event.move_played.view
            if fresh:
                self.history.append(event.move_played.move)
            if self._pending_turn_seq is not None and event.seq > self._pending_turn_seq:
                self._pending_turn_seq = None
        elif kind == "turn_started" and event.turn_started.seat == self.handle.seat:
            self._pending_turn_seq = event.seq
            move = self._chosen.get(event.turn_started.ply)
            if move is None:
                move = await self._choose(event.turn_started)
                self._chosen = {event.turn_started.ply: move}
            await call.write(spb.PlayRequest(move=move, ply=event.turn_started.ply))
        elif kind == "match_ended":
            return event.match_ended
        return None

    async def _choose(self, turn_event: match_pb2.TurnStartedEvent) -> str:
        assert self._config is not None
        game, seats, options = self._config
        view = self.view if self.view is not None else game_pb2.GameView()
        turn = Turn(
            game=game,
            options=options,
            seats=seats,
            seat=self.handle.seat,
            ply=turn_event.ply,
            view=view,
            legal_moves=tuple(turn_event.legal_moves),
            time_left_ms=turn_event.time_left_ms,
            history=tuple(self.history),
        )
        result = self.bot.choose(turn)
        move = result if isinstance(result, str) else await result
        return move
