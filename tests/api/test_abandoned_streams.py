"""Streams a client abandons while the server still has messages for them end without UNKNOWN.

A client opens 500 WatchMatch streams on a finished match with a 1-byte flow-control window
(nothing can be delivered), then closes its channel or cancels every call. The server's
writes to the gone streams fail inside gRPC (ExecuteBatchError), often before gRPC itself has
noticed that the client left: each such stream was answered UNKNOWN and recorded as a bug by
the status guard (about 450 of 500). They must just end.
"""

from __future__ import annotations

import asyncio
import os
import random
from pathlib import Path

import grpc
import pytest

from tests.hosting.test_limits import OWN_CONNECTION, serving, until
from tests.servers import pylos_config
from ziggurat.api.status_guard import GUARD_FILE_ENV
from ziggurat.v1 import match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as sgrpc
from ziggurat_client import ZigguratClient

STREAMS = 500
ONE_BYTE_WINDOW = [("grpc.http2.lookahead_bytes", 1), ("grpc.http2.bdp_probe", 0), *OWN_CONNECTION]


async def _finished_match(client: ZigguratClient) -> str:
    match = await client.create_match(pylos_config())
    handles = {h.seat: h for h in [await client.join(match.match_id, name) for name in ("a", "b")]}
    rng = random.Random(7)
    while (public := await client.get_match(match.match_id)).status == match_pb2.MATCH_STATUS_ACTIVE:
        mover = handles[public.view.to_move]
        view = (await client.get_match(match.match_id, mover)).view
        await client.submit_move(mover, rng.choice(list(view.legal_moves)), ply=view.ply)
    return match.match_id


@pytest.mark.slow
@pytest.mark.parametrize("how", ["channel closed", "calls cancelled"])
async def test_abandoned_watch_streams_on_a_one_byte_window_end_without_unknown(
    tmp_path: Path, how: str
) -> None:
    guard_file = Path(os.environ[GUARD_FILE_ENV])
    before = guard_file.stat().st_size if guard_file.exists() else 0
    async with (
        serving(tmp_path, max_streams_per_address=0) as (server, address),
        ZigguratClient(address) as client,
    ):
        match_id = await _finished_match(client)
        channel = grpc.aio.insecure_channel(address, options=ONE_BYTE_WINDOW)
        stub = sgrpc.MatchServiceStub(channel)
        calls = [stub.WatchMatch(spb.WatchMatchRequest(match_id=match_id)) for _ in range(STREAMS)]
        opened = await until(lambda: server.guard.open_calls() >= STREAMS // 2, 30)
        assert opened, f"only {server.guard.open_calls()} of {STREAMS} streams reached the server"
        if how == "calls cancelled":
            for call in calls:
                call.cancel()
        await channel.close(None)
        assert await until(lambda: server.guard.open_calls() == 0, 30), "the abandoned streams ended"
        await asyncio.sleep(0.2)  # whatever the guard would record is recorded by now
    added = guard_file.read_bytes()[before:].decode() if guard_file.exists() else ""
    assert added == "", f"abandoned streams were answered UNKNOWN/INTERNAL:\n{added[:2000]}"
