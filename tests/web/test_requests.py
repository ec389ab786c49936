"""What the web port checks before Connect reads a request: a gRPC content type, the size limit.

A real server with both ports on loopback; the requests are written by hand over the standard
library's HTTP/1.1 client (``tests/web/connect_wire.py``), as curl or a misconfigured proxy
would send them.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.servers import pylos_config
from tests.web.connect_wire import Http, refusal
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import match_service_pb2 as spb

GET_MATCH = "/ziggurat.v1.MatchService/GetMatch"
LIST_BOTS = "/ziggurat.v1.MatchService/ListBuiltinBots"


@pytest.fixture
async def web(tmp_path: Path) -> AsyncIterator[Http]:
    server = ZigguratServer(
        ServeOptions(
            host="127.0.0.1",
            port=0,
            http_port=0,
            db_path=str(tmp_path / "z.db"),
            grace_seconds=0.3,
            max_message_bytes=1000,
        )
    )
    await server.start()
    http = Http(f"http://127.0.0.1:{server.http_port}")
    try:
        yield http
    finally:
        http.close()
        await server.stop()


@pytest.mark.parametrize("kind", ["application/grpc", "application/grpc+proto", "Application/GRPC+json"])
async def test_a_grpc_request_gets_a_grpc_refusal_and_no_traceback(
    web: Http, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    body = b"\0\0\0\0\x02" + spb.GetMatchRequest(match_id="x").SerializeToString()  # a gRPC frame
    answer = await web.post(GET_MATCH, body, kind)
    # A trailers-only gRPC response: what a gRPC client reads as UNIMPLEMENTED.
    assert answer.status == 200, answer
    assert answer.headers["content-type"] == "application/grpc"
    assert answer.headers["grpc-status"] == "12"
    assert "gRPC port" in answer.headers["grpc-message"]
    assert answer.body == b""
    loud = [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]
    assert not loud, [r.getMessage() for r in loud]
    # The connection is still good for a Connect call.
    listed = await web.post(LIST_BOTS, b"{}", "application/json")
    assert listed.status == 200 and json.loads(listed.body) == {}, listed  # this server runs no bots


async def test_a_content_type_the_port_does_not_serve_is_415(
    web: Http, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    answer = await web.post(GET_MATCH, b"matchId=x", "application/x-www-form-urlencoded")
    assert answer.status == 415
    assert answer.headers["accept-post"] == "application/json, application/proto"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]


@pytest.mark.parametrize("codec", ["proto", "json"])
async def test_a_body_over_the_limit_is_refused_before_it_is_read_and_the_connection_goes_on(
    web: Http, codec: str
) -> None:
    """--max-message-bytes 1000: 1000 bytes pass, 1001 do not (the size is the body's)."""
    for size in (1000, 1001, 50_000):
        if codec == "proto":
            body = next(
                data
                for length in range(size - 4, size)
                if len(data := spb.GetMatchRequest(match_id="m" * length).SerializeToString()) == size
            )
        else:
            body = json.dumps({"matchId": "m" * (size - 15)}).encode()
        assert len(body) == size
        answer = refusal(await web.post(GET_MATCH, body, f"application/{codec}"), stream=False)
        assert answer is not None
        if size <= 1000:
            assert (answer.code, answer.reason) == ("NOT_FOUND", "MATCH_NOT_FOUND"), answer
        else:
            assert (answer.code, answer.reason) == ("RESOURCE_EXHAUSTED", None), answer
            assert answer.message == f"SERVER: Received message larger than max ({size} vs. 1000)"
        created = await web.post(
            "/ziggurat.v1.MatchService/CreateMatch",
            spb.CreateMatchRequest(config=pylos_config()).SerializeToString(),
            "application/proto",
        )
        assert created.status == 200, created


@pytest.mark.parametrize("codec", ["proto", "json"])
async def test_a_gzip_body_is_inflated_and_one_that_is_not_gzip_is_malformed(web: Http, codec: str) -> None:
    request = spb.GetMatchRequest(match_id="nope")
    body = request.SerializeToString() if codec == "proto" else b'{"matchId": "nope"}'
    kind, gzipped = f"application/{codec}", {"content-encoding": "gzip"}
    answer = refusal(await web.post(GET_MATCH, gzip.compress(body), kind, gzipped), stream=False)
    assert answer is not None and answer.reason == "MATCH_NOT_FOUND", answer
    answer = refusal(await web.post(GET_MATCH, b"not gzip at all", kind, gzipped), stream=False)
    assert answer is not None and (answer.code, answer.reason) == ("INVALID_ARGUMENT", "MALFORMED_REQUEST"), (
        answer
    )
    assert "Error" not in answer.message and "zlib" not in answer.message, answer
    # 500 bytes that inflate past the 1000-byte limit: refused, not inflated without end.
    bomb = gzip.compress(spb.GetMatchRequest(match_id="m" * 100_000).SerializeToString())
    assert len(bomb) < 1000
    answer = refusal(await web.post(GET_MATCH, bomb, "application/proto", gzipped), stream=False)
    assert answer is not None and (answer.code, answer.reason) == ("RESOURCE_EXHAUSTED", None), answer


async def test_a_chunked_body_is_cut_off_once_it_passes_the_limit(web: Http) -> None:
    """Without a content-length the body is counted as it arrives: refused past the limit."""

    def post_chunked() -> tuple[int, bytes]:
        chunks = iter([b"\x0a\xe0\x07" + b"m" * 500, b"m" * 500, b"m" * 500])  # 1,503 bytes in three chunks
        web.connection.request(
            "POST", GET_MATCH, body=chunks, headers={"content-type": "application/proto"}, encode_chunked=True
        )
        response = web.connection.getresponse()
        return response.status, response.read()

    status, body = await asyncio.to_thread(post_chunked)
    error = json.loads(body)
    assert (status, error["code"]) == (429, "resource_exhausted"), body
    assert error["message"].startswith("SERVER: Received message larger than max (")
    assert error["message"].endswith(" vs. 1000)")
