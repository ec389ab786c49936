"""The status guard sees an UNKNOWN that reaches a client, and the suite's fixture fails on it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import grpc
import pytest

from ziggurat.api.servicer import MatchServicer
from ziggurat.api.status_guard import GUARD_FILE_ENV
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as rpc

ROOT = Path(__file__).resolve().parents[2]


async def test_an_exception_in_a_handler_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A handler that raises gives the client UNKNOWN; the guard writes it to its file."""
    own_file = tmp_path / "guard.jsonl"
    monkeypatch.setenv(GUARD_FILE_ENV, str(own_file))  # keep the suite's own file clean

    async def broken(self: MatchServicer, request: spb.GetMatchRequest, context: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(MatchServicer, "GetMatch", broken)
    server = ZigguratServer(ServeOptions(host="127.0.0.1", port=0, db_path=str(tmp_path / "z.db")))
    port = await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await rpc.MatchServiceStub(channel).GetMatch(spb.GetMatchRequest(match_id="x"))
    finally:
        await server.stop()
    assert caught.value.code() == grpc.StatusCode.UNKNOWN
    lines = [json.loads(line) for line in own_file.read_text().splitlines()]
    assert [(line["method"], line["code"]) for line in lines] == [
        ("/ziggurat.v1.MatchService/GetMatch", "UNKNOWN")
    ]
    assert "RuntimeError: boom" in lines[0]["details"]


INNER_TEST = """
import asyncio

import grpc

from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.api.servicer import MatchServicer
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as rpc


async def broken(self, request, context):
    raise RuntimeError("boom")


async def call_broken_server(tmp_path):
    MatchServicer.GetMatch = broken
    server = ZigguratServer(ServeOptions(host="127.0.0.1", port=0, db_path=str(tmp_path / "z.db")))
    port = await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            try:
                await rpc.MatchServiceStub(channel).GetMatch(spb.GetMatchRequest(match_id="x"))
            except grpc.aio.AioRpcError as error:
                assert error.code() == grpc.StatusCode.UNKNOWN
    finally:
        await server.stop()


def test_clean():
    pass


def test_lets_unknown_out(tmp_path):
    asyncio.run(call_broken_server(tmp_path))
"""


@pytest.mark.slow
def test_the_suite_fails_a_test_that_lets_unknown_out(pytester: pytest.Pytester) -> None:
    """A test during which a server answered UNKNOWN errors out, naming the method; others pass."""
    pytester.makepyfile(test_inner=INNER_TEST)
    env_path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    pytester._monkeypatch.setenv("PYTHONPATH", env_path)
    result = pytester.runpytest_subprocess("-p", "tests.status_guard", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*a server sent UNKNOWN/INTERNAL*", "*MatchService/GetMatch*UNKNOWN*"])
