"""SeatRunner: only the present turn is answered, exact resumes, a budget of consecutive failures."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import TypeVar

import pytest

from tests.servers import RunningServer, ServerProcess, pylos_config
from ziggurat.v1 import match_pb2
from ziggurat_client import ZigguratClient, ZigguratError
from ziggurat_client import runner as runner_module
from ziggurat_client.bot import Turn
from ziggurat_client.client import MatchHandle
from ziggurat_client.runner import Backoff, SeatRunner

T = TypeVar("T")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RecordingBot:
    """Plays the first legal move and remembers every turn it was asked about."""

    name = "recording"

    def __init__(self, delay: float = 0.0) -> None:
        self.turns: list[Turn] = []
        self.delay = delay

    async def choose(self, turn: Turn) -> str:
        self.turns.append(turn)
        if self.delay:
            await asyncio.sleep(self.delay)
        return turn.legal_moves[0]


async def _first_legal(client: ZigguratClient, handle: MatchHandle) -> str:
    match = await client.get_match(handle.match_id, handle)
    return match.view.legal_moves[0]


async def _retrying(call: Callable[[], Awaitable[T]]) -> T:
    """A test-side call right after a restart (the channel may still be reconnecting)."""
    for _ in range(100):
        try:
            return await call()
        except ZigguratError as error:
            if not error.retryable:
                raise
            await asyncio.sleep(0.1)
    raise AssertionError("the server did not come back")


async def _wait_for_ply(client: ZigguratClient, match_id: str, ply: int, seconds: float = 60) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        if (await _retrying(lambda: client.get_match(match_id))).view.ply >= ply:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"ply {ply} never reached")


async def test_catching_up_answers_only_the_turn_in_progress(
    server: RunningServer, client: ZigguratClient
) -> None:
    match = await client.create_match(pylos_config())
    handles = {h.seat: h for h in [await client.join(match.match_id, f"p{i}") for i in range(2)]}
    for ply in range(6):  # three past turns of each seat are in the log
        handle = handles[1 + ply % 2]
        await client.submit_move(handle, await _first_legal(client, handle), ply)
    bot = RecordingBot()
    runner = SeatRunner(client, handles[1], bot)
    task = asyncio.create_task(runner.run())
    await _wait_for_ply(client, match.match_id, 7)
    assert [t.ply for t in bot.turns] == [6], "past turns of the log were answered"
    assert len(bot.turns[0].history) == 6
    assert bot.turns[0].view.ply == 6, "the bot sees the present position, not a past one"
    await client.submit_move(handles[2], await _first_legal(client, handles[2]), 7)
    await _wait_for_ply(client, match.match_id, 9)
    await client.resign(handles[2])
    ended = await asyncio.wait_for(task, 30)
    assert list(ended.outcome.ranks) == [1, 2]
    assert [t.ply for t in bot.turns] == [6, 8]
    assert runner.rejections == []


async def test_a_late_joiner_is_asked_nothing_until_its_turn(
    server: RunningServer, client: ZigguratClient
) -> None:
    match = await client.create_match(pylos_config())
    handles = {h.seat: h for h in [await client.join(match.match_id, f"p{i}") for i in range(2)]}
    for ply in range(5):  # the log ends on seat 2's turn
        handle = handles[1 + ply % 2]
        await client.submit_move(handle, await _first_legal(client, handle), ply)
    bot = RecordingBot()
    task = asyncio.create_task(SeatRunner(client, handles[1], bot).run())
    await asyncio.sleep(0.5)
    assert bot.turns == []
    await client.submit_move(handles[2], await _first_legal(client, handles[2]), 5)
    await _wait_for_ply(client, match.match_id, 7)
    assert [t.ply for t in bot.turns] == [6]
    await client.resign(handles[2])
    await asyncio.wait_for(task, 30)


async def test_a_finished_match_is_replayed_to_its_end_without_a_move(
    server: RunningServer, client: ZigguratClient
) -> None:
    match = await client.create_match(pylos_config())
    handles = {h.seat: h for h in [await client.join(match.match_id, f"p{i}") for i in range(2)]}
    for ply in range(4):
        handle = handles[1 + ply % 2]
        await client.submit_move(handle, await _first_legal(client, handle), ply)
    await client.resign(handles[2])
    bot = RecordingBot()
    ended = await asyncio.wait_for(SeatRunner(client, handles[1], bot).run(), 30)
    assert list(ended.outcome.ranks) == [1, 2]
    assert bot.turns == []


@pytest.mark.slow
async def test_failure_budget_counts_consecutive_failures_only(tmp_path: Path) -> None:
    """Six restarts with a budget of four attempts (each restart costs at least one: the stream that
    broke): each reconnection works and resets the count, so it never runs out; then the server
    stays down and the budget is spent. Delays are long enough for a slow restart under load."""
    port = free_port()
    proc = ServerProcess(tmp_path / "z.db", ["--port", str(port)])
    address = proc.start()
    try:
        async with ZigguratClient(address) as client:
            match = await client.create_match(pylos_config())
            handles = {h.seat: h for h in [await client.join(match.match_id, f"p{i}") for i in range(2)]}
            bot = RecordingBot()
            runner = SeatRunner(
                client, handles[1], bot, backoff=Backoff(initial=1.0, maximum=4.0, attempts=4)
            )
            task = asyncio.create_task(runner.run())
            for restart in range(6):
                await _wait_for_ply(client, match.match_id, 2 * restart + 1)  # the runner moved
                if restart % 2:
                    proc.kill9()
                else:
                    assert proc.terminate() == 0
                proc.start()
                assert not task.done(), task
                move = await _retrying(lambda: _first_legal(client, handles[2]))
                ply = 2 * restart + 1
                await _retrying(lambda m=move, p=ply: client.submit_move(handles[2], m, p))  # type: ignore[misc]
            await _wait_for_ply(client, match.match_id, 13)
            assert runner.sessions >= 7
            assert [t.ply for t in bot.turns] == list(range(0, 13, 2)), "each turn answered once"
            proc.kill9()  # and now it stays down: four failed attempts in a row spend the budget
            with pytest.raises(ZigguratError) as gave_up:
                await asyncio.wait_for(task, 60)
            assert gave_up.value.reason == "GAVE_UP"
    finally:
        proc.stop()


async def test_refusals_are_raised_at_once(server: RunningServer, client: ZigguratClient) -> None:
    match = await client.create_match(pylos_config())
    handle = await client.join(match.match_id, "p")
    forged = MatchHandle(match.match_id, handle.seat, "not-a-token")
    with pytest.raises(ZigguratError) as refused:
        await asyncio.wait_for(SeatRunner(client, forged, RecordingBot()).run(), 10)
    assert not refused.value.retryable and refused.value.reason == "BAD_TOKEN", refused.value


async def test_an_illegal_answer_is_reported_and_the_bot_asked_again(
    server: RunningServer, client: ZigguratClient
) -> None:
    match = await client.create_match(pylos_config())
    handles = {h.seat: h for h in [await client.join(match.match_id, f"p{i}") for i in range(2)]}
    answers = iter(["4a1", "zz", "1a1"])  # illegal, malformed, then legal

    def choose(turn: Turn) -> str:
        return next(answers) if turn.ply == 0 else turn.legal_moves[0]

    rejected: list[str] = []
    task = asyncio.create_task(
        SeatRunner(client, handles[1], _Fn(choose), on_rejected=lambda r: rejected.append(r.reason)).run()
    )
    await _wait_for_ply(client, match.match_id, 1)
    assert rejected == ["ILLEGAL_MOVE", "MALFORMED_MOVE"]
    await client.resign(handles[2])
    await asyncio.wait_for(task, 30)
    record = await client.record(match.match_id)
    assert record.moves[0].move == "1a1"


class _Fn:
    name = "fn"

    def __init__(self, choose) -> None:  # type: ignore[no-untyped-def]
        self.choose = choose


@pytest.mark.parametrize("skew_s", [3600.0, -3600.0, 0.0])
async def test_a_turn_read_from_the_backlog_has_the_time_actually_left(
    server: RunningServer, client: ZigguratClient, monkeypatch: pytest.MonkeyPatch, skew_s: float
) -> None:
    """A bot that (re)connects mid-turn reads its turn_started from the backlog: its budget is
    what is left of the turn, measured on the server's clock (PlayResponse.server_time_ms),
    so a bot machine whose clock is an hour off gets neither 1 ms nor the whole turn."""
    skewed = SimpleNamespace(time=lambda: time.time() + skew_s)
    monkeypatch.setattr(runner_module, "time", skewed)  # the bot's side only
    timed = match_pb2.TimeControl(per_move_ms=30_000)
    match = await client.create_match(pylos_config(), time_control=timed)
    handles = [await client.join(match.match_id, "p0")]
    before = time.time()
    handles.append(await client.join(match.match_id, "p1"))  # seat 1's turn starts now
    first, second = sorted(handles, key=lambda handle: handle.seat)
    await asyncio.sleep(2.0)
    bot = RecordingBot()
    task = asyncio.create_task(SeatRunner(client, first, bot).run())
    await _wait_for_ply(client, match.match_id, 1)
    asked = time.time()
    await client.resign(second)
    await asyncio.wait_for(task, 30)
    (turn,) = bot.turns
    most = 30_000 - (asked - before) * 1000 - 50  # at least this long had run by the answer
    assert 30_000 - 2_000 - 1_000 <= turn.time_left_ms <= 30_000 - 2_000 + 50, turn.time_left_ms
    assert turn.time_left_ms >= most - 1_000, (turn.time_left_ms, most)
