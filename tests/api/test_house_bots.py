"""Built-in bots seated by AddBot and played by the server itself, over real gRPC."""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from tests.servers import RunningServer, kabaleo_config, pylos_config, random_chooser
from ziggurat.bots.house import HouseBots
from ziggurat.bots.workers import SearchPool
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat_client import ZigguratClient
from ziggurat_client.errors import error_info

Code = grpc.StatusCode


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[RunningServer]:
    """A server as ``ziggurat serve`` builds it: with the built-in bots."""
    db = tmp_path / "ziggurat.db"
    running = ZigguratServer(
        ServeOptions(host="127.0.0.1", port=0, db_path=str(db), grace_seconds=0.5), house_bots=HouseBots
    )
    port = await running.start()
    yield RunningServer(running, f"127.0.0.1:{port}", db)
    await running.stop()


async def test_a_server_without_builtin_bots_says_so(tmp_path: Path) -> None:
    plain = ZigguratServer(ServeOptions(host="127.0.0.1", port=0, db_path=str(tmp_path / "plain.db")))
    port = await plain.start()
    try:
        async with ZigguratClient(f"127.0.0.1:{port}") as client:
            assert not (await client.stub.ListBuiltinBots(spb.ListBuiltinBotsRequest())).bots
            match = await client.create_match(pylos_config())
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await _add_bot(client, match.match_id, "random")
            assert (refused.value.code(), _reason(refused.value)) == (Code.INVALID_ARGUMENT, "UNKNOWN_BOT")
    finally:
        await plain.stop()


async def _add_bot(client: ZigguratClient, match_id: str, bot: str) -> spb.AddBotResponse:
    response: spb.AddBotResponse = await client.stub.AddBot(spb.AddBotRequest(match_id=match_id, bot=bot))
    return response


async def test_list_builtin_bots_names_games(client: ZigguratClient) -> None:
    listed = await client.stub.ListBuiltinBots(spb.ListBuiltinBotsRequest())
    bots = {bot.name: (set(bot.games), bot.description) for bot in listed.bots}
    assert set(bots) == {"random", "greedy", "mcts", "alphabeta"}
    assert bots["alphabeta"][0] == {game_pb2.GAME_PYLOS}
    assert bots["mcts"][0] == {game_pb2.GAME_PYLOS, game_pb2.GAME_KABALEO}
    assert all(description for _, description in bots.values())
    # Shown to people (the lobby's tooltips): plain words, no docstring markup.
    assert bots["random"][1] == "Picks uniformly among turn.legal_moves; seedable so games are reproducible."
    assert not [d for _, d in bots.values() if "`" in d or ":class:" in d], bots


async def test_a_person_plays_pylos_against_a_builtin_bot(client: ZigguratClient) -> None:
    match = await client.create_match(pylos_config())
    added = await _add_bot(client, match.match_id, "greedy")
    assert added.match.seats[added.seat - 1].player_name == "greedy (bot)"
    me = await client.join(match.match_id, "person")
    assert me.seat != added.seat
    ended = await asyncio.wait_for(client.play(me, random_chooser(1)), 120)
    assert ended.outcome.termination != game_pb2.TERMINATION_UNSPECIFIED
    record = await client.record(match.match_id)
    bot_moves = [m for m in record.moves if m.seat == added.seat]
    assert bot_moves and not any(m.substituted for m in bot_moves)


# display names that read as the server's own bots: exact, other case, look-alike letters
# (digit zero, small capitals, full-width brackets), with or without the space
CLAIMS = [
    "alphabeta (bot)",
    "greedy (bot)",
    "Greedy (BOT)",
    "greedy(bot)",
    "random (b0t)",
    "\u0262\u0280\u1d07\u1d07\u1d05\u028f (\u0299\u1d0f\u1d1b)",
    "mcts\uff08bot\uff09",
]


async def test_a_player_may_not_take_the_name_of_a_builtin_bot(client: ZigguratClient) -> None:
    match = await client.create_match(pylos_config())
    for name in CLAIMS:
        request = spb.JoinMatchRequest(match_id=match.match_id, player_name=name)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await client.stub.JoinMatch(request)
        assert (refused.value.code(), _reason(refused.value)) == (Code.INVALID_ARGUMENT, "BAD_NAME"), name
        assert "(bot)" in (refused.value.details() or "")
    unchanged = await client.get_match(match.match_id)
    assert [seat.state for seat in unchanged.seats] == [match_pb2.SEAT_STATE_OPEN] * 2
    # the server's own bot still sits under that name, and a person whose name merely
    # mentions a bot is seated
    added = await _add_bot(client, match.match_id, "alphabeta")
    assert added.match.seats[added.seat - 1].player_name == "alphabeta (bot)"
    person = await client.join(match.match_id, "robot (botanist)")
    assert person.seat != added.seat


async def test_bots_fill_a_kabaleo_table(client: ZigguratClient) -> None:
    match = await client.create_match(kabaleo_config(3))
    for bot in ("random", "greedy"):
        await _add_bot(client, match.match_id, bot)
    me = await client.join(match.match_id, "person")
    ended = await asyncio.wait_for(client.play(me, random_chooser(2)), 120)
    assert sorted(ended.outcome.ranks) and len(ended.outcome.ranks) == 3


async def test_refusals(client: ZigguratClient, server: RunningServer) -> None:
    kabaleo = await client.create_match(kabaleo_config(2))
    cases = [
        (kabaleo.match_id, "nobody", grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_BOT"),
        (kabaleo.match_id, "alphabeta", grpc.StatusCode.FAILED_PRECONDITION, "BOT_GAME"),
        ("no-such-match", "random", grpc.StatusCode.NOT_FOUND, "MATCH_NOT_FOUND"),
    ]
    for match_id, bot, code, reason in cases:
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await _add_bot(client, match_id, bot)
        assert (refused.value.code(), _reason(refused.value)) == (code, reason)
    await _add_bot(client, kabaleo.match_id, "random")
    await _add_bot(client, kabaleo.match_id, "random")
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _add_bot(client, kabaleo.match_id, "random")
    assert (refused.value.code(), _reason(refused.value)) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "MATCH_FULL",
    )
    # The two bots play the match to its end on their own.
    for _ in range(600):
        state = await client.get_match(kabaleo.match_id)
        if state.status == match_pb2.MATCH_STATUS_FINISHED:
            break
        await asyncio.sleep(0.05)
    assert state.status == match_pb2.MATCH_STATUS_FINISHED
    assert not server.server.house_bots.tasks


async def test_the_bot_limit_is_enforced(client: ZigguratClient, server: RunningServer) -> None:
    server.server.house_bots.limit = 1
    first = await client.create_match(pylos_config())
    await _add_bot(client, first.match_id, "random")
    second = await client.create_match(pylos_config())
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await _add_bot(client, second.match_id, "random")
    assert (refused.value.code(), _reason(refused.value)) == (
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        "TOO_MANY_BOTS",
    )
    state = await client.get_match(second.match_id)
    assert [s.state for s in state.seats] == [match_pb2.SEAT_STATE_OPEN] * 2


def _reason(error: grpc.aio.AioRpcError) -> str:
    """The ErrorInfo reason of a refusal, read as the client reads it (ziggurat_client.errors)."""
    info = error_info(error.trailing_metadata())
    return info[0] if info else ""


NORMAL_PYLOS_ENDS = {
    game_pb2.TERMINATION_PYRAMID_COMPLETE,
    game_pb2.TERMINATION_NO_LEGAL_MOVE,
    game_pb2.TERMINATION_REPETITION,
    game_pb2.TERMINATION_MOVE_LIMIT,
}


async def _bot_match(client: ZigguratClient, bots: tuple[str, str], per_move_ms: int, max_moves: int) -> str:
    """A Pylos match of two built-in bots under a forfeit-on-timeout clock; its id."""
    match = await client.create_match(
        pylos_config(max_moves=max_moves),
        time_control=match_pb2.TimeControl(
            per_move_ms=per_move_ms, on_timeout=match_pb2.TIMEOUT_POLICY_FORFEIT
        ),
    )
    for bot in bots:
        await _add_bot(client, match.match_id, bot)
    return match.match_id


async def _finished(client: ZigguratClient, match_ids: list[str], within: float) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while True:
        states = [await client.get_match(match_id) for match_id in match_ids]
        if all(s.status == match_pb2.MATCH_STATUS_FINISHED for s in states):
            return
        assert asyncio.get_running_loop().time() < deadline, "the bots' matches did not finish"
        await asyncio.sleep(0.1)


def _search_pool(server: RunningServer) -> SearchPool | None:
    house = server.server.house_bots
    assert isinstance(house, HouseBots)
    return house.search_pool


async def test_the_first_search_bot_seated_starts_the_pool_and_waits_for_its_worker(
    client: ZigguratClient, server: RunningServer
) -> None:
    # A server that seats no search bot never starts the pool (nor its forkserver): not at
    # start, not for a random bot.
    match = await client.create_match(pylos_config())
    await _add_bot(client, match.match_id, "random")
    assert _search_pool(server) is None
    # The first search bot's AddBot returns once a worker answers: seated, it is ready.
    match = await client.create_match(pylos_config())
    await _add_bot(client, match.match_id, "mcts")
    pool = _search_pool(server)
    assert pool is not None and pool.pids(), "AddBot returned before a search worker was up"
    assert os.getpid() not in pool.pids()


async def test_the_servers_collector_stays_on_while_its_bots_search(
    client: ZigguratClient, server: RunningServer
) -> None:
    match_id = await _bot_match(client, ("mcts", "alphabeta"), per_move_ms=2000, max_moves=6)
    pool = _search_pool(server)
    assert pool is not None
    samples: list[bool] = []
    while (await client.get_match(match_id)).status != match_pb2.MATCH_STATUS_FINISHED:
        for _ in range(50):  # the server runs on this very loop: sample its collector
            samples.append(gc.isenabled())
            await asyncio.sleep(0.002)
    assert len(samples) > 100 and all(samples)
    record = await client.record(match_id)
    assert not record.forfeits and record.outcome.termination == game_pb2.TERMINATION_MOVE_LIMIT
    assert len(record.moves) == 6  # both bots searched: 3 moves each, none by the clock
    assert not any(m.substituted for m in record.moves)
    assert pool.fallbacks == 0  # every move came from a search in a worker
    assert os.getpid() not in pool.pids()


async def test_twelve_timed_search_bots_at_once_never_run_out_of_time(
    client: ZigguratClient, server: RunningServer
) -> None:
    # Six matches at once, mcts against alphabeta, 1 s a move (0.2 s searches): before the bots
    # had workers of their own, their searches queued on one thread with deadlines from the
    # search's start, so the sixth in line answered after 1.3 s (and with 12 mcts bots at 3 s a
    # move, 24 of 28 moves ran out of time).
    match_ids = [await _bot_match(client, ("mcts", "alphabeta"), 1000, 20) for _ in range(6)]
    await _finished(client, match_ids, within=180)
    for match_id in match_ids:
        record = await client.record(match_id)
        assert record.outcome.termination in NORMAL_PYLOS_ENDS, record.outcome
        assert not record.forfeits, record.forfeits
        assert len(record.moves) >= 16 and not any(m.substituted for m in record.moves)
