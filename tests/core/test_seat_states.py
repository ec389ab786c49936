"""One seat-state vocabulary: events, TurnStarted seats and GetMatch agree, across restarts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.servers import RunningServer, kabaleo_config, pylos_config, random_chooser
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat_client import MatchHandle, ZigguratClient, ZigguratError

S = match_pb2
CHOSEN = S.SEAT_ASSIGNMENT_CHOSEN


async def _started(client: ZigguratClient, config: game_pb2.GameConfig, **tc: int) -> list[MatchHandle]:
    match = await client.create_match(config, time_control=S.TimeControl(**tc), seat_assignment=CHOSEN)
    return [await client.join(match.match_id, f"p{s}", s) for s in range(1, config.seats + 1)]


def _seat_events(events: list[S.Event], seat: int) -> list[int]:
    return [e.seat_changed.seat.state for e in events if e.seat_changed.seat.seat == seat]


async def test_turn_started_carries_the_real_seat_states(
    server: RunningServer, client: ZigguratClient
) -> None:
    handles = await _started(client, pylos_config())
    match_id = handles[0].match_id
    results = await asyncio.wait_for(
        asyncio.gather(*(client.play(h, random_chooser(h.seat)) for h in handles)), 30
    )
    assert all(results)
    events = [e async for e in client.watch(match_id)]
    started = next(e.match_started for e in events if e.WhichOneof("kind") == "match_started")
    assert [s.state for s in started.seats] == [S.SEAT_STATE_JOINED] * 2, "nobody had connected yet"
    turns = [e.turn_started for e in events if e.WhichOneof("kind") == "turn_started"]
    assert all(t.seats[t.seat - 1].state == S.SEAT_STATE_CONNECTED for t in turns[2:]), (
        "the seat to move is on its Play stream"
    )
    assert all(s.state != S.SEAT_STATE_UNSPECIFIED for t in turns for s in t.seats)


async def test_a_forfeited_seat_has_one_state_everywhere(
    server: RunningServer, client: ZigguratClient
) -> None:
    """Illegal moves past the conduct limit: ILLEGAL_MOVES in the event, the next turns and GetMatch."""
    handles = await _started(client, kabaleo_config(3), max_illegal_moves=1)
    match_id = handles[0].match_id
    summary = await client.get_match(match_id)
    cheat = next(h for h in handles if h.seat == summary.view.to_move)
    for _ in range(2):
        with pytest.raises(ZigguratError) as refused:
            await client.submit_move(cheat, "Z99")
    assert "forfeits" in refused.value.message
    resigner = next(h for h in handles if h.seat != cheat.seat)
    await client.resign(resigner)
    summary = await client.get_match(match_id)
    assert summary.seats[cheat.seat - 1].state == S.SEAT_STATE_ILLEGAL_MOVES
    assert summary.seats[resigner.seat - 1].state == S.SEAT_STATE_RESIGNED
    events = [e async for e in client.watch(match_id)]
    assert _seat_events(events, cheat.seat)[-1] == S.SEAT_STATE_ILLEGAL_MOVES
    assert _seat_events(events, resigner.seat)[-1] == S.SEAT_STATE_RESIGNED
    assert events[-1].WhichOneof("kind") == "match_ended", "the last seat standing finishes alone"
    record = await client.record(match_id)
    assert {f.seat: f.termination for f in record.forfeits} == {
        cheat.seat: game_pb2.TERMINATION_ILLEGAL_MOVE,
        resigner.seat: game_pb2.TERMINATION_RESIGNATION,
    }
    after = await client.get_match(match_id)
    assert after.seats[cheat.seat - 1].state == S.SEAT_STATE_ILLEGAL_MOVES, "and once the match is over"


async def test_abandoned_seats_show_disconnected_also_after_a_restart(tmp_path: Path) -> None:
    options = ServeOptions(host="127.0.0.1", port=0, db_path=str(tmp_path / "z.db"), grace_seconds=0.5)
    server = ZigguratServer(options)
    port = await server.start()
    try:
        async with ZigguratClient(f"127.0.0.1:{port}") as client:
            handles = await _started(client, pylos_config())
            match_id = handles[0].match_id
            call = client.stub.Play(metadata=handles[0].metadata)  # type: ignore[call-arg]
            await call.write(spb.PlayRequest(match_id=match_id))
            await anext(aiter(call))
            assert (await client.get_match(match_id)).seats[0].state == S.SEAT_STATE_CONNECTED
            call.cancel()
            await asyncio.sleep(0.1)
            seats = (await client.get_match(match_id)).seats
            assert [s.state for s in seats] == [S.SEAT_STATE_DISCONNECTED, S.SEAT_STATE_JOINED]
    finally:
        await server.stop()
    server = ZigguratServer(options)
    port = await server.start()
    try:
        async with ZigguratClient(f"127.0.0.1:{port}") as client:
            seats = (await client.get_match(match_id)).seats
            assert [s.state for s in seats] == [S.SEAT_STATE_DISCONNECTED, S.SEAT_STATE_JOINED]
    finally:
        await server.stop()


async def test_the_illegal_move_count_survives_a_restart(tmp_path: Path) -> None:
    options = ServeOptions(host="127.0.0.1", port=0, db_path=str(tmp_path / "z.db"), grace_seconds=0.5)
    server = ZigguratServer(options)
    port = await server.start()
    try:
        async with ZigguratClient(f"127.0.0.1:{port}") as client:
            light, _dark = await _started(client, pylos_config(), max_illegal_moves=2)
            for _ in range(2):
                with pytest.raises(ZigguratError) as refused:
                    await client.submit_move(light, "9z9")
                assert refused.value.reason == "MALFORMED_MOVE"
    finally:
        await server.stop()
    server = ZigguratServer(options)
    port = await server.start()
    try:
        async with ZigguratClient(f"127.0.0.1:{port}") as client:
            with pytest.raises(ZigguratError) as third:
                await client.submit_move(light, "9z9")
            assert "forfeits" in third.value.message, "two before the restart + one = past the limit of 2"
            summary = await client.get_match(light.match_id)
            assert summary.status == S.MATCH_STATUS_FINISHED
            assert summary.seats[0].state == S.SEAT_STATE_ILLEGAL_MOVES
    finally:
        await server.stop()
