"""Built-in bots the server seats and plays itself ("play against the computer").

Why in-process: a person in the lobby wants an opponent now, without starting a
second program. The bot follows the match like any seat does — every event it
sees is rendered by :func:`ziggurat.core.render.render_event` for its own seat, so
it learns exactly what a remote bot in that seat would and nothing more — and plays
through :meth:`Match.submit`, the path every move takes. The number of bots at once is capped.

Search bots (``mcts``, ``alphabeta``) think in worker processes (:mod:`ziggurat.bots.workers`):
each seat's bot lives in a worker of the server's search pool, one worker per search bot
in play (idle workers beyond the machine's cores exit), so a search never runs on the
server's event loop, never queues behind another bot's search, and never touches the
server's garbage collector. Its deadline counts from the turn's start as the server's clock
does. ``random`` and ``greedy`` decide in milliseconds, on one thread beside the loop.

The pool is started by the first search bot seated, not with the server: its forkserver and
first worker cost about 0.3 CPU s and 80 MB on every start, which a server that never seats a
search bot (a tournament's, a LAN lobby of people) should not pay. That first AddBot waits
until the worker answers before it takes the seat, so the seconds a cold start takes on a
loaded host are spent before the match can start, never on the bot's clock.

The API edge knows this only through the
:class:`~ziggurat.api.house_bots.HouseBotSeater` protocol; ``ziggurat serve`` hands
this implementation to the server. A bot seat is taken by :meth:`Match.join` like any
other, with the bot's name recorded in the log (``SeatJoined.house_bot``): after a server
restart, :meth:`HouseBots.restore` seats the same bot again in every unfinished match, and it
plays on from the turn in progress (it replays the log to rebuild what it has seen, and only
ever answers the running turn).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ziggurat.api.house_bots import HouseBotInfo
from ziggurat.bots.workers import SEARCH_BOTS, PooledBot, SearchPool
from ziggurat.core.botnames import house_bot_display
from ziggurat.core.manager import MatchManager
from ziggurat.core.match import Match
from ziggurat.core.render import render_event
from ziggurat.v1 import game_pb2
from ziggurat.wire import errors
from ziggurat_client.bot import Turn

log = logging.getLogger("ziggurat.house_bots")

MAX_HOUSE_BOTS = 64


def _catalogue() -> tuple[dict[str, HouseBotInfo], Callable[[str], Any]]:
    """The built-in bots and their factory (imported on first use: search bots are heavy)."""
    from ziggurat.bots import BOTS, GAMES_OF, make_bot

    infos = {name: HouseBotInfo(name, GAMES_OF[name], description(BOTS[name].__doc__ or "")) for name in BOTS}
    return infos, make_bot


# reST inline markup of a docstring: ``literal``, :role:`~target`, `interpreted`, **strong**, *emphasis*.
_MARKUP = re.compile(
    r"``(?P<literal>.+?)``|:[a-z]+:`(?P<role>.+?)`|`(?P<text>.+?)`|\*\*(?P<strong>.+?)\*\*|\*(?P<em>.+?)\*"
)


def _unmarked(found: re.Match[str]) -> str:
    role = found["role"]
    if role is not None:  # :class:`~a.b.Turn` reads "Turn", :class:`a.b.Turn` "a.b.Turn"
        return role[1:].rsplit(".", 1)[-1] if role.startswith("~") else role
    return next(text for text in found.groups() if text is not None)


def description(docstring: str) -> str:
    r"""A bot class's docstring as the lobby shows it (a tooltip): the first paragraph on one
    line, its reST markup taken away (``turn.legal_moves`` reads as turn.legal_moves).

    >>> description("Picks among ``turn.legal_moves``\n  (see :class:`~x.Turn`, *fast*).\n\n  More.")
    'Picks among turn.legal_moves (see Turn, fast).'
    """
    paragraph = " ".join(docstring.strip().split("\n\n")[0].split())
    return _MARKUP.sub(_unmarked, paragraph)


class HouseBots:
    """Seats built-in bots in matches and plays them until their match ends."""

    def __init__(self, manager: MatchManager, *, limit: int = MAX_HOUSE_BOTS) -> None:
        self.manager = manager
        self.limit = limit
        self.tasks: set[asyncio.Task[None]] = set()
        self._executor: ThreadPoolExecutor | None = None
        self._search_pool: SearchPool | None = None
        self._warming: asyncio.Task[None] | None = None

    @property
    def search_pool(self) -> SearchPool | None:
        """The worker processes of the search bots (None until the first is needed)."""
        return self._search_pool

    def _pool(self) -> SearchPool:
        if self._search_pool is None:
            self._search_pool = SearchPool(self.limit, keep_idle=os.cpu_count() or 1)
        return self._search_pool

    def _warm_up(self) -> None:
        """Start the search workers' forkserver and one worker in the background (a restart
        that seats search bots again): their matches' clocks already run, so they start now."""
        if self._warming is not None:
            return
        with contextlib.suppress(RuntimeError):  # no running loop: nothing to warm for
            task = asyncio.get_running_loop().create_task(self._pool().warm(1), name="search pool warm-up")
            self._warming = task

    def _build(self, bot_name: str, make_bot: Callable[[str], Any]) -> Any:
        """The bot for one seat: a search bot is a session in a worker process, others in-process."""
        if bot_name not in SEARCH_BOTS:
            return make_bot(bot_name)
        return self._pool().open(bot_name)

    def catalogue(self) -> list[HouseBotInfo]:
        """Every built-in bot, by name."""
        infos, _ = _catalogue()
        return [infos[name] for name in sorted(infos)]

    async def add(self, match: Match, bot_name: str, seat: int | None) -> int:
        """Seat ``bot_name`` in ``match`` (0-based ``seat`` or by the match's rule); returns the seat.

        A search bot waits first until the pool has a worker that answers (the first one seated
        starts the pool: see the module docstring); the checks are made again after that wait.
        """
        infos, make_bot = _catalogue()
        info = infos.get(bot_name)
        if info is None:
            known = ", ".join(sorted(infos))
            raise errors.invalid("UNKNOWN_BOT", f"no built-in bot {bot_name!r}; known: {known}")
        if match.game not in info.games:
            raise errors.precondition("BOT_GAME", f"the built-in bot {bot_name!r} does not play {match.game}")
        self._check_room()
        if bot_name in SEARCH_BOTS:
            await self._pool().warm(1)
            self._check_room()
        bot = self._build(bot_name, make_bot)
        _, joined = match.join(house_bot_display(bot_name), seat, house_bot=bot_name)
        self._start(match, joined, bot_name, bot)
        return joined

    def _check_room(self) -> None:
        if len(self.tasks) >= self.limit:
            raise errors.exhausted("TOO_MANY_BOTS", "the server already plays its maximum number of bots")

    def restore(self) -> int:
        """Seat again the built-in bots of every unfinished match (server start-up); returns how many.

        Which bot plays a seat is in the log; a seat it no longer holds (resigned, timed out)
        is left alone.
        """
        infos, make_bot = _catalogue()
        restored = 0
        for match in list(self.manager.live.values()):
            if match.status == "finished":
                continue
            for seat, record in enumerate(match.current.seats):
                if not record.house_bot or record.standing != "joined":
                    continue
                if record.house_bot not in infos or len(self.tasks) >= self.limit:
                    log.warning(
                        "match %s seat %d: built-in bot %r not restored (unknown, or too many bots)",
                        match.match_id,
                        seat + 1,
                        record.house_bot,
                    )
                    continue
                if record.house_bot in SEARCH_BOTS:
                    self._warm_up()
                self._start(match, seat, record.house_bot, self._build(record.house_bot, make_bot))
                restored += 1
        if restored:
            log.info("restored %d built-in bots in unfinished matches", restored)
        return restored

    def _start(self, match: Match, seat: int, bot_name: str, bot: Any) -> None:
        task = asyncio.create_task(self._play(match, seat, bot), name=f"bot {bot_name} {match.match_id}")
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def close(self) -> None:
        """Stop every bot (server shutdown)."""
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None
        if self._warming is not None:
            self._warming.cancel()
            await asyncio.gather(self._warming, return_exceptions=True)
        if self._search_pool is not None:
            await self._search_pool.close()
            self._search_pool = None

    async def _play(self, match: Match, seat: int, bot: Any) -> None:
        subscriber = match.subscribe(0, seat)
        match.connect(seat)
        view = game_pb2.GameView()
        history: list[str] = []
        try:
            if isinstance(bot, PooledBot):
                bot.prepare()  # build it in its worker now, not on the first turn's clock
            async for entries, _ in match.batches(subscriber):
                for entry in entries:
                    event = render_event(match, entry, seat)
                    kind = event.WhichOneof("kind")
                    if kind == "match_started":
                        view = event.match_started.view
                    elif kind == "move_played":
                        view = event.move_played.view
                        history.append(event.move_played.move)
                    elif kind == "turn_started" and _running(match, seat, event.turn_started.ply):
                        await self._move(
                            match,
                            seat,
                            bot,
                            Turn(
                                game=match.game,
                                options=match.rules.config_options(match.config),
                                seats=match.seat_count,
                                seat=seat + 1,
                                ply=event.turn_started.ply,
                                view=view,
                                legal_moves=tuple(event.turn_started.legal_moves),
                                time_left_ms=event.turn_started.time_left_ms,
                                history=tuple(history),
                                # the server's clock for this turn runs from here, whenever
                                # the bot reads it (after its worker's start, say)
                                received=match.turn_started,
                            ),
                        )
        except asyncio.CancelledError:
            raise
        except Exception:  # a bot bug must not take the server down; its clock runs on
            log.exception("built-in bot in match %s seat %d stopped", match.match_id, seat + 1)
        finally:
            if isinstance(bot, PooledBot):
                bot.close()
            match.unsubscribe(subscriber)
            match.disconnect(seat)

    async def _move(self, match: Match, seat: int, bot: Any, turn: Turn) -> None:
        if isinstance(bot, PooledBot):
            move = await bot.choose(turn)
        else:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="house-bot")
            loop = asyncio.get_running_loop()
            result = await loop.run_in_executor(self._executor, bot.choose, turn)
            move = result if isinstance(result, str) else await result
        if match.status != "active":
            return
        try:
            match.submit(seat, move, turn.ply)
        except errors.ApiError as refusal:  # the turn moved on (timeout) or the bot erred
            log.warning("built-in bot in match %s seat %d: %s", match.match_id, seat + 1, refusal.message)


def _running(match: Match, seat: int, ply: int) -> bool:
    """True when ``seat``'s turn at ``ply`` is the one in progress (not one replayed from the log
    after a restart, nor one that a timeout has already ended)."""
    turn = match.current.turn
    return turn is not None and turn.seat == seat and turn.ply == ply
