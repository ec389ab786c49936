"""Memory after bursts (benchmarks/idle_soak.py): a dropped silent stream leaves no reference
cycle behind, and the trimmer gives freed memory back once a burst is over.

The first test runs a real server in this process and inspects what the garbage collector
would have to free after a burst of silent Play streams that their client dropped: before
the fix every such stream left its whole call (context, receiver, task, frames) in a cycle
that only a full collection freed, so a burst of 10,000 held its memory until one ran.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import gc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
import pytest

from tests.hosting.test_limits import LOOPBACK, serving, status_of, until
from tests.servers import pylos_config
from ziggurat.hosting import memory
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as sgrpc
from ziggurat_client import ZigguratClient

SERVER_CODE = ("ziggurat/core/", "ziggurat/api/", "ziggurat/hosting/", "grpc/aio/")


@contextmanager
def saved_garbage() -> Iterator[list[object]]:
    """What a full collection finds unreachable, kept for inspection (then really freed)."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    found: list[object] = []
    try:
        yield found
        gc.collect()
        found.extend(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def _server_frames(objects: list[object]) -> list[str]:
    frames = [o for o in objects if type(o).__name__ == "frame"]
    names = [f"{f.f_code.co_filename}:{f.f_code.co_name}" for f in frames]  # type: ignore[attr-defined]
    return [name for name in names if any(part in name for part in SERVER_CODE)]


def _assert_no_server_call_in(garbage: list[object]) -> None:
    """No server call context and no frame of the server's code among ``garbage``."""
    contexts = [o for o in garbage if type(o).__name__ == "_ServicerContext"]
    assert not contexts, f"{len(contexts)} server call contexts were held in reference cycles"
    frames = _server_frames(garbage)
    assert not frames, f"server frames held in reference cycles: {sorted(set(frames))}"


async def test_dropped_silent_streams_leave_no_reference_cycle(tmp_path: Path) -> None:
    async with serving(tmp_path, first_message_timeout=30) as (server, address):
        with saved_garbage() as garbage:
            async with grpc.aio.insecure_channel(address) as channel:
                calls = [sgrpc.MatchServiceStub(channel).Play() for _ in range(50)]
                assert await until(lambda: server.guard.calls_from(LOOPBACK) == 50, 10)
                for call in calls:
                    call.cancel()
                assert await until(lambda: server.guard.calls_from(LOOPBACK) == 0, 10)
                await asyncio.sleep(0.2)
            del calls
        _assert_no_server_call_in(garbage)


async def test_streams_refused_by_the_guard_leave_no_reference_cycle(tmp_path: Path) -> None:
    # The guard's own refusals (a first message too late, too many streams from one address)
    # end the call by setting its status: gRPC keeps an abort's exception on the call's state,
    # with a traceback through the call's frames, so each such stream stayed in a cycle.
    limits = {"first_message_timeout": 0.3, "max_streams_per_address": 20}
    async with serving(tmp_path, **limits) as (server, address):
        with saved_garbage() as garbage:
            async with grpc.aio.insecure_channel(address) as channel:
                calls = [sgrpc.MatchServiceStub(channel).Play() for _ in range(25)]
                codes = []
                for call in calls:
                    try:
                        await asyncio.wait_for(call.read(), 10)
                    except grpc.aio.AioRpcError as error:
                        codes.append(status_of(error))
                        error.__traceback__ = None  # the client's frames: not what is looked for
                assert await until(lambda: server.guard.calls_from(LOOPBACK) == 0, 10)
                await asyncio.sleep(0.2)
            del calls
        assert codes.count((grpc.StatusCode.DEADLINE_EXCEEDED, "FIRST_MESSAGE_TIMEOUT")) == 20, codes
        assert codes.count((grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_STREAMS")) == 5, codes
        _assert_no_server_call_in(garbage)


async def test_ended_play_streams_leave_no_reference_cycle(tmp_path: Path) -> None:
    # A Play stream that was served (its first message, then moves read with context.read)
    # and then ended, by the match's end, its client's drop or half-close, must free its call
    # at once. A request iterator left suspended after its first message kept gRPC's message
    # receiver, its generator and the call's context in a cycle that only a full collection
    # freed (benchmarks/soak.py: +37 % RSS per live match over 10 minutes).
    async with serving(tmp_path) as (server, address):
        with saved_garbage() as garbage:
            async with ZigguratClient(address) as client:
                for ending in ("resign", "drop", "half-close") * 2:
                    match = await client.create_match(pylos_config())
                    handles = [await client.join(match.match_id, name) for name in ("a", "b")]
                    plays = [client.stub.Play(metadata=h.metadata) for h in handles]
                    for play in plays:
                        await play.write(spb.PlayRequest(match_id=match.match_id))
                        await asyncio.wait_for(play.read(), 5)
                    for play in plays:  # one of them is refused: not its turn
                        await play.write(spb.PlayRequest(match_id=match.match_id, move="1a1"))
                        await asyncio.wait_for(play.read(), 5)
                    if ending == "resign":
                        await client.resign(handles[0])
                        for play in plays:
                            while await asyncio.wait_for(play.read(), 5) is not grpc.aio.EOF:
                                pass
                    else:
                        for play in plays:
                            if ending == "drop":
                                play.cancel()
                            else:
                                await play.done_writing()
                        await asyncio.sleep(0.1)  # the server reads the drop or the half-close
                        for play in plays:
                            play.cancel()
                    assert await until(lambda: server.guard.calls_from(LOOPBACK) == 0, 10)
                await asyncio.sleep(0.2)
            del plays
        _assert_no_server_call_in(garbage)


async def test_calls_refused_by_the_servicer_leave_no_reference_cycle(tmp_path: Path) -> None:
    # gRPC keeps the exception context.abort raises on the call's state, with a traceback
    # through the call's frames: every call the servicer refused (a flood of out-of-turn
    # moves, unknown matches, forged tokens; unary calls and streams) was kept whole until a
    # full collection. Refusals now set the call's status instead.
    async with serving(tmp_path) as (server, address):
        with saved_garbage() as garbage:
            async with ZigguratClient(address) as client:
                match = await client.create_match(pylos_config())
                handles = [await client.join(match.match_id, name) for name in ("a", "b")]
                refused: list[grpc.StatusCode] = []
                for handle in handles * 3:  # one seat is out of turn, the other plays illegally
                    request = spb.SubmitMoveRequest(match_id=match.match_id, move="9z9")
                    try:
                        await client.stub.SubmitMove(request, metadata=handle.metadata)
                    except grpc.aio.AioRpcError as error:
                        refused.append(error.code())
                for _ in range(3):
                    try:
                        await client.stub.GetMatch(spb.GetMatchRequest(match_id="no-such-match"))
                    except grpc.aio.AioRpcError as error:
                        refused.append(error.code())
                for _ in range(3):  # streams refused by the servicer: an unknown match, a bad token
                    watch = client.stub.WatchMatch(spb.WatchMatchRequest(match_id="no-such-match"))
                    try:
                        await watch.read()
                    except grpc.aio.AioRpcError as error:
                        refused.append(error.code())
                        error.__traceback__ = None  # the client's frames: not what is looked for
                    play = client.stub.Play(metadata=[("authorization", "Bearer forged")])
                    await play.write(spb.PlayRequest(match_id=match.match_id))
                    try:
                        await play.read()
                    except grpc.aio.AioRpcError as error:
                        refused.append(error.code())
                        error.__traceback__ = None
                del watch, play
                assert len(refused) == 15, refused
                assert grpc.StatusCode.NOT_FOUND in refused
                assert await until(lambda: server.guard.calls_from(LOOPBACK) == 0, 10)
                await asyncio.sleep(0.2)
        _assert_no_server_call_in(garbage)


@pytest.mark.skipif(not memory.Trimmer(lambda: 0).available, reason="needs glibc's malloc_trim and /proc")
async def test_the_trimmer_trims_once_a_burst_is_over_and_not_while_nothing_happens() -> None:
    open_calls = [0]
    trimmer = memory.Trimmer(
        lambda: open_calls[0], check_every=0.02, settle=0.1, min_interval=0.2, growth=100.0
    )
    trimmer.start()
    try:
        await asyncio.sleep(0.6)
        assert trimmer.trims == 0, "trimmed with no burst and no growth"
        open_calls[0] = 1000  # a burst ...
        await asyncio.sleep(0.3)
        assert trimmer.trims == 0, "trimmed during the burst"
        open_calls[0] = 10  # ... is over
        assert await until(lambda: trimmer.trims == 1, 5)
        await asyncio.sleep(0.6)
        assert trimmer.trims == 1, "trimmed again with nothing new"
    finally:
        await trimmer.stop()


@pytest.mark.skipif(
    not memory.Trimmer(lambda: 0).available or not memory.malloc_free_bytes(),
    reason="needs glibc's malloc_trim, mallinfo2 and /proc",
)
async def test_the_trimmer_trims_after_memory_is_freed_without_any_call() -> None:
    """A burst of connections that make no call (idle TCP connections) moves no call count:
    the trimmer sees it in what malloc holds free once they are gone, and trims once."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.restype, libc.free.argtypes = None, [ctypes.c_void_p]
    trimmer = memory.Trimmer(lambda: 0, check_every=0.02, settle=0.1, min_interval=0.2, growth=100.0)
    trimmer.start()
    blocks: list[int] = []
    try:
        for _ in range(800):  # 80 MB in 100 KB blocks: from the heap, under mmap's threshold
            block = libc.malloc(100_000)
            ctypes.memset(block, 1, 100_000)
            blocks.append(block)
        await asyncio.sleep(0.6)
        assert trimmer.trims == 0, "trimmed while the memory was in use"
        # Every other block is freed, as a burst's connections end among live objects: the
        # freed 40 MB lie inside the heap, where free() alone does not give them back.
        for block in blocks[::2]:
            libc.free(block)
        blocks = blocks[1::2]
        kept = memory.rss_bytes()
        assert await until(lambda: trimmer.trims == 1, 5)
        assert memory.rss_bytes() < kept - 30_000_000, (kept, memory.rss_bytes())
        await asyncio.sleep(0.6)
        assert trimmer.trims == 1, "trimmed again with nothing new"
    finally:
        for block in blocks:
            libc.free(block)
        await trimmer.stop()
