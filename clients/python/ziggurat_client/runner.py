"""Run a :class:`~ziggurat_client.bot.Bot` for one seat, surviving dropped connections.

The runner keeps the Play stream open, follows the match's events, and asks the bot for
a move **only for the turn in progress**:

* When it (re)connects it first reads the match's newest sequence number (GetMatch) and
  then catches up on the log from the last event it handled (``after_seq``). While catching
  up it answers nothing: a TurnStarted in the backlog is remembered as the pending turn
  and forgotten as soon as a later MovePlayed shows the turn is over. Once the newest event
  is in, the pending turn — the last TurnStarted of its seat with no move after it — is the
  present one, and only that turn is answered, with its ply as the guard (a move that
  arrives after the turn has moved on is refused as STALE_PLY and changes nothing).
* A move whose fate is unknown (the stream died while it was sent) is sent again, the same
  move for the same ply, after the reconnection; the ply guard makes a duplicate harmless.
* A move refused as illegal or malformed is reported (``rejections``, ``on_rejected``) and the
  bot is asked again, a few times per turn, so one bad answer does not stall the match.
* The connection is retried with exponential backoff and jitter for as long as the match is
  live. The failure budget (``Backoff.attempts``) counts *consecutive* failed attempts: an
  attempt the server answered resets it, so any number of server
  restarts, each followed by a working reconnection, is survived. Refusals (a bad token, a
  match that does not exist) are raised at once as :class:`ZigguratError`.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from time import monotonic
from typing import Any

import grpc

from ziggurat_client.bot import Bot, Turn
from ziggurat_client.client import ELSEWHERE, MAX_REDIRECTS, MatchHandle, ZigguratClient
from ziggurat_client.errors import RETRYABLE_CODES, ZigguratError
from ziggurat_client.games import config_strings
from ziggurat_client.v1 import game_pb2, match_pb2
from ziggurat_client.v1 import match_service_pb2 as spb

log = logging.getLogger("ziggurat_client.runner")

RETRYABLE = RETRYABLE_CODES

TURN_OVER_REASONS = frozenset(
    {"STALE_PLY", "NOT_YOUR_TURN", "GAME_OVER", "TIME_EXPIRED", "SEAT_FORFEITED", "NOT_STARTED"}
)
"""MoveRejected reasons that mean the turn moved on: nothing to answer again."""

MAX_RETRIES_PER_TURN = 3
"""How many times the bot is asked again after its move for one turn was refused."""


@dataclass
class Backoff:
    """Exponential backoff with jitter between reconnection attempts.

    ``attempts`` is the budget of *consecutive* failed attempts (None: unlimited); the
    runner resets it after every session in which the server answered.
    """

    initial: float = 0.1
    maximum: float = 5.0
    attempts: int | None = 120
    _delay: float = field(default=0.0, init=False)

    def reset(self) -> None:
        """A working connection resets the delay."""
        self._delay = 0.0

    def next_delay(self) -> float:
        """The next wait, doubling up to ``maximum``, with +/-50 % jitter."""
        self._delay = self.initial if not self._delay else min(self.maximum, self._delay * 2)
        return self._delay * random.uniform(0.5, 1.5)


class FunctionBot:
    """A bot made of one function ``choose(turn) -> move`` (what ``ZigguratClient.play`` takes)."""

    def __init__(self, choose: Callable[[Turn], str | Awaitable[str]], name: str = "function") -> None:
        self.name = name
        self._choose = choose

    def choose(self, turn: Turn) -> str | Awaitable[str]:
        """Delegate to the function."""
        return self._choose(turn)


class SeatRunner:
    """Plays one seat of one match with ``bot`` until the match ends."""

    def __init__(
        self,
        client: ZigguratClient,
        handle: MatchHandle,
        bot: Bot,
        *,
        on_event: Callable[[match_pb2.Event], None] | None = None,
        on_rejected: Callable[[spb.MoveRejected], None] | None = None,
        backoff: Backoff | None = None,
        after_seq: int = 0,
    ) -> None:
        self.client = client
        self.handle = handle
        self.bot = bot
        self.on_event = on_event
        self.on_rejected = on_rejected
        self.backoff = backoff or Backoff()
        self.last_seq = after_seq  # newest event handled
        self.view: game_pb2.GameView | None = None
        self.history: list[str] = []
        self.rejections: list[spb.MoveRejected] = []
        self.sessions = 0  # Play streams opened (1 + reconnections)
        self.answered: list[int] = []  # plies the bot was asked to move for, in order
        self._pending: match_pb2.TurnStartedEvent | None = None
        self._pending_time_ms = 0  # server time of the pending TurnStarted
        self._pending_live = False  # received while caught up (its clock reading is fresh)
        self._pending_received = 0.0  # time.monotonic() when the pending TurnStarted arrived
        # This machine's clock minus the server's, from the newest PlayResponse.server_time_ms
        # (0 until one comes, or from a server without it): a backlog turn's elapsed time is
        # then measured on the server's clock, whatever this machine's clock says.
        self._server_offset_ms = 0
        self._chosen: dict[int, str] = {}  # ply -> move chosen for it (re-sent after a drop)
        self._sent: set[int] = set()  # plies answered on the current stream
        self._retries: dict[int, int] = {}
        self._config: tuple[str, int, dict[str, str]] | None = None
        self._answered = False  # the server answered the current attempt

    async def run(self) -> match_pb2.MatchEndedEvent:
        """Play to the end; raises ZigguratError on a refusal or when the budget is spent."""
        failures = 0
        redirects = 0
        while True:
            self._answered = False
            try:
                ended = await self._session()
            except ZigguratError as error:
                if error.reason == ELSEWHERE and redirects < MAX_REDIRECTS:
                    # Another worker owns the match: go there at once (a few times in a row;
                    # then with backoff, as for any failure: the owner may still be starting).
                    redirects += 1
                    self.client.learn_route(self.handle.match_id, error.metadata.get("address", ""))
                    continue
                if error.reason == ELSEWHERE:
                    self.client.learn_route(self.handle.match_id, error.metadata.get("address", ""))
                elif error.code not in RETRYABLE:
                    raise
                # The owner's address stopped answering: the next attempt asks the public one.
                match_id = self.handle.match_id
                self.client.forget_route(match_id, self.client.routes.get(match_id, ""), error)
                log.info("seat %d: stream lost (%s); reconnecting", self.handle.seat, error.code.name)
                ended = None
            if ended is not None:
                return ended
            if self._answered:  # the server answered this attempt: failures start again from 0
                failures = redirects = 0
                self.backoff.reset()
            failures += 1
            if self.backoff.attempts is not None and failures > self.backoff.attempts:
                raise ZigguratError(
                    grpc.StatusCode.UNAVAILABLE,
                    "GAVE_UP",
                    f"could not reconnect to the server ({failures - 1} attempts in a row failed)",
                )
            await asyncio.sleep(self.backoff.next_delay())

    async def _session(self) -> match_pb2.MatchEndedEvent | None:
        """One attempt: GetMatch, then a Play stream; the end if it came."""
        match = await self.client.get_match(self.handle.match_id, self.handle)
        if self._config is None:
            self._config = config_strings(match.config)
        head = match.last_seq  # everything up to here is the backlog
        self.sessions += 1
        self._sent.clear()
        # The server answered: this attempt worked, whatever happens to the stream later. (A
        # resumed stream may deliver nothing for a long time: connection changes are not events.)
        self._answered = True
        stub = self.client.stub_for(self.handle.match_id)
        call = stub.Play(metadata=self.handle.metadata)  # type: ignore[call-arg]
        try:
            await call.write(spb.PlayRequest(match_id=self.handle.match_id, after_seq=self.last_seq))
            caught_up = self.last_seq >= head
            if caught_up:
                await self._answer(call)
            async for response in call:
                if response.server_time_ms:
                    self._server_offset_ms = int(time.time() * 1000) - response.server_time_ms
                if response.HasField("move_rejected"):
                    self._rejected(response.move_rejected)
                for event in response.events:
                    ended = self._apply(event, live=caught_up)
                    if ended is not None:
                        return ended
                caught_up = caught_up or self.last_seq >= head
                if caught_up:
                    await self._answer(call)
        except grpc.aio.AioRpcError as error:
            raise ZigguratError.from_rpc(error) from None
        except asyncio.InvalidStateError:
            # The call ended (connection lost) while we were writing a move: reconnect.
            log.info("seat %d: stream closed while sending a move; reconnecting", self.handle.seat)
        finally:
            call.cancel()
        return None

    def _apply(self, event: match_pb2.Event, *, live: bool) -> match_pb2.MatchEndedEvent | None:
        """Fold one event into what the runner knows; never answers anything itself."""
        if event.seq <= self.last_seq:
            return None  # already handled (a resumed stream never repeats, but be safe)
        self.last_seq = event.seq
        if self.on_event is not None:
            self.on_event(event)
        kind = event.WhichOneof("kind")
        if kind == "match_started":
            self.view = event.match_started.view
        elif kind == "move_played":
            self.view = event.move_played.view
            self.history.append(event.move_played.move)
            self._pending = None  # whoever moved, the turn we may have seen is over
        elif kind == "turn_started":
            mine = event.turn_started.seat == self.handle.seat
            self._pending = event.turn_started if mine else None
            self._pending_time_ms, self._pending_live = event.time_ms, live
            self._pending_received = monotonic()
        elif kind == "match_ended":
            self._pending = None
            return event.match_ended
        return None

    def _rejected(self, rejected: spb.MoveRejected) -> None:
        self.rejections.append(rejected)
        log.warning("seat %d: move %r refused: %s", self.handle.seat, rejected.move, rejected.message)
        if self.on_rejected is not None:
            self.on_rejected(rejected)
        turn = self._pending
        if turn is None or rejected.reason in TURN_OVER_REASONS:
            return
        if self._chosen.get(turn.ply) == rejected.move:
            retries = self._retries.get(turn.ply, 0)
            if retries < MAX_RETRIES_PER_TURN:
                self._retries[turn.ply] = retries + 1
                self._chosen.pop(turn.ply, None)  # ask the bot again
                self._sent.discard(turn.ply)

    async def _answer(self, call: Any) -> None:
        """Send the move for the present turn, if it is this seat's and not yet sent here."""
        turn = self._pending
        if turn is None or turn.ply in self._sent:
            return
        move = self._chosen.get(turn.ply)
        if move is None:
            self.answered.append(turn.ply)
            move = await self._choose(turn)
            self._chosen = {turn.ply: move}
        self._sent.add(turn.ply)
        await call.write(spb.PlayRequest(move=move, ply=turn.ply))

    def turn(self, turn_event: match_pb2.TurnStartedEvent) -> Turn:
        """The :class:`Turn` the bot sees for a TurnStarted of this seat."""
        assert self._config is not None
        game, seats, options = self._config
        time_left = turn_event.time_left_ms
        received = self._pending_received  # a live turn's clock read time_left_ms on arrival
        if time_left and not self._pending_live:
            # Read from the backlog: the clock has been running since the event (both
            # instants on the server's clock).
            server_now = int(time.time() * 1000) - self._server_offset_ms
            elapsed = max(0, server_now - self._pending_time_ms)
            time_left = max(1, time_left - elapsed)
            received = monotonic()  # the clock reading just computed is as of now
        return Turn(
            game=game,
            options=options,
            seats=seats,
            seat=self.handle.seat,
            ply=turn_event.ply,
            view=self.view if self.view is not None else game_pb2.GameView(),
            legal_moves=tuple(turn_event.legal_moves),
            time_left_ms=time_left,
            history=tuple(self.history),
            received=received,
        )

    async def _choose(self, turn_event: match_pb2.TurnStartedEvent) -> str:
        result = self.bot.choose(self.turn(turn_event))
        return result if isinstance(result, str) else await result
