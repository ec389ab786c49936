"""A store that refuses writes never wedges or corrupts a match.

A real server on a loopback port, a real client, a real database file, and a real fault
on that file (another connection holding the write lock; a full tmpfs; the file made
immutable) switched on while every kind of change is attempted: create, join, move,
resign, abort, a seat's connection, a timeout. Each caller gets UNAVAILABLE with the
reason STORE_UNAVAILABLE; memory stays what the log says (GetMatch and the events equal
a fresh restore of the same file); once the fault is off, every match finishes, nothing
acknowledged is lost, and the matches that were not touched are unaffected.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.servers import kabaleo_config, play_items, pylos_config, random_chooser
from tests.store_faults import (
    Fault,
    FullDisk,
    LockedDatabase,
    ReadOnlyFile,
    can_chattr,
    can_mount,
    tiny_filesystem,
)
from ziggurat.core.match import Match
from ziggurat.core.render import render_event, render_match
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.store.sqlite import Store
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.verify import verify_record
from ziggurat.wire.errors import ApiError
from ziggurat_client import MatchHandle, ZigguratClient, ZigguratError

CHOSEN = match_pb2.SEAT_ASSIGNMENT_CHOSEN
PRESENCE = {match_pb2.SEAT_STATE_CONNECTED, match_pb2.SEAT_STATE_DISCONNECTED, match_pb2.SEAT_STATE_JOINED}


@contextlib.asynccontextmanager
async def serving(db: Path) -> AsyncIterator[tuple[ZigguratServer, ZigguratClient]]:
    server = ZigguratServer(ServeOptions(host="127.0.0.1", port=0, db_path=str(db), grace_seconds=0.5))
    port = await server.start()
    try:
        async with ZigguratClient(f"127.0.0.1:{port}") as client:
            yield server, client
    finally:
        await server.stop()


async def refused(call: Awaitable[Any]) -> ZigguratError:
    """The call fails with UNAVAILABLE / STORE_UNAVAILABLE (and nothing else)."""
    with pytest.raises(ZigguratError) as caught:
        await call
    assert caught.value.code == grpc.StatusCode.UNAVAILABLE, caught.value
    assert caught.value.reason == "STORE_UNAVAILABLE", caught.value
    return caught.value


def _without_presence(match: match_pb2.Match) -> bytes:
    """The summary with connection states folded into JOINED and without the time a seat has
    been away or the server's claim setting: live facts and settings, not the log's."""
    copy = match_pb2.Match()
    copy.CopyFrom(match)
    copy.claim_after_ms = 0
    for seat in copy.seats:
        seat.away_since_ms = 0
        if seat.state in PRESENCE:
            seat.state = match_pb2.SEAT_STATE_JOINED
    return copy.SerializeToString()


def fresh_restore(db: Path, copy: Path, match_id: str) -> Match:
    """The match rebuilt from a snapshot of ``db`` alone (read-only: the restore may not write)."""
    source, target = sqlite3.connect(db, timeout=5), sqlite3.connect(copy)
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()
    store = Store(copy)
    try:
        store._db.execute("PRAGMA query_only=1")
        stored = store.load(match_id)
        assert stored is not None
        restored = Match.restore(stored, store, log_events=lambda _: None)
        restored.close()
        return restored
    finally:
        with contextlib.suppress(Exception):
            store.close()


async def assert_memory_is_the_log(
    client: ZigguratClient, db: Path, scratch: Path, match_id: str, handles: list[MatchHandle]
) -> None:
    """GetMatch (spectator and every seat) and the whole event stream equal a fresh restore."""
    scratch.mkdir(exist_ok=True)
    restored = fresh_restore(db, scratch / f"{match_id}-{time.monotonic_ns()}.db", match_id)
    live = await client.get_match(match_id)
    assert _without_presence(live) == _without_presence(render_match(restored, None))
    for handle in handles:
        mine = await client.get_match(match_id, handle)
        assert _without_presence(mine) == _without_presence(render_match(restored, handle.seat - 1))
    events: list[bytes] = []
    async for event in client.watch(match_id):
        events.append(event.SerializeToString())
        if event.seq == live.last_seq:
            break
    assert events == [render_event(restored, entry, None).SerializeToString() for entry in restored.entries]


async def to_move(client: ZigguratClient, handles: list[MatchHandle]) -> tuple[MatchHandle, list[str], int]:
    summary = await client.get_match(handles[0].match_id)
    handle = next(h for h in handles if h.seat == summary.view.to_move)
    mine = await client.get_match(handle.match_id, handle)
    return handle, list(mine.view.legal_moves), mine.view.ply


async def run_scenario(db: Path, fault: Fault, scratch: Path) -> None:
    rng = random.Random(7)
    acknowledged: dict[str, list[tuple[int, str]]] = {}  # match id -> (seq, move) the server confirmed
    async with serving(db) as (server, client):
        # Set up while the store works: two untimed matches under way, a timed one, a waiting one.
        pylos = await client.create_match(pylos_config(), seat_assignment=CHOSEN)
        pylos_seats = [await client.join(pylos.match_id, f"p{s}", s) for s in (1, 2)]
        kabaleo = await client.create_match(kabaleo_config(3), seat_assignment=CHOSEN)
        kabaleo_seats = [await client.join(kabaleo.match_id, f"k{s}", s) for s in (1, 2, 3)]
        timed = await client.create_match(
            pylos_config(),
            time_control=match_pb2.TimeControl(per_move_ms=300, on_timeout=match_pb2.TIMEOUT_POLICY_FORFEIT),
            seat_assignment=CHOSEN,
        )
        timed_seats = [await client.join(timed.match_id, f"t{s}", s) for s in (1, 2)]
        waiting = await client.create_match(pylos_config(), seat_assignment=CHOSEN)
        waiting_seats = [await client.join(waiting.match_id, "early", 1)]
        doomed = await client.create_match(pylos_config(), seat_assignment=CHOSEN)
        for handles in (pylos_seats, kabaleo_seats):
            for _ in range(3):
                handle, legal, ply = await to_move(client, handles)
                move = rng.choice(legal)
                done = await client.submit_move(handle, move, ply)
                acknowledged.setdefault(handle.match_id, []).append((done.seq, done.move))
        before = {m: (await client.get_match(m)).last_seq for m in (pylos.match_id, kabaleo.match_id)}

        fault.on()
        try:
            # create, join, move, resign: refused, nothing changed
            await refused(client.create_match(pylos_config()))
            await refused(client.join(waiting.match_id, "late", 2))
            handle, legal, ply = await to_move(client, pylos_seats)
            await refused(client.submit_move(handle, legal[0], ply))
            resigner = kabaleo_seats[1]
            await refused(client.resign(resigner))
            # abort (an organiser's call: the tournament runner calls Match.abort directly)
            with pytest.raises(ApiError) as aborted:
                server.manager.get(doomed.match_id).abort()
            assert aborted.value.reason == "STORE_UNAVAILABLE"
            # a seat connects (a seat change the server records) and plays on its Play stream:
            # the stream works, the move is refused with the reason, the stream goes on
            call = client.stub.Play(metadata=handle.metadata)  # type: ignore[call-arg]
            await call.write(spb.PlayRequest(match_id=handle.match_id, after_seq=0, move=legal[0], ply=ply))
            rejection = None
            async for item in play_items(call):
                if item.kind == "move_rejected":
                    rejection = item.move_rejected
                    break
            assert rejection is not None and rejection.reason == "STORE_UNAVAILABLE"
            call.cancel()
            # a timeout falls due while the store refuses it
            await asyncio.sleep(0.6)
            timed_now = await client.get_match(timed.match_id)
            assert timed_now.status == match_pb2.MATCH_STATUS_ACTIVE, "the timeout is not in the log yet"
            assert all(seat.state != match_pb2.SEAT_STATE_TIMED_OUT for seat in timed_now.seats)
            for match_id, handles in (
                (pylos.match_id, pylos_seats),
                (kabaleo.match_id, kabaleo_seats),
                (timed.match_id, timed_seats),
                (waiting.match_id, waiting_seats),
                (doomed.match_id, []),
            ):
                await assert_memory_is_the_log(client, db, scratch, match_id, handles)
            for match_id, last_seq in before.items():
                assert (await client.get_match(match_id)).last_seq == last_seq
            assert [m.match_id for m in await client.list_matches()].count(pylos.match_id) == 1
        finally:
            fault.off()

        # The store is back: the refused changes go through, server-owed ones happen by themselves.
        created = await client.create_match(pylos_config())
        assert created.status == match_pb2.MATCH_STATUS_WAITING
        late = await client.join(waiting.match_id, "late", 2)
        server.manager.get(doomed.match_id).abort()
        await client.resign(resigner)
        ended = [e async for e in client.watch(timed.match_id)][-1]
        assert ended.match_ended.outcome.termination == game_pb2.TERMINATION_TIMEOUT
        results = await asyncio.wait_for(
            asyncio.gather(
                *(client.play(h, random_chooser(h.seat)) for h in pylos_seats),
                *(client.play(h, random_chooser(h.seat)) for h in kabaleo_seats if h is not resigner),
                *(client.play(h, random_chooser(h.seat)) for h in [*waiting_seats, late]),
            ),
            60,
        )
        assert all(result is not None for result in results), "every match finished"
        for match_id, handles in (
            (pylos.match_id, pylos_seats),
            (kabaleo.match_id, kabaleo_seats),
            (timed.match_id, timed_seats),
            (waiting.match_id, [*waiting_seats, late]),
            (doomed.match_id, []),
        ):
            record = await client.record(match_id)
            assert verify_record(record).ok
            await assert_memory_is_the_log(client, db, scratch, match_id, handles)
            events = [e async for e in client.watch(match_id)]
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
            for seq, move in acknowledged.get(match_id, []):
                assert events[seq - 1].move_played.move == move, "an acknowledged move is in the log"
        kabaleo_record = await client.record(kabaleo.match_id)
        assert [(f.seat, f.termination) for f in kabaleo_record.forfeits] == [
            (2, game_pb2.TERMINATION_RESIGNATION)
        ]
        doomed_record = await client.record(doomed.match_id)
        assert doomed_record.outcome.termination == game_pb2.TERMINATION_ABORTED


async def test_a_locked_database_refuses_changes_and_the_matches_go_on(tmp_path: Path) -> None:
    db = tmp_path / "z.db"
    await run_scenario(db, LockedDatabase(db), tmp_path / "scratch")


@pytest.mark.skipif(not can_mount(), reason="mounting a tmpfs needs root (CAP_SYS_ADMIN)")
async def test_a_full_disk_refuses_changes_and_the_matches_go_on(tmp_path: Path) -> None:
    with tiny_filesystem(tmp_path / "fs") as fs:
        db = fs / "z.db"
        await run_scenario(db, FullDisk(db), tmp_path / "scratch")


async def test_a_read_only_file_refuses_changes_and_the_matches_go_on(tmp_path: Path) -> None:
    if not can_chattr(tmp_path):
        pytest.skip("making a file immutable needs root (CAP_LINUX_IMMUTABLE) on this filesystem")
    db = tmp_path / "z.db"
    await run_scenario(db, ReadOnlyFile(db), tmp_path / "scratch")


async def test_a_locked_database_never_stalls_the_event_loop(tmp_path: Path) -> None:
    """A refused write costs the event loop a few milliseconds, not the 5 s of sqlite's default."""
    db = tmp_path / "z.db"
    fault = LockedDatabase(db)
    async with serving(db) as (server, client):
        match = await client.create_match(pylos_config(), seat_assignment=CHOSEN)
        fault.on()
        try:
            stalls = []
            for _ in range(20):
                started = time.perf_counter()
                with pytest.raises(ApiError):
                    server.manager.get(match.match_id).join("x", None)
                stalls.append(time.perf_counter() - started)
        finally:
            fault.off()
    assert sorted(stalls)[len(stalls) // 2] < 0.05, f"a refused write blocked the loop for {stalls}"


async def test_what_a_restart_owes_a_match_waits_for_the_store(tmp_path: Path) -> None:
    """Restored while another process holds the write lock: the seats that were connected are
    disconnected now, their grace runs out, and the time-out is recorded once the lock goes.
    """
    db = tmp_path / "z.db"
    async with serving(db) as (_, client):
        match = await client.create_match(
            pylos_config(),
            time_control=match_pb2.TimeControl(disconnect_grace_ms=200),
            seat_assignment=CHOSEN,
        )
        light = await client.join(match.match_id, "p1", 1)
        await client.join(match.match_id, "p2", 2)
        call = client.stub.Play(metadata=light.metadata)  # type: ignore[call-arg]
        await call.write(spb.PlayRequest(match_id=light.match_id))
        await anext(aiter(call))
        await asyncio.sleep(0.1)
        assert (await client.get_match(light.match_id)).seats[0].state == match_pb2.SEAT_STATE_CONNECTED
        call.cancel()
    fault = LockedDatabase(db)
    server = ZigguratServer(ServeOptions(host="127.0.0.1", port=0, db_path=str(db), grace_seconds=0.5))
    fault.on()
    try:
        port = await server.start()
        async with ZigguratClient(f"127.0.0.1:{port}") as client:
            await asyncio.sleep(0.6)  # past the grace: the time-out is due but cannot be recorded
            summary = await client.get_match(light.match_id)
            assert summary.status == match_pb2.MATCH_STATUS_ACTIVE
            assert summary.seats[0].state == match_pb2.SEAT_STATE_DISCONNECTED
            fault.off()
            ended = [e async for e in client.watch(light.match_id)]
            assert ended[-1].match_ended.outcome.termination == game_pb2.TERMINATION_TIMEOUT
            assert match_pb2.SEAT_STATE_TIMED_OUT in [e.seat_changed.seat.state for e in ended]
    finally:
        fault.off()
        await server.stop()


async def test_a_random_move_owed_to_a_match_is_played_once_the_store_is_back(tmp_path: Path) -> None:
    """Under TIMEOUT_POLICY_RANDOM_MOVE the server's substitute move waits for the store, then
    comes exactly once, and the match plays on to its end.
    """
    db = tmp_path / "z.db"
    fault = LockedDatabase(db)
    async with serving(db) as (_, client):
        match = await client.create_match(
            kabaleo_config(2),
            time_control=match_pb2.TimeControl(
                per_move_ms=300, on_timeout=match_pb2.TIMEOUT_POLICY_RANDOM_MOVE
            ),
            seat_assignment=CHOSEN,
        )
        handles = [await client.join(match.match_id, f"p{s}", s) for s in (1, 2)]
        before = await client.get_match(match.match_id)
        fault.on()
        try:
            await asyncio.sleep(0.7)  # the first turn's time ran out while the store refused writes
            during = await client.get_match(match.match_id)
            assert during.last_seq == before.last_seq and during.view == before.view
        finally:
            fault.off()
        stalled = handles[before.view.to_move - 1]
        player = handles[2 - before.view.to_move]
        ended = await asyncio.wait_for(client.play(player, random_chooser(1)), 30)
        assert ended is not None
        events = [e async for e in client.watch(match.match_id)]
        substituted = [e.move_played for e in events if e.move_played.substituted]
        assert substituted and all(m.seat == stalled.seat for m in substituted)
        played = [e.move_played for e in events if e.WhichOneof("kind") == "move_played"]
        assert played[0].substituted and played[0].seat == stalled.seat, "the owed move was played"
        assert played[1].seat == player.seat, "once: then the other seat moved"
