"""Play a seat with a program that speaks the stdio protocol (docs/stdio-protocol.md).

:class:`StdioBot` is a :class:`~ziggurat_client.bot.Bot`: ``SeatRunner`` drives it like
any Python bot, and it turns each turn into ``moves``/``position``/``legal``/``go`` lines
and the program's ``move`` answer back into a move. A tournament needs a program's
misbehaviour to end in a decision, never a stalled match, so every failure becomes a
:class:`Verdict`: refused answers are counted and, at the limit, ``choose`` raises
:class:`BotFailureError`; :func:`play_seat` then resigns the seat so the others play on.

Typical use::

    async with StdioBot(["./mybot"]) as bot:          # spawns it and does the handshake
        handle = await client.join(match_id, bot.name)
        verdict = await play_seat(client, handle, bot)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from types import TracebackType

from ziggurat.rules.core import RulesError
from ziggurat.rules.registry import GAMES
from ziggurat.stdio.process import BotExitedError, BotProcess, LineTooLongError
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.wire.codec import config_from_proto
from ziggurat_client.bot import Turn
from ziggurat_client.client import MatchHandle, ZigguratClient, ZigguratError
from ziggurat_client.runner import SeatRunner

log = logging.getLogger("ziggurat.stdio")

PROTOCOL_VERSION = 1
MAX_NAME = 64  # the server's limit on player names
HIDDEN_MOVE = "?"  # a move this seat may not see (a game with private moves): one word all the same


def canonical_answer(turn: Turn, move: str) -> str | None:
    """The canonical form of ``move`` in the turn's position, or None when it has none.

    A notation may write one move several ways (Pylos: two recoveries in either order), and the
    server accepts any of them, so the bridge must too. The rules say which form is canonical,
    from a state: in a game without hidden information a seat's position text is the whole
    position (the contract suite checks it), so the state is read from it. A seat of a game with
    hidden information sees only part of the position, so there only the listed moves are
    accepted (Kabaleo's and phantom tic-tac-toe's notations are strict: a legal move is written
    one way).
    """
    rules = GAMES.get(turn.game)
    if rules is None or rules.hidden_information:
        return None
    try:
        state = rules.parse_position(turn.view.position, rules.parse_config(turn.options, turn.seats))
        return rules.canonical_move(state, move)
    except RulesError:
        return None


class Verdict(StrEnum):
    """How a bridged program's game ended, from the bridge's point of view."""

    FINISHED = "finished"  # played to the end of the game, whatever the result
    ILLEGAL = "illegal"  # too many refused answers; the seat was resigned
    CRASHED = "crashed"  # exited or closed a pipe while needed; the seat was resigned
    TIMEOUT = "timeout"  # did not answer in time; the seat was resigned
    DISCONNECTED = "disconnected"  # the bridge lost the server


class HandshakeError(Exception):
    """The program could not be started or does not speak this protocol."""


class BotFailureError(Exception):
    """Raised out of ``choose`` when the program forfeits; ``verdict`` says why."""

    def __init__(self, verdict: Verdict, detail: str) -> None:
        super().__init__(f"{verdict}: {detail}")
        self.verdict = verdict
        self.detail = detail


@dataclass(frozen=True, slots=True)
class BridgeSettings:
    """Tournament policy knobs (the defaults are what ``ziggurat bridge`` uses)."""

    max_illegal: int = 3  # refused answers per game before the seat is resigned
    handshake_timeout: float = 10.0  # seconds to answer ``ziggurat 1``
    grace_ms: int = 1000  # slack beyond the server's time left before a bot is "hung"
    move_timeout_ms: int = 0  # bound on a move in untimed matches; 0 = none
    quit_grace: float = 2.0  # seconds between ``quit`` and a kill


def child_environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The program's environment: ours without ZIGGURAT_TOKEN (the bridge holds the seat)."""
    env = dict(os.environ if base is None else base)
    env.pop("ZIGGURAT_TOKEN", None)
    return env


def _printable(text: str, limit: int) -> str:
    """Text safe to quote in one protocol or log line."""
    clean = "".join(ch if ch.isprintable() else "?" for ch in text)
    return clean if len(clean) <= limit else clean[: limit - 3] + "..."


def termination_word(termination: int) -> str:
    """``TERMINATION_PYRAMID_COMPLETE`` → ``pyramid_complete`` (the ``gameover`` field)."""
    try:
        name = game_pb2.Termination.Name(termination)  # type: ignore[arg-type]
    except ValueError:
        return "unspecified"
    return name.removeprefix("TERMINATION_").lower()


class StdioBot:
    """A :class:`~ziggurat_client.bot.Bot` played by a subprocess over stdin/stdout."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        settings: BridgeSettings | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> None:
        self.settings = settings or BridgeSettings()
        self.name = os.path.basename(argv[0]) if argv else "bot"
        self.process = BotProcess(argv, env=child_environment(env), cwd=cwd, label=self.name)
        self.verdict: Verdict | None = None
        self.detail = ""
        self.refused = 0  # refused answers so far
        self._begun = False
        self._known = 0  # moves the program has been told of (or played itself)
        self._pending: tuple[int, str] | None = None  # (ply, move) of its last answer

    async def __aenter__(self) -> StdioBot:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Spawn the program and do the handshake; raises HandshakeError (program closed)."""
        try:
            await self.process.start()
        except OSError as error:
            raise HandshakeError(f"cannot start {self.process.argv[0]}: {error}") from None
        try:
            self.name = await self._handshake()
        except HandshakeError:
            await self.process.close(None, grace=0.1)  # it cannot play: no point in waiting
            raise
        self.process.label = self.name

    async def _handshake(self) -> str:
        hello = f"ziggurat {PROTOCOL_VERSION}"
        try:
            async with asyncio.timeout(self.settings.handshake_timeout):
                await self._send(hello)
                line = await self._read_answer()
        except TimeoutError:
            raise HandshakeError(
                f'no answer to "{hello}" within {self.settings.handshake_timeout:g} s '
                "(is this a ziggurat stdio bot?)"
            ) from None
        except BotExitedError:
            note = await self._exit_note()
            raise HandshakeError(f'the bot exited before answering "{hello}"{note}') from None
        except LineTooLongError:
            line = "<a line too long to show>"
        word, _, rest = line.partition(" ")
        if word != "ready":
            raise HandshakeError(
                f"bot does not speak the ziggurat stdio protocol {PROTOCOL_VERSION}: expected "
                f'"ready NAME" in answer to "{hello}", got "{_printable(line, 80)}"'
            )
        name = _printable(rest.strip(), MAX_NAME)
        return name or self.name

    async def begin(self, game: str, seats: int, seat: int, options: Mapping[str, str]) -> None:
        """Send the ``game`` line (once); ``choose`` does it itself if nobody did."""
        if self._begun:
            return
        self._begun = True
        fields = [game, str(seats), str(seat), *(f"{k}={v}" for k, v in sorted(options.items()))]
        await self._say("game " + " ".join(fields))

    async def choose(self, turn: Turn) -> str:
        """Tell the program the turn and get its move; raises BotFailureError when it forfeits."""
        if self.verdict is not None:
            raise BotFailureError(self.verdict, self.detail)
        await self.begin(turn.game, turn.seats, turn.seat, turn.options)
        loop = asyncio.get_running_loop()
        started = loop.time()
        limit_ms = turn.time_left_ms + self.settings.grace_ms if turn.time_left_ms else 0
        limit_ms = limit_ms or self.settings.move_timeout_ms
        try:
            async with asyncio.timeout_at(started + limit_ms / 1000 if limit_ms else None):
                await self._say(self._moves_line(turn.history))
                await self._say(f"position {turn.position}")
                await self._say("legal " + " ".join(turn.legal_moves))
                while True:
                    left = turn.time_left_ms - int((loop.time() - started) * 1000)
                    await self._say(f"go {turn.ply} {max(1, left) if turn.time_left_ms else 0}")
                    move = await self._one_answer(turn)
                    if move is not None:
                        self._pending = (turn.ply, move)
                        return move
        except TimeoutError:
            raise self.fail(Verdict.TIMEOUT, f"no move within {limit_ms} ms") from None
        except BotExitedError as error:
            raise self.fail(Verdict.CRASHED, f"{error}{await self._exit_note()}") from None

    async def _one_answer(self, turn: Turn) -> str | None:
        """The program's move, or None after telling it why its answer was refused."""
        try:
            line = await self._read_answer()
        except LineTooLongError as error:
            reason, message = "syntax", f"{error}; expected: move MOVE"
        else:
            reason, message = self._refusal(turn, line)
            if not reason:
                return message
        self.refused += 1
        await self._say(f"error {reason} {message}")
        if self.refused >= self.settings.max_illegal:
            raise self.fail(Verdict.ILLEGAL, f"{self.refused} refused answers, the last: {message}")
        return None

    def _refusal(self, turn: Turn, line: str) -> tuple[str, str]:
        """("", canonical move) for an acceptable answer, else (reason, message)."""
        parts = line.split()
        if len(parts) != 2 or parts[0] != "move":
            return "syntax", f'expected "move MOVE", got "{_printable(line, 80)}"'
        move = parts[1]
        if move in turn.legal_moves:
            return "", move
        canonical = canonical_answer(turn, move)
        if canonical in turn.legal_moves:
            return "", canonical
        return "illegal", f"{_printable(move, 40)} is not a legal move here"

    def _moves_line(self, history: Sequence[str]) -> str:
        """``moves FIRST ...``: what was played since the program's own last move."""
        if self._pending is not None:
            ply, move = self._pending
            played_as_answered = len(history) > ply and history[ply] == move
            self._known = ply + 1 if played_as_answered else ply
            self._pending = None
        first = min(self._known, len(history))
        self._known = len(history)
        return " ".join(["moves", str(first), *(move or HIDDEN_MOVE for move in history[first:])])

    async def finish(self, ended: match_pb2.MatchEndedEvent, history: Sequence[str]) -> None:
        """Tell the program the end (last moves, reveal, ranks); verdict ``finished``."""
        if self.verdict is None:
            self.verdict = Verdict.FINISHED
        ranks = " ".join(str(rank) for rank in ended.outcome.ranks)
        with contextlib.suppress(BotExitedError, TimeoutError):
            async with asyncio.timeout(self.settings.quit_grace):
                await self._say(self._moves_line(history))
                await self._say(f"reveal {ended.view.position}")
                await self._say(f"gameover {termination_word(ended.outcome.termination)} {ranks}")

    def mark(self, verdict: Verdict, detail: str) -> None:
        """Record a verdict decided outside ``choose`` (e.g. the server connection was lost)."""
        if self.verdict is None:
            self.verdict, self.detail = verdict, detail

    async def close(self) -> int | None:
        """``quit``, then make sure the program is gone; returns its exit status."""
        return await self.process.close("quit", self.settings.quit_grace)

    def fail(self, verdict: Verdict, detail: str) -> BotFailureError:
        """Record a forfeit and return the exception that carries it out of ``choose``."""
        self.mark(verdict, detail)
        log.warning("%s: %s: %s", self.name, verdict, detail)
        return BotFailureError(verdict, detail)

    async def _exit_note(self) -> str:
        status = await self.process.exit_status(1.0)
        note = "" if status is None else f" (exit status {status})"
        tail = " | ".join(self.process.stderr_tail)
        return note + (f"; its stderr ended with: {_printable(tail, 300)}" if tail else "")

    async def _say(self, line: str) -> None:
        log.debug("%s < %s", self.name, line)
        await self._send(line)

    async def _send(self, line: str) -> None:
        await self.process.send(line)

    async def _read_answer(self) -> str:
        """The next stdout line that is not empty or a ``#`` comment."""
        while True:
            line = await self.process.read_line()
            log.debug("%s > %s", self.name, line)
            if line.strip() and not line.startswith("#"):
                return line


async def play_seat(
    client: ZigguratClient,
    handle: MatchHandle,
    bot: StdioBot,
    *,
    runner: SeatRunner | None = None,
) -> Verdict:
    """Play ``handle``'s seat with a started ``bot`` to the end; resign it if the bot fails.

    Returns the verdict (also ``bot.verdict``, with ``bot.detail``). ``runner`` lets the
    caller pass a SeatRunner of its own (for ``on_event``); it must drive this ``bot``.
    """
    runner = runner or SeatRunner(client, handle, bot)
    try:
        match = await client.get_match(handle.match_id, handle)
        game, seats, options = config_from_proto(match.config)
        try:
            await bot.begin(game, seats, handle.seat, options)
        except BotExitedError as error:
            raise bot.fail(Verdict.CRASHED, str(error)) from None
        ended = await runner.run()
    except BotFailureError:
        await _resign(client, handle)
    except ZigguratError as error:
        bot.mark(Verdict.DISCONNECTED, str(error))
    else:
        await bot.finish(ended, runner.history)
    assert bot.verdict is not None
    return bot.verdict


async def _resign(client: ZigguratClient, handle: MatchHandle) -> None:
    """Resign for a failed bot; a match that is already over (or a lost server) is fine."""
    try:
        await client.resign(handle)
    except ZigguratError as error:
        log.info("seat %d: resign refused (%s)", handle.seat, error.reason or error.code.name)
