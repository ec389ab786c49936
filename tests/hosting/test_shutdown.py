"""Graceful shutdown of a real ``ziggurat serve`` process: SIGTERM, streams, database, restart.

Every stream open at shutdown (WatchMatch, Play, ConnectBot) ends with UNAVAILABLE and the
reason SERVER_SHUTTING_DOWN (docs/operations.md), never with OK: a client can tell a restart
from the end of a match.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import grpc

from tests.servers import ServerProcess, kabaleo_config
from ziggurat.v1 import bot_service_pb2 as bpb
from ziggurat.v1 import bot_service_pb2_grpc as bgrpc
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.wire.errors import error_reason
from ziggurat_client import ZigguratClient, ZigguratError
from ziggurat_client.client import MatchHandle


async def started(client: ZigguratClient, seats: int = 2) -> tuple[str, list[MatchHandle]]:
    match = await client.create_match(kabaleo_config(seats))
    handles = [await client.join(match.match_id, f"bot{i}") for i in range(seats)]
    return match.match_id, sorted(handles, key=lambda h: h.seat)


async def play_moves(client: ZigguratClient, match_id: str, handles: list[MatchHandle], count: int) -> None:
    """Play up to ``count`` moves (first legal move each time), stopping at the end."""
    for _ in range(count):
        public = await client.get_match(match_id)
        if public.status == match_pb2.MATCH_STATUS_FINISHED:
            return
        mover = handles[public.view.to_move - 1]
        view = (await client.get_match(match_id, mover)).view
        await client.submit_move(mover, view.legal_moves[0], ply=view.ply)


async def collect(events: Any) -> tuple[list[match_pb2.Event], BaseException | None]:
    """Events of a stream until it ends; the error it ended with, if any."""
    seen: list[match_pb2.Event] = []
    try:
        async for event in events:
            seen.append(event)
    except (ZigguratError, grpc.aio.AioRpcError) as error:
        return seen, error
    return seen, None


def assert_shutting_down(error: BaseException | None) -> None:
    """The stream ended with UNAVAILABLE and the reason SERVER_SHUTTING_DOWN."""
    assert error is not None, "a stream cut by shutdown must not end with OK"
    if isinstance(error, ZigguratError):
        assert (error.code, error.reason) == (grpc.StatusCode.UNAVAILABLE, "SERVER_SHUTTING_DOWN"), error
    else:
        assert isinstance(error, grpc.aio.AioRpcError)
        assert error.code() == grpc.StatusCode.UNAVAILABLE, error
        assert error_reason(error) == "SERVER_SHUTTING_DOWN", error


async def wait_exit(proc: ServerProcess, timeout: float) -> int:
    assert proc.proc is not None
    return await asyncio.to_thread(proc.proc.wait, timeout)


def check_database(path: Path, match_id: str) -> int:
    """PRAGMA integrity_check passes and the match is there; returns its number of events."""
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("SELECT COUNT(*) FROM matches WHERE match_id = ?", (match_id,)).fetchone() == (1,)
        (events,) = db.execute("SELECT COUNT(*) FROM events WHERE match_id = ?", (match_id,)).fetchone()
        return int(events)
    finally:
        db.close()


async def test_sigterm_ends_streams_exits_zero_and_restart_serves(server_process: ServerProcess) -> None:
    address = await asyncio.to_thread(server_process.start)
    async with ZigguratClient(address) as client:
        match_id, handles = await started(client)
        await play_moves(client, match_id, handles, 5)
        spectator = asyncio.create_task(collect(client.watch(match_id)))
        seat_stream = asyncio.create_task(collect(client.watch(match_id, handle=handles[0])))
        # A bot on the Play stream, waiting for its turn.
        play_call = client.stub.Play(metadata=handles[1].metadata)
        await play_call.write(spb.PlayRequest(match_id=match_id))
        bot = asyncio.create_task(collect(_play_events(play_call)))
        # A remote bot on its ConnectBot stream, waiting for an assignment.
        remote = bgrpc.BotServiceStub(client.channel).ConnectBot(
            bpb.ConnectBotRequest(name="waiting-bot", games=[game_pb2.GAME_PYLOS]),
            metadata=(("authorization", "Bearer remote-bot-token-0123456789"),),
        )
        remote_bot = asyncio.create_task(collect(_bot_messages(remote)))
        await asyncio.sleep(0.3)  # let every stream catch up and go live
        streams = (spectator, seat_stream, bot, remote_bot)
        assert not any(task.done() for task in streams)
        before = await client.get_match(match_id, handles[0])

        assert server_process.proc is not None
        started_at = time.monotonic()
        server_process.proc.send_signal(signal.SIGTERM)
        code = await wait_exit(server_process, 10)
        assert code == 0
        assert time.monotonic() - started_at < 4, "the open streams do not hold the shutdown"
        for task in streams:
            events, error = await asyncio.wait_for(task, 5)  # every stream ended
            assert events, "the stream delivered the backlog before it ended"
            assert_shutting_down(error)
        assert server_process.proc.stderr is not None
        log = server_process.proc.stderr.read()
        assert "Traceback" not in log, log
        assert " ERROR " not in log, log
        assert "ending 4 open streams" in log, log

    events = check_database(server_process.db_path, match_id)
    assert events >= before.last_seq
    assert (
        not Path(f"{server_process.db_path}-wal").exists()
        or Path(f"{server_process.db_path}-wal").stat().st_size == 0
    )

    # A restarted server still serves the match, with the same tokens, to its end.
    address = await asyncio.to_thread(server_process.start)
    async with ZigguratClient(address) as client:
        after = await client.get_match(match_id, handles[0])
        assert after.status == match_pb2.MATCH_STATUS_ACTIVE
        assert after.view == before.view
        assert after.last_seq >= before.last_seq
        await play_moves(client, match_id, handles, 100)
        final = await client.get_match(match_id)
        assert final.status == match_pb2.MATCH_STATUS_FINISHED
        record = await client.record(match_id)
        assert len(record.moves) == 24
    code = await asyncio.to_thread(server_process.terminate)
    assert code == 0
    check_database(server_process.db_path, match_id)


async def _bot_messages(call: Any) -> Any:
    async for response in call:
        yield response


async def _play_events(call: Any) -> Any:
    async for response in call:
        for event in response.events:
            yield event


async def test_second_sigterm_forces_exit(server_process: ServerProcess) -> None:
    # The final WAL checkpoint waits (SQLite's busy timeout) for a reader of an old snapshot,
    # here a backup-like reader in this process: the graceful shutdown is held up by it.
    address = await asyncio.to_thread(server_process.start)
    async with ZigguratClient(address) as client:
        match_id, handles = await started(client)
        reader = sqlite3.connect(server_process.db_path, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM events").fetchone()  # the snapshot is now held
        await play_moves(client, match_id, handles, 2)  # the log moves past the reader's snapshot
        assert server_process.proc is not None
        pid = server_process.proc.pid
        os.kill(pid, signal.SIGTERM)
        await asyncio.sleep(1.0)
        assert server_process.proc.poll() is None, "the first signal waits for the checkpoint"
        started_at = time.monotonic()
        os.kill(pid, signal.SIGTERM)
        code = await wait_exit(server_process, 5)
        assert code != 0, "a forced exit is not a clean one"
        assert time.monotonic() - started_at < 3
        assert server_process.proc.stderr is not None
        assert "second signal" in server_process.proc.stderr.read()
        reader.execute("COMMIT")
        reader.close()
    # Committed moves are never lost, even by a forced exit (every commit is a transaction).
    check_database(server_process.db_path, match_id)
    address = await asyncio.to_thread(server_process.start)
    async with ZigguratClient(address) as client:
        public = await client.get_match(match_id)
        assert public.status == match_pb2.MATCH_STATUS_ACTIVE
        await play_moves(client, match_id, handles, 100)
        assert (await client.get_match(match_id)).status == match_pb2.MATCH_STATUS_FINISHED
