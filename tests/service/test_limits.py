"""The operator's limits on idle and greedy clients (docs/operations.md), each reached for real.

A real server on a loopback port with small limits: a Play stream that never speaks, an idle
connection, a connection past its age, and an address
that opens more calls or connections than it may. (Keepalive, which drops a peer that stops
answering pings, is gRPC's own: see docs/operations.md.)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc

from tests.service.conftest import pylos_config
from ziggurat.service.server import ServeOptions, ZigguratServer
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as sgrpc
from ziggurat.wire.errors import error_reason
from ziggurat_client import ZigguratClient

LOOPBACK = "ipv4:127.0.0.1"
# A separate subchannel pool per channel: N channels really are N TCP connections.
OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]


@asynccontextmanager
async def serving(tmp_path: Path, **limits: Any) -> AsyncIterator[tuple[ZigguratServer, str]]:
    options = replace(
        ServeOptions(host="127.0.0.1", port=0, db_path=str(tmp_path / "z.db"), grace_seconds=0.2), **limits
    )
    server = ZigguratServer(options)
    port = await server.start()
    try:
        yield server, f"127.0.0.1:{port}"
    finally:
        await server.stop()


async def until(predicate: Any, timeout: float, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(step)
    return bool(predicate())


def status_of(error: grpc.aio.AioRpcError) -> tuple[grpc.StatusCode, str | None]:
    return error.code(), error_reason(error)


async def test_a_play_stream_must_send_its_first_message_in_time(tmp_path: Path) -> None:
    async with (
        serving(tmp_path, first_message_timeout=0.5) as (server, address),
        grpc.aio.insecure_channel(address) as channel,
    ):
        silent = sgrpc.MatchServiceStub(channel).Play()
        started = time.monotonic()
        try:
            await silent.read()
            raise AssertionError("a silent Play stream was kept open")
        except grpc.aio.AioRpcError as error:
            assert status_of(error) == (grpc.StatusCode.DEADLINE_EXCEEDED, "FIRST_MESSAGE_TIMEOUT")
        assert time.monotonic() - started < 5
        assert await until(lambda: server.guard.calls_from(LOOPBACK) == 0, 2), "its slot is given back"
        # A stream that speaks in time is served as usual.
        async with ZigguratClient(address) as client:
            match = await client.create_match(pylos_config())
            handle = await client.join(match.match_id, "prompt")
            play = client.stub.Play(metadata=handle.metadata)
            await play.write(spb.PlayRequest(match_id=match.match_id))
            first = await asyncio.wait_for(play.read(), 5)
            assert first.events[0].seq == 1
            await asyncio.sleep(0.8)  # past the deadline: the stream stays open
            assert not play.done()
            play.cancel()


async def test_an_idle_connection_is_closed(tmp_path: Path) -> None:
    async with (
        serving(tmp_path, max_connection_idle=0.5) as (_, address),
        grpc.aio.insecure_channel(address, options=OWN_CONNECTION) as channel,
    ):
        await sgrpc.MatchServiceStub(channel).ListMatches(spb.ListMatchesRequest())
        assert channel.get_state() == grpc.ChannelConnectivity.READY
        # No call for longer than max-connection-idle: the server sends GOAWAY and the
        # channel drops to IDLE; the next call simply reconnects.
        assert await until(lambda: channel.get_state() != grpc.ChannelConnectivity.READY, 5)
        await sgrpc.MatchServiceStub(channel).ListMatches(spb.ListMatchesRequest())


async def test_an_old_connection_is_cut_and_its_stream_can_resume(tmp_path: Path) -> None:
    async with (
        serving(tmp_path, max_connection_age=0.5, max_connection_age_grace=0.5) as (server, address),
        ZigguratClient(address) as client,
    ):
        match = await client.create_match(pylos_config())
        watch = client.stub.WatchMatch(spb.WatchMatchRequest(match_id=match.match_id))
        first = await watch.read()
        started = time.monotonic()
        try:
            await asyncio.wait_for(watch.read(), 10)
            raise AssertionError("the stream outlived max-connection-age and its grace")
        except grpc.aio.AioRpcError as error:
            assert error.code() == grpc.StatusCode.UNAVAILABLE, error
        assert time.monotonic() - started < 5
        assert await until(lambda: server.guard.calls_from(LOOPBACK) == 0, 2)
        # The client reconnects on a new connection and resumes after what it saw.
        again = client.stub.WatchMatch(
            spb.WatchMatchRequest(match_id=match.match_id, after_seq=first.events[-1].seq)
        )
        await client.join(match.match_id, "late")
        resumed = await asyncio.wait_for(again.read(), 5)
        assert resumed.events[0].seq == first.events[-1].seq + 1
        again.cancel()


async def test_an_address_may_hold_so_many_calls(tmp_path: Path) -> None:
    async with (
        serving(tmp_path, max_streams_per_address=3) as (server, address),
        ZigguratClient(address) as client,
    ):
        match = await client.create_match(pylos_config())
        request = spb.WatchMatchRequest(match_id=match.match_id)
        streams = [client.stub.WatchMatch(request) for _ in range(3)]
        for stream in streams:
            await stream.read()
        extra = client.stub.WatchMatch(request)
        try:
            await extra.read()
            raise AssertionError("a fourth call from one address was admitted")
        except grpc.aio.AioRpcError as error:
            assert status_of(error) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_STREAMS")
        streams[0].cancel()
        assert await until(lambda: server.guard.calls_from(LOOPBACK) == 2, 2)
        replacement = client.stub.WatchMatch(request)
        assert (await replacement.read()).events
        for stream in [*streams[1:], replacement]:
            stream.cancel()


async def test_an_address_may_hold_so_many_connections(tmp_path: Path) -> None:
    async with serving(tmp_path, max_connections_per_address=2) as (_, address):
        channels = [grpc.aio.insecure_channel(address, options=OWN_CONNECTION) for _ in range(3)]
        try:
            stubs = [sgrpc.MatchServiceStub(channel) for channel in channels]
            match = (await stubs[0].CreateMatch(spb.CreateMatchRequest(config=pylos_config()))).match
            request = spb.WatchMatchRequest(match_id=match.match_id)
            held = [stubs[0].WatchMatch(request), stubs[1].WatchMatch(request)]
            for stream in held:
                await stream.read()
            try:
                await stubs[2].WatchMatch(request).read()
                raise AssertionError("a third connection from one address was served")
            except grpc.aio.AioRpcError as error:
                assert status_of(error) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_CONNECTIONS")
            # More calls on a connection already counted are fine (share a channel).
            assert (await stubs[0].WatchMatch(request).read()).events
        finally:
            for channel in channels:
                await channel.close()
