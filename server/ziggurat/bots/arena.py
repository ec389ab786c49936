"""Games between bots in one process, with no server: for tests and the strength ladder.

The arena is a referee that holds the full rules state, but it hands each bot
exactly what the server would: a :class:`~ziggurat_client.bot.Turn` built from
``view_to_proto(rules.view(state, seat))``, the seat's own view. A bot that
plays well here therefore plays the same way on a live server, and one that
would need hidden information cannot get it.

The clock is simulated by ``time_left_ms`` on every turn (the value a bot sees
from the server); with the default ``Turn.budget_seconds`` policy a bot thinks
about ``(time_left_ms - 100) / 4000`` seconds per move, see
:func:`time_left_for_budget`.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ziggurat.bots.common import gc_paused, rank_reward
from ziggurat.rules.core import Outcome
from ziggurat.rules.registry import get_rules
from ziggurat.wire.codec import view_to_proto
from ziggurat_client.bot import Bot, Turn

MoveHook = Callable[[int, str, float], None]
"""Called after each move with (0-based seat, move, seconds the bot took)."""


def time_left_for_budget(seconds: float) -> int:
    """The ``time_left_ms`` that makes ``Turn.budget_seconds()`` return ``seconds`` (default policy)."""
    return round(100 + seconds * 4000)


def seed_bytes(seed: int | bytes) -> bytes:
    """A 32-byte game seed from an int (hashed), or a 32-byte value as is."""
    if isinstance(seed, bytes):
        return seed
    return hashlib.sha256(f"ziggurat-arena-{seed}".encode()).digest()


def _answer(result: str | Awaitable[str]) -> str:
    """Bots may be coroutines (the protocol allows it); run those to completion."""
    if isinstance(result, str):
        return result
    if not inspect.isawaitable(result):
        raise TypeError(f"a bot returned {type(result).__name__}, not a move")

    async def wait() -> str:
        return await result

    return asyncio.run(wait())


def turn_for(
    game: str, options: dict[str, str], state: Any, history: Sequence[str] = (), *, time_left_ms: int = 0
) -> Turn:
    """The Turn the seat to move would receive from the server: built from its own view only."""
    rules: Any = get_rules(game)
    seat = rules.to_move(state)
    if seat is None:
        raise ValueError("the game is over: nobody is to move")
    view = view_to_proto(rules.view(state, seat))  # the seat's own view, never the referee's
    return Turn(
        game=game,
        options=dict(options),
        seats=rules.seats(state),
        seat=seat + 1,
        ply=view.ply,
        view=view,
        legal_moves=tuple(view.legal_moves),
        time_left_ms=time_left_ms,
        history=tuple(history),
    )


def play_game(
    game: str,
    options: dict[str, str],
    seats: int,
    bots: Sequence[Bot],
    seed: int | bytes,
    *,
    time_left_ms: int = 0,
    on_move: MoveHook | None = None,
) -> Outcome:
    """Play one game in-process; ``bots[i]`` plays seat ``i`` (0-based). Returns the outcome.

    A move that is not legal raises ValueError naming the bot: in a test or a
    benchmark that is a bug to see, not a result to record.
    """
    if len(bots) != seats:
        raise ValueError(f"{seats} seats need {seats} bots, got {len(bots)}")
    rules: Any = get_rules(game)
    config = rules.parse_config(options, seats)
    state = rules.new_game(config, seed_bytes(seed))
    history: list[str] = []
    while (seat := rules.to_move(state)) is not None:
        turn = turn_for(game, options, state, history, time_left_ms=time_left_ms)
        started = time.perf_counter()
        with gc_paused():  # the arena is all this process does (a coroutine bot runs after it)
            result = bots[seat].choose(turn)
        move = _answer(result)
        took = time.perf_counter() - started
        if move not in turn.legal_moves:
            raise ValueError(f"bot {bots[seat].name!r} (seat {seat + 1}) played illegal move {move!r}")
        state = rules.apply(state, move)
        history.append(move)
        if on_move is not None:
            on_move(seat, move, took)
    outcome: Outcome = rules.outcome(state)
    return outcome


@dataclass
class MatchResult:
    """Results of a series of games seen from the first bot (``hero``)."""

    games: int = 0
    score: float = 0.0  # sum of the hero's rank rewards (a 2-player draw counts 0.5)
    wins: int = 0
    draws: int = 0
    max_move_seconds: float = 0.0
    rewards: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        """Mean reward of the hero: the win rate with draws as half, in 2-player games."""
        return self.score / self.games if self.games else 0.0


def play_match(
    game: str,
    options: dict[str, str],
    seats: int,
    make_hero: Callable[[int], Bot],
    make_other: Callable[[int], Bot],
    *,
    games: int,
    seed: int = 0,
    time_left_ms: int = 0,
    start: int = 0,
) -> MatchResult:
    """Play ``games`` games of one hero against ``seats - 1`` copies of the other bot.

    The hero's seat rotates from game to game, and each block of ``seats``
    consecutive games shares one game seed (same colours, deal and objectives in
    Kabaleo), so both sides meet the same set-ups from every seat. Bots are built
    fresh per game from their factories, which take a per-game seed. ``start``
    numbers the first game, so a series split across processes plays exactly the
    games one process would.
    """
    result = MatchResult()

    def track(_seat: int, _move: str, took: float) -> None:
        result.max_move_seconds = max(result.max_move_seconds, took)

    for index in range(start, start + games):
        hero_seat = index % seats
        game_seed = seed * 1_000_003 + index // seats
        bots = [
            make_hero(seed + index) if s == hero_seat else make_other(seed + index + 7919 * s)
            for s in range(seats)
        ]
        outcome = play_game(game, options, seats, bots, game_seed, time_left_ms=time_left_ms, on_move=track)
        reward = rank_reward(outcome, hero_seat)
        result.games += 1
        result.score += reward
        result.rewards.append(reward)
        result.wins += outcome.ranks[hero_seat] == 1 and not outcome.is_draw
        result.draws += outcome.is_draw
    return result
