"""Search bots in worker processes: same moves as in-process, the host's GC untouched, deadlines
from the turn's receipt, no queueing while there is a worker per seat, dead workers replaced."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests import processes
from ziggurat.bots import make_bot
from ziggurat.bots.arena import play_game, seed_bytes, time_left_for_budget, turn_for
from ziggurat.bots.common import Deadline
from ziggurat.bots.workers import PooledBot, SearchPool, WorkerDied
from ziggurat.rules.registry import get_rules
from ziggurat_client.bot import Turn


@pytest.fixture
async def pool() -> AsyncIterator[SearchPool]:
    searching = SearchPool(4, keep_idle=1)
    yield searching
    await searching.close()


def _opening(game: str = "pylos", seats: int = 2, time_left_ms: int = 0) -> Turn:
    rules = get_rules(game)
    state = rules.new_game(rules.parse_config({}, seats), seed_bytes(7))
    return turn_for(game, {}, state, time_left_ms=time_left_ms)


async def _game_moves(bots: list[object]) -> list[str]:
    """One whole Pylos game between ``bots`` (in-process or pooled), its moves in order."""
    moves: list[str] = []

    def play() -> None:
        play_game("pylos", {"max_moves": "40"}, 2, bots, 11, on_move=lambda _s, m, _t: moves.append(m))  # type: ignore[arg-type]

    await asyncio.to_thread(play)  # the arena is synchronous; pooled bots run their own loop there
    return moves


async def test_pooled_bots_replay_the_in_process_game_from_their_seeds(pool: SearchPool) -> None:
    options = [
        ("mcts", {"seed": 5, "iterations": 150, "max_seconds": 120.0}),
        ("alphabeta", {"seed": 6, "max_depth": 2, "max_seconds": 120.0}),
    ]
    in_process = await _game_moves([make_bot(name, **opts) for name, opts in options])
    pooled = await _game_moves([pool.open(name, opts) for name, opts in options])
    assert len(in_process) > 10
    assert pooled == in_process


async def test_a_search_runs_in_a_worker_and_never_touches_the_hosts_collector(pool: SearchPool) -> None:
    bot = pool.open("mcts", {"seed": 1, "max_seconds": 0.4})
    await bot.start()
    turn = _opening(time_left_ms=time_left_for_budget(0.4))
    searching = asyncio.ensure_future(bot.choose(turn))
    samples = []
    while not searching.done():
        samples.append(gc.isenabled())
        await asyncio.sleep(0.002)
    assert searching.result() in turn.legal_moves
    assert len(samples) > 20 and all(samples)
    assert bot.pid is not None and bot.pid != os.getpid() and pool.fallbacks == 0


async def test_seats_at_once_get_workers_of_their_own(pool: SearchPool) -> None:
    bots = [pool.open("alphabeta", {"seed": i, "max_seconds": 0.3}) for i in range(4)]
    await asyncio.gather(*(bot.start() for bot in bots))
    # Each search stops at max_seconds (0.3 s); the clock is far larger, so the host's safety
    # net (a random move at half the turn's time) is 10 s away: a loaded machine (CI ran this
    # beside the browser tests at load 9) delays a worker's answer, it does not make it a
    # fallback. With a 1.3 s clock the net fired at 0.6 s there.
    turn = _opening(time_left_ms=time_left_for_budget(5.0))
    started = time.monotonic()
    moves = await asyncio.gather(*(bot.choose(replace(turn, received=time.monotonic())) for bot in bots))
    took = time.monotonic() - started
    assert all(move in turn.legal_moves for move in moves)
    assert len({bot.pid for bot in bots}) == 4 and pool.fallbacks == 0
    # Four searches of 0.27 s each, side by side: far less than the 1.1 s of a queue.
    assert took < 0.9, took


async def test_a_fifth_seat_shares_the_least_busy_worker_and_released_sessions_free_theirs(
    pool: SearchPool,
) -> None:
    bots = [pool.open("mcts", {"seed": i}) for i in range(5)]
    await asyncio.gather(*(bot.start() for bot in bots))
    assert pool.workers == 4
    assert len({bot.pid for bot in bots}) == 4
    for bot in bots:
        bot.close()
    del bots
    extra = pool.open("greedy")  # settles the releases: all idle, only keep_idle=1 stays up
    assert pool.workers == 1
    await extra.start()
    assert extra.pid == pool.pids()[0]


async def test_the_deadline_counts_from_when_the_turn_was_received() -> None:
    turn = _opening(time_left_ms=time_left_for_budget(0.5))
    assert not Deadline(turn, 1.0).expired()
    late = replace(turn, received=time.monotonic() - 0.5)  # it queued for 0.5 s somewhere
    assert Deadline(late, 1.0).expired()
    bot = make_bot("mcts", seed=3, max_seconds=1.0)
    started = time.monotonic()
    assert bot.choose(late) in turn.legal_moves
    assert time.monotonic() - started < 0.2
    assert bot.last_iterations == 0  # the budget was already spent: it answers at once


async def test_a_queued_search_thinks_less_not_longer() -> None:
    one = SearchPool(1)
    try:
        first, second = one.open("mcts", {"seed": 1}), one.open("mcts", {"seed": 2})
        await asyncio.gather(first.start(), second.start())
        turn = _opening(time_left_ms=time_left_for_budget(1.0))  # 0.9 s budgets, one worker
        started = time.monotonic()
        await asyncio.gather(first.choose(turn), second.choose(turn))
        assert time.monotonic() - started < 1.5  # not 1.8 s: the second search's time went queueing
    finally:
        await one.close()


async def test_a_dead_worker_fails_its_bots_move_and_is_replaced(pool: SearchPool) -> None:
    bot = pool.open("mcts", {"seed": 1})
    await bot.start()
    assert bot.pid is not None
    os.kill(bot.pid, signal.SIGKILL)
    with pytest.raises(WorkerDied):
        await bot.choose(_opening())
    fresh = pool.open("mcts", {"seed": 1})
    assert await fresh.choose(_opening()) in _opening().legal_moves
    assert fresh.pid != bot.pid


async def test_a_bad_option_is_the_constructors_error(pool: SearchPool) -> None:
    bot = pool.open("mcts", {"no_such_option": 1})
    with pytest.raises(TypeError, match="no_such_option"):
        await bot.choose(_opening())
    assert isinstance(bot, PooledBot)


def test_workers_exit_when_their_host_is_killed(tmp_path: Path) -> None:
    script = tmp_path / "host.py"
    script.write_text(
        "import asyncio, sys\n"
        "from ziggurat.bots.workers import SearchPool\n"
        "async def main():\n"
        "    pool = SearchPool(2)\n"
        "    await pool.warm()\n"
        "    print(*pool.pids(), flush=True)\n"
        "    await asyncio.sleep(60)\n"
        "if __name__ == '__main__':\n"
        "    asyncio.run(main())\n"
    )
    host = processes.popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert host.stdout is not None
        workers = [int(pid) for pid in host.stdout.readline().split()]
        assert len(workers) == 2
    finally:
        processes.stop(host)
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in workers):
        assert time.monotonic() < deadline, "a search worker outlived its host"
        time.sleep(0.1)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
