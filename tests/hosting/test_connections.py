"""Connections cannot grow the log or the messages: flapping, catch-up batches, stream limits,
half-closed Play streams.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest

from tests.servers import RunningServer, kabaleo_config, play_items, pylos_config, random_chooser
from ziggurat.core import render
from ziggurat.core.decide import PRESENCE_EVENTS_PER_TURN
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat_client import MatchHandle, ZigguratClient

CHOSEN = match_pb2.SEAT_ASSIGNMENT_CHOSEN


async def _started(client: ZigguratClient, config: game_pb2.GameConfig, **tc: int) -> list[MatchHandle]:
    match = await client.create_match(
        config, time_control=match_pb2.TimeControl(**tc), seat_assignment=CHOSEN
    )
    return [await client.join(match.match_id, f"p{s}", s) for s in range(1, config.seats + 1)]


async def _replay_sizes(
    call: grpc.aio.StreamStreamCall | grpc.aio.UnaryStreamCall, last_seq: int
) -> tuple[list[match_pb2.Event], int]:
    """Read a stream until ``last_seq``: its events and the size of its largest message."""
    events: list[match_pb2.Event] = []
    largest = 0
    async for response in call:
        largest = max(largest, len(response.SerializeToString()))
        events.extend(response.events)
        if events and events[-1].seq >= last_seq:
            break
    call.cancel()
    return events, largest


async def _open_and_close_play(client: ZigguratClient, handle: MatchHandle) -> None:
    call = client.stub.Play(metadata=handle.metadata)  # type: ignore[call-arg]
    await call.write(spb.PlayRequest(match_id=handle.match_id, after_seq=0))
    await anext(aiter(call))  # the stream is open: the seat is connected
    call.cancel()


async def test_flapping_a_seat_10000_times_keeps_the_log_and_messages_bounded(
    server: RunningServer, client: ZigguratClient
) -> None:
    handles = await _started(client, pylos_config())
    match_id = handles[0].match_id
    match = server.server.manager.get(match_id)
    start = (await client.get_match(match_id)).last_seq
    # Real Play streams opened and dropped, as a misbehaving bot would...
    for _ in range(200):
        await _open_and_close_play(client, handles[1])
    # ...and the same connect/disconnect the servicer makes for each stream, 9,800 more times
    # (direct calls: through gRPC the loop would take minutes on a loaded machine).
    for _ in range(9_800):
        match.connect(1)
        match.disconnect(1)
    await asyncio.sleep(0.05)
    last_seq = (await client.get_match(match_id)).last_seq
    assert last_seq - start <= PRESENCE_EVENTS_PER_TURN, "presence is recorded within the turn's budget"
    # The game goes on; each new turn may record at most the budget again, however much flapping.
    handle = handles[0]
    mine = await client.get_match(match_id, handle)
    await client.submit_move(handle, mine.view.legal_moves[0], mine.view.ply)
    for _ in range(50):
        await _open_and_close_play(client, handles[1])
    summary = await client.get_match(match_id)
    assert summary.last_seq - last_seq <= 2 + PRESENCE_EVENTS_PER_TURN  # the move, the turn, presence
    assert summary.seats[1].state == match_pb2.SEAT_STATE_DISCONNECTED, "GetMatch shows it live"
    # Resume from 0 works for the opponent (Play) and for a spectator (WatchMatch).
    play = client.stub.Play(metadata=handles[0].metadata)  # type: ignore[call-arg]
    await play.write(spb.PlayRequest(match_id=match_id, after_seq=0))
    opponent, largest_play = await _replay_sizes(play, summary.last_seq)
    spectator, largest_watch = await _replay_sizes(
        client.stub.WatchMatch(spb.WatchMatchRequest(match_id=match_id, after_seq=0)), summary.last_seq
    )
    for events in (opponent, spectator):  # (the opponent's own stream may add its connection)
        assert [e.seq for e in events] == list(range(1, len(events) + 1))
        assert len(events) >= summary.last_seq
    assert max(largest_play, largest_watch) < 64 * 1024
    # and the match still plays to its end
    ended = await asyncio.wait_for(
        asyncio.gather(*(client.play(h, random_chooser(h.seat)) for h in handles)), 30
    )
    assert all(e is not None for e in ended)


async def test_a_catch_up_comes_in_bounded_messages_that_never_split_a_change(
    server: RunningServer, client: ZigguratClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    handles = await _started(client, kabaleo_config(4))
    await asyncio.wait_for(asyncio.gather(*(client.play(h, random_chooser(h.seat)) for h in handles)), 30)
    match_id = handles[0].match_id
    whole = [e async for e in client.watch(match_id)]
    monkeypatch.setattr(render, "MESSAGE_BYTES", 1024)
    for handle in (None, handles[2]):
        metadata = handle.metadata if handle else ()
        call = client.stub.WatchMatch(spb.WatchMatchRequest(match_id=match_id), metadata=metadata)
        messages = [list(response.events) async for response in call]
        assert len(messages) > 5, "the catch-up came in several messages"
        continuations = {"turn_started", "match_started", "match_ended"}
        for events in messages:
            assert sum(len(e.SerializeToString()) + 6 for e in events[:-1]) <= 1024
        for later in messages[1:]:
            first = later[0]
            assert first.WhichOneof("kind") not in continuations, "a change is never cut in two"
            assert not first.move_played.substituted
        received = [e for events in messages for e in events]
        if handle is None:
            assert received == whole
        else:  # secrecy holds in the batches: only the seat's own objective before the end
            last_move = max(i for i, e in enumerate(received) if e.WhichOneof("kind") == "move_played")
            for event in received[:last_move]:  # (the last move and the end reveal everything)
                kind = event.WhichOneof("kind")
                view = getattr(event, kind).view if kind in ("match_started", "move_played") else None
                if view is not None:
                    shown = list(view.kabaleo.objectives)
                    assert [s for s, letter in enumerate(shown, 1) if letter != "?"] == [handle.seat]
            final = received[-1].match_ended.view.kabaleo.objectives
            assert "?" not in final, "the reveal"


async def test_streams_per_seat_and_per_match_are_limited(tmp_path: Path) -> None:
    options = ServeOptions(
        host="127.0.0.1",
        port=0,
        db_path=str(tmp_path / "z.db"),
        max_streams_per_match=6,
        max_streams_per_seat=2,
    )
    server = ZigguratServer(options)
    port = await server.start()
    try:
        async with ZigguratClient(f"127.0.0.1:{port}") as client:
            handles = await _started(client, pylos_config())
            match_id = handles[0].match_id
            open_calls = []

            async def opened(metadata: tuple[tuple[str, str], ...] = ()) -> grpc.aio.UnaryStreamCall:
                call = client.stub.WatchMatch(spb.WatchMatchRequest(match_id=match_id), metadata=metadata)
                await anext(aiter(call))
                open_calls.append(call)
                return call

            await opened(handles[0].metadata)
            await opened(handles[0].metadata)
            with pytest.raises(grpc.aio.AioRpcError) as per_seat:
                await opened(handles[0].metadata)
            assert per_seat.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "TOO_MANY_STREAMS" in str(per_seat.value.trailing_metadata())
            await opened(handles[1].metadata)  # the other seat has its own allowance
            for _ in range(3):
                await opened()
            with pytest.raises(grpc.aio.AioRpcError) as per_match:
                await opened()
            assert per_match.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            open_calls.pop().cancel()
            await asyncio.sleep(0.1)
            await opened()  # a closed stream frees its place
            for call in open_calls:
                call.cancel()
    finally:
        await server.stop()


async def test_a_half_closed_play_stream_counts_as_disconnected(
    server: RunningServer, client: ZigguratClient
) -> None:
    """A bot that closed its sending side can never move: its disconnect grace runs, and the
    stream still receives everything to the end.
    """
    light, dark = await _started(client, pylos_config(), disconnect_grace_ms=150)
    call = client.stub.Play(metadata=light.metadata)  # type: ignore[call-arg]
    await call.write(spb.PlayRequest(match_id=light.match_id, after_seq=0))
    await call.done_writing()
    dark_task = asyncio.create_task(client.play(dark, random_chooser(2)))
    kinds = []
    async for item in play_items(call):
        kinds.append(item.event.WhichOneof("kind"))
    assert kinds[-1] == "match_ended"
    summary = await client.get_match(light.match_id)
    assert summary.seats[0].state == match_pb2.SEAT_STATE_TIMED_OUT
    record = await client.record(light.match_id)
    assert [(f.seat, f.termination) for f in record.forfeits] == [(1, game_pb2.TERMINATION_TIMEOUT)]
    assert await asyncio.wait_for(dark_task, 5) is not None


async def test_a_move_that_fails_inside_the_server_is_answered_and_logged(
    server: RunningServer,
    client: ZigguratClient,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A fault of the server's own while it handles a Play move does not kill the stream
    silently: the bot gets a MoveRejected (SERVER_ERROR), the error is logged, and the
    stream goes on.
    """
    light, dark = await _started(client, pylos_config())
    match = server.server.manager.get(light.match_id)
    real_play = match.play
    calls = 0

    async def faulty(*args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("injected fault")
        return await real_play(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(match, "play", faulty)
    call = client.stub.Play(metadata=light.metadata)  # type: ignore[call-arg]
    await call.write(spb.PlayRequest(match_id=light.match_id))
    items = play_items(call)
    turn = None
    while turn is None:
        item = await anext(items)
        if item.event.WhichOneof("kind") == "turn_started" and item.event.turn_started.seat == 1:
            turn = item.event.turn_started
    await call.write(spb.PlayRequest(move=turn.legal_moves[0], ply=turn.ply))
    item = await anext(items)
    while item.kind != "move_rejected":
        item = await anext(items)
    assert item.move_rejected.reason == "SERVER_ERROR"
    assert "a move on a Play stream failed" in caplog.text
    await call.write(spb.PlayRequest(move=turn.legal_moves[0], ply=turn.ply))
    played = None
    while played is None:
        item = await anext(items)
        if item.event.WhichOneof("kind") == "move_played":
            played = item.event.move_played
    assert played.seat == 1 and played.move == turn.legal_moves[0], "the stream carried on"
    call.cancel()
    assert dark.seat == 2
