"""Resume after a dropped stream, and crash recovery after kill -9 on the same database."""

from __future__ import annotations

import asyncio
import random

from tests.servers import RunningServer, ServerProcess, kabaleo_config, pylos_config, random_chooser
from ziggurat.v1 import match_pb2
from ziggurat.verify import verify_record
from ziggurat_client import MatchHandle, ZigguratClient


async def _collect(
    client: ZigguratClient, match_id: str, handle: MatchHandle | None, after: int, limit: int | None = None
) -> list[match_pb2.Event]:
    out: list[match_pb2.Event] = []
    async for event in client.watch(match_id, handle=handle, after_seq=after):
        out.append(event)
        if limit is not None and len(out) >= limit:
            break
    return out


async def _play_moves(
    client: ZigguratClient, handles: list[MatchHandle], count: int, rng: random.Random
) -> None:
    """Play ``count`` random moves through unary calls, whoever is to move."""
    by_seat = {h.seat: h for h in handles}
    for _ in range(count):
        summary = await client.get_match(handles[0].match_id)
        if summary.status != match_pb2.MATCH_STATUS_ACTIVE:
            return
        handle = by_seat[summary.view.to_move]
        mine = await client.get_match(handle.match_id, handle)
        await client.submit_move(handle, rng.choice(list(mine.view.legal_moves)))


async def test_resume_gives_exactly_the_missing_events(server: RunningServer, client: ZigguratClient) -> None:
    match = await client.create_match(kabaleo_config(3))
    handles = [await client.join(match.match_id, f"bot{i}") for i in range(3)]
    watcher = handles[1]
    rng = random.Random(3)
    await _play_moves(client, handles, 5, rng)
    first_part = await _collect(client, match.match_id, watcher, 0, limit=9)  # the stream drops here
    await _play_moves(client, handles, 7, rng)
    resumed_task = asyncio.create_task(_collect(client, match.match_id, watcher, first_part[-1].seq))
    await _play_moves(client, handles, 100, rng)  # to the end, while the resumed stream is live
    resumed = await asyncio.wait_for(resumed_task, 10)
    full = await _collect(client, match.match_id, watcher, 0)
    stitched = first_part + resumed
    assert [e.seq for e in stitched] == list(range(1, len(full) + 1)), "no gap, no duplicate"
    assert [e.SerializeToString() for e in stitched] == [e.SerializeToString() for e in full]
    assert full[-1].WhichOneof("kind") == "match_ended"


async def test_resume_point_beyond_the_log_is_refused(server: RunningServer, client: ZigguratClient) -> None:
    match = await client.create_match(pylos_config())
    try:
        await _collect(client, match.match_id, None, 99)
    except Exception as error:
        assert getattr(error, "reason", None) == "BAD_SEQ"
    else:
        raise AssertionError("after_seq beyond the log was accepted")


async def test_kill_9_and_restart_resumes_every_match(server_process: ServerProcess) -> None:
    address = server_process.start()
    rng = random.Random(11)
    matches: list[tuple[str, list[MatchHandle], int]] = []
    async with ZigguratClient(address) as client:
        for config in (pylos_config(), kabaleo_config(3), kabaleo_config(4)):
            match = await client.create_match(config)
            handles = [await client.join(match.match_id, f"p{i}") for i in range(config.seats)]
            await _play_moves(client, handles, 6, rng)
            summary = await client.get_match(match.match_id)
            matches.append((match.match_id, handles, summary.last_seq))
        waiting = await client.create_match(kabaleo_config(2))
        half = await client.join(waiting.match_id, "early")
    server_process.kill9()

    address = server_process.start()  # same database file
    async with ZigguratClient(address) as client:
        for match_id, handles, last_seq in matches:
            summary = await client.get_match(match_id)
            assert summary.status == match_pb2.MATCH_STATUS_ACTIVE
            assert summary.last_seq == last_seq, "every accepted move survived the crash"
            # Old seat tokens still work: finish the match with them.
            await asyncio.gather(*(client.play(h, random_chooser(h.seat)) for h in handles))
            record = await client.record(match_id)
            assert verify_record(record).ok
            events = await _collect(client, match_id, None, 0)
            assert [e.seq for e in events] == list(range(1, len(events) + 1))
        # The half-joined match still waits for its second seat, and then plays.
        late = await client.join(waiting.match_id, "late")
        ended = await asyncio.gather(
            client.play(half, random_chooser(1)), client.play(late, random_chooser(2))
        )
        assert all(e is not None for e in ended)
