"""ClaimAbandoned: a player still in the game ends the part of seats that have been away (no
stream open) for the match's claim time. A real server on a loopback port, real clients.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from tests.servers import kabaleo_config, pylos_config
from ziggurat.bots.house import HouseBots
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.verify import verify_record
from ziggurat_client import ZigguratClient, ZigguratError
from ziggurat_client.client import MatchHandle

CLAIM_AFTER_S = 1.0


@pytest.fixture
async def address(tmp_path: Path) -> AsyncIterator[str]:
    """A server whose seats may be claimed after 1 s away."""
    options = ServeOptions(
        host="127.0.0.1",
        port=0,
        db_path=str(tmp_path / "z.db"),
        grace_seconds=0.5,
        claim_after_s=CLAIM_AFTER_S,
    )
    server = ZigguratServer(options, house_bots=HouseBots)
    port = await server.start()
    yield f"127.0.0.1:{port}"
    await server.stop()


async def _connected(client: ZigguratClient, handle: MatchHandle) -> asyncio.Task[None]:
    """Keep a stream of ``handle``'s seat open (it is then in the game, never away)."""

    async def follow() -> None:
        async for _ in client.watch(handle.match_id, handle=handle):
            pass

    task = asyncio.create_task(follow())
    while (await client.get_match(handle.match_id, handle)).seats[handle.seat - 1].state != (
        match_pb2.SEAT_STATE_CONNECTED
    ):
        await asyncio.sleep(0.02)
    return task


async def test_a_player_claims_an_untimed_pylos_game_whose_opponent_never_came(address: str) -> None:
    async with ZigguratClient(address) as here, ZigguratClient(address) as gone:
        match = await here.create_match(pylos_config())
        mine = await here.join(match.match_id, "here")
        theirs = await gone.join(match.match_id, "gone")  # and never opens a stream
        follow = await _connected(here, mine)
        try:
            with pytest.raises(ZigguratError) as early:
                await here.claim_abandoned(mine)
            assert early.value.reason == "NOT_ABANDONED"
            assert early.value.code == grpc.StatusCode.FAILED_PRECONDITION
            assert 0 < int(early.value.metadata["claimable_in_ms"]) <= CLAIM_AFTER_S * 1000
            seen = await here.get_match(match.match_id, mine)
            assert seen.claim_after_ms == CLAIM_AFTER_S * 1000
            assert seen.seats[mine.seat - 1].away_since_ms == 0, "a seat with a stream open is not away"
            now_ms = time.time() * 1000
            assert now_ms - CLAIM_AFTER_S * 1000 < seen.seats[theirs.seat - 1].away_since_ms <= now_ms
            assert seen.status == match_pb2.MATCH_STATUS_ACTIVE, "nothing changed"

            await asyncio.sleep(CLAIM_AFTER_S + 0.1)
            assert await here.claim_abandoned(mine) == [theirs.seat]
            ended = await here.get_match(match.match_id, mine)
            assert ended.status == match_pb2.MATCH_STATUS_FINISHED
            assert ended.seats[theirs.seat - 1].state == match_pb2.SEAT_STATE_ABANDONED
            assert all(seat.away_since_ms == 0 for seat in ended.seats) and ended.claim_after_ms == 0
            record = await here.record(match.match_id)
            assert record.outcome.termination == game_pb2.TERMINATION_ABANDONED
            assert record.outcome.ranks[mine.seat - 1] == 1 and record.outcome.ranks[theirs.seat - 1] == 2
            assert verify_record(record).ok
            with pytest.raises(ZigguratError) as again:
                await here.claim_abandoned(mine)
            assert again.value.reason == "GAME_OVER"
        finally:
            follow.cancel()


async def test_in_kabaleo_the_abandoned_seat_ranks_last_and_the_others_play_on(address: str) -> None:
    async with (
        ZigguratClient(address) as one,
        ZigguratClient(address) as two,
        ZigguratClient(address) as gone,
    ):
        match = await one.create_match(kabaleo_config(3))
        first, second = await one.join(match.match_id, "one"), await two.join(match.match_id, "two")
        left = await gone.join(match.match_id, "gone")
        follows = [await _connected(one, first), await _connected(two, second)]
        try:
            # The seat that left had a stream, then closed it: away from then on.
            (await _connected(gone, left)).cancel()
            await asyncio.sleep(CLAIM_AFTER_S + 0.1)
            assert await two.claim_abandoned(second) == [left.seat]
            seen = await one.get_match(match.match_id, first)
            assert seen.status == match_pb2.MATCH_STATUS_ACTIVE, "two players are still in the game"
            assert seen.seats[left.seat - 1].state == match_pb2.SEAT_STATE_ABANDONED
            with pytest.raises(ZigguratError) as nobody:
                await one.claim_abandoned(first)
            assert nobody.value.reason == "NOT_ABANDONED" and "every other seat" in nobody.value.message
            with pytest.raises(ZigguratError) as forfeited:
                await gone.claim_abandoned(left)
            assert forfeited.value.reason == "SEAT_FORFEITED"
        finally:
            for task in follows:
                task.cancel()


async def test_a_built_in_bot_is_never_away_and_a_grace_turns_claims_off(address: str) -> None:
    async with ZigguratClient(address) as here:
        match = await here.create_match(pylos_config())
        mine = await here.join(match.match_id, "here")
        await here.add_bot(match.match_id, "random")
        await asyncio.sleep(CLAIM_AFTER_S + 0.1)
        seen = await here.get_match(match.match_id, mine)
        assert all(seat.away_since_ms == 0 for seat in seen.seats if seat.seat != mine.seat)
        with pytest.raises(ZigguratError) as refused:
            await here.claim_abandoned(mine)
        assert refused.value.reason == "NOT_ABANDONED"

        graced = await here.create_match(
            pylos_config(), time_control=match_pb2.TimeControl(disconnect_grace_ms=60_000)
        )
        assert graced.claim_after_ms == 0, "a match with a disconnect grace settles absence itself"
        seat = await here.join(graced.match_id, "here")
        await here.join(graced.match_id, "gone")
        with pytest.raises(ZigguratError) as off:
            await here.claim_abandoned(seat)
        assert off.value.reason == "CLAIMS_OFF"
