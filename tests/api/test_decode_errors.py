"""Bytes that do not decode are refused with INVALID_ARGUMENT / MALFORMED_REQUEST, nothing changes.

The requests are raw bytes sent with generic channel calls (no generated stub could
send them), to a real server on a loopback port.
"""

from __future__ import annotations

from typing import Any

import grpc
import pytest

from tests.servers import RunningServer, pylos_config
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.wire.errors import error_reason

# JoinMatchRequest.match_id (field 1, a string) holding bytes that are not UTF-8.
INVALID_UTF8 = b"\x0a\x02\xff\xfe"
# A length-delimited field whose length runs past the end of the message.
TRUNCATED = b"\x0a\x40abc"
# A field with wire type 7, which does not exist.
BAD_WIRE_TYPE = b"\x0f\x01"


def _raw(channel: grpc.aio.Channel, method: str, kind: str = "unary_unary") -> Any:
    factory = getattr(channel, kind)
    return factory(method, request_serializer=None, response_deserializer=None)


def _assert_malformed(error: grpc.aio.AioRpcError) -> None:
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
    assert error_reason(error) == "MALFORMED_REQUEST"
    assert "Traceback" not in (error.details() or "") and "DecodeError" not in (error.details() or "")


# Methods whose request has a string in field 1 (match_id), and all the unary methods.
WITH_MATCH_ID = ["JoinMatch", "GetMatch", "SubmitMove", "Resign", "GetMatchRecord"]
UNARY = ["CreateMatch", "ListMatches", *WITH_MATCH_ID]
CASES = [(method, INVALID_UTF8) for method in WITH_MATCH_ID]
CASES += [(method, data) for method in UNARY for data in (TRUNCATED, BAD_WIRE_TYPE)]


@pytest.mark.parametrize(("method", "data"), CASES)
async def test_unary_calls_refuse_undecodable_bytes(server: RunningServer, method: str, data: bytes) -> None:
    async with grpc.aio.insecure_channel(server.address) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await _raw(channel, f"/ziggurat.v1.MatchService/{method}")(data)
        _assert_malformed(caught.value)


async def test_a_join_with_invalid_utf8_changes_nothing(server: RunningServer) -> None:
    async with grpc.aio.insecure_channel(server.address) as channel:
        create = _raw(channel, "/ziggurat.v1.MatchService/CreateMatch")
        created = spb.CreateMatchResponse.FromString(
            await create(spb.CreateMatchRequest(config=pylos_config()).SerializeToString())
        )
        match_id = created.match.match_id.encode()
        # A JoinMatchRequest with a valid match_id and a player_name that is not UTF-8.
        join = b"\x0a" + bytes([len(match_id)]) + match_id + b"\x12\x02\xc3\x28"
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await _raw(channel, "/ziggurat.v1.MatchService/JoinMatch")(join)
        _assert_malformed(caught.value)
        get = _raw(channel, "/ziggurat.v1.MatchService/GetMatch")
        after = spb.GetMatchResponse.FromString(
            await get(spb.GetMatchRequest(match_id=created.match.match_id).SerializeToString())
        )
        assert after.match == created.match


async def test_watch_refuses_undecodable_bytes(server: RunningServer) -> None:
    async with grpc.aio.insecure_channel(server.address) as channel:
        call = _raw(channel, "/ziggurat.v1.MatchService/WatchMatch", "unary_stream")(INVALID_UTF8)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            async for _ in call:
                pass
        _assert_malformed(caught.value)


@pytest.mark.parametrize("first", [True, False], ids=["first-message", "later-message"])
async def test_play_refuses_an_undecodable_message(server: RunningServer, first: bool) -> None:
    async with grpc.aio.insecure_channel(server.address) as channel:
        create = _raw(channel, "/ziggurat.v1.MatchService/CreateMatch")
        created = spb.CreateMatchResponse.FromString(
            await create(spb.CreateMatchRequest(config=pylos_config()).SerializeToString())
        )
        join = _raw(channel, "/ziggurat.v1.MatchService/JoinMatch")
        request = spb.JoinMatchRequest(match_id=created.match.match_id, player_name="a")
        joined = spb.JoinMatchResponse.FromString(await join(request.SerializeToString()))
        play = _raw(channel, "/ziggurat.v1.MatchService/Play", "stream_stream")
        call = play(metadata=[("authorization", f"Bearer {joined.token}")])
        if not first:
            await call.write(spb.PlayRequest(match_id=created.match.match_id).SerializeToString())
            await call.read()  # the catch-up: the stream is open
        await call.write(b"\x1a\x02\xff\xfe")  # PlayRequest.move, not UTF-8
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            while True:
                if await call.read() == grpc.aio.EOF:
                    break
        _assert_malformed(caught.value)


async def test_bot_service_refuses_undecodable_bytes(server: RunningServer) -> None:
    async with grpc.aio.insecure_channel(server.address) as channel:
        call = _raw(channel, "/ziggurat.v1.BotService/ConnectBot", "unary_stream")(INVALID_UTF8)
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            async for _ in call:
                pass
        _assert_malformed(caught.value)
