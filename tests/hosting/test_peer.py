"""Without ``--gate`` no client is believed about its address (ziggurat.api.peer).

With the gate, tests/hosting/test_gate.py checks the same with the gate's real secret.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import grpc
import pytest

from tests.servers import pylos_config
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as sgrpc
from ziggurat.wire.errors import error_reason

FORGED = (("x-ziggurat-peer", "ipv4:10.9.8.7:6543"), ("x-ziggurat-gate", "guessed-secret-" * 3))


async def test_without_the_gate_a_forged_peer_is_counted_as_itself(tmp_path: Path) -> None:
    options = replace(
        ServeOptions(host="127.0.0.1", port=0, db_path=str(tmp_path / "z.db"), grace_seconds=0.2),
        max_streams_per_address=2,
        rate_per_seat=0.1,
        burst_per_seat=1,
        create_rate=0.1,
    )
    server = ZigguratServer(options)
    port = await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = sgrpc.MatchServiceStub(channel)
            create = spb.CreateMatchRequest(config=pylos_config())
            match_id = (await stub.CreateMatch(create, metadata=FORGED)).match.match_id
            with pytest.raises(grpc.aio.AioRpcError) as limited:  # the same address's create rate
                await stub.CreateMatch(create, metadata=FORGED)
            assert (limited.value.code(), error_reason(limited.value)) == (
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                "RATE_LIMITED",
            )
            request = spb.WatchMatchRequest(match_id=match_id)
            held = [stub.WatchMatch(request, metadata=FORGED) for _ in range(2)]
            for call in held:
                await asyncio.wait_for(call.read(), 5)
            assert server.guard.calls_from("ipv4:127.0.0.1") == 2
            assert server.guard.calls_from("ipv4:10.9.8.7") == 0
            third = stub.WatchMatch(request, metadata=FORGED)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await third.read()
            assert error_reason(refused.value) == "TOO_MANY_STREAMS"
            for call in held:
                call.cancel()
    finally:
        await server.stop()
