"""WatchMatch heartbeats (docs/protocol.md, "Heartbeats"): a quiet stream is sent a message with
no events, only the server's clock, every WATCH_HEARTBEAT_S seconds, over gRPC and over Connect,
so a client (a browser, which sees no HTTP/2 ping) can tell a quiet match from a server that
stopped answering. Events still arrive as soon as they happen, and the official Python client
passes a heartbeat over (it only yields events)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from connectrpc.client import ConnectClient
from connectrpc.compat import google_protobuf_binary_codec

from tests.servers import pylos_config
from ziggurat.api.servicer import WATCH_HEARTBEAT_S
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.web.connect import method_infos
from ziggurat_client import ZigguratClient


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[str, str]]:
    server = ZigguratServer(
        ServeOptions(host="127.0.0.1", port=0, http_port=0, db_path=str(tmp_path / "z.db"), grace_seconds=0.2)
    )
    port = await server.start()
    yield f"127.0.0.1:{port}", f"http://127.0.0.1:{server.http_port}"
    await server.stop()


async def test_a_quiet_watch_stream_gets_heartbeats_and_events_still_come_at_once(
    served: tuple[str, str],
) -> None:
    address, _ = served
    async with ZigguratClient(address) as client:
        match = await client.create_match(pylos_config())
        call = client.stub.WatchMatch(spb.WatchMatchRequest(match_id=match.match_id))
        try:
            first = await asyncio.wait_for(call.read(), 5)
            assert [e.WhichOneof("kind") for e in first.events] == ["match_created"]
            opened = time.monotonic()
            beats = []
            for _ in range(2):
                message = await asyncio.wait_for(call.read(), WATCH_HEARTBEAT_S + 3)
                beats.append((time.monotonic() - opened, message))
                assert not message.events, message
                assert abs(message.server_time_ms - time.time() * 1000) < 1500, message
            # The first after the heartbeat's time of quiet, the next as long after it.
            assert WATCH_HEARTBEAT_S - 0.1 <= beats[0][0] < WATCH_HEARTBEAT_S + 1.5, beats
            assert 2 * WATCH_HEARTBEAT_S - 0.2 <= beats[1][0] < 2 * WATCH_HEARTBEAT_S + 2.5, beats
            # An event is not held back until the next heartbeat.
            sent = time.monotonic()
            await client.join(match.match_id, "ann")
            joined = await asyncio.wait_for(call.read(), 5)
            assert [e.WhichOneof("kind") for e in joined.events] == ["seat_changed"]
            assert time.monotonic() - sent < 1.0
        finally:
            call.cancel()


async def test_heartbeats_over_connect_and_the_python_client_passes_them_over(
    served: tuple[str, str],
) -> None:
    address, web_base = served
    async with ZigguratClient(address) as client:
        match = await client.create_match(pylos_config())
        web = ConnectClient(web_base, codec=google_protobuf_binary_codec())
        try:
            stream = web.execute_server_stream(
                request=spb.WatchMatchRequest(match_id=match.match_id), method=method_infos()["WatchMatch"]
            )
            messages: list[spb.WatchMatchResponse] = []
            async with asyncio.timeout(WATCH_HEARTBEAT_S + 5):
                async for message in stream:
                    messages.append(message)
                    if len(messages) == 2:
                        break
            await stream.aclose()  # type: ignore[attr-defined]
            assert messages[0].events and not messages[1].events and messages[1].server_time_ms
        finally:
            await web.close()

        # watch() yields events only: across a heartbeat, the next one is the join.
        seen: list[str] = []

        async def follow() -> None:
            async for event in client.watch(match.match_id):
                seen.append(event.WhichOneof("kind"))
                if len(seen) == 2:
                    return

        following = asyncio.create_task(follow())
        await asyncio.sleep(WATCH_HEARTBEAT_S + 0.8)
        assert seen == ["match_created"]
        await client.join(match.match_id, "ann")
        await asyncio.wait_for(following, 5)
        assert seen == ["match_created", "seat_changed"]
