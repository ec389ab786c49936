"""The web (Connect) port keeps the gRPC port's limits and shutdown status (docs/operations.md).

A real server with both ports on loopback; a real Connect client (connectrpc's) and raw TCP
sockets for the clients that misbehave below HTTP: one that never sends a request, one that
sends headers and then no body, one that stays idle after its answer.
"""

from __future__ import annotations

import asyncio
import base64
import json
import resource
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest
from connectrpc.code import Code
from connectrpc.errors import ConnectError
from google.rpc import error_details_pb2

from tests.hosting.test_limits import LOOPBACK, SLEEP_METHOD, _read_to_eof, _sleeper_service, until
from tests.servers import ServerProcess, pylos_config
from tests.web.test_connect import Web, _reason
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as sgrpc
from ziggurat.wire.errors import error_reason
from ziggurat_client import ZigguratClient


async def _start(tmp_path: Path, **options: Any) -> tuple[ZigguratServer, str, str]:
    base = ServeOptions(
        host="127.0.0.1", port=0, http_port=0, db_path=str(tmp_path / "z.db"), grace_seconds=0.3
    )
    server = ZigguratServer(replace(base, **options))
    server.server.add_generic_rpc_handlers((_sleeper_service(),))
    port = await server.start()
    return server, f"127.0.0.1:{port}", f"http://127.0.0.1:{server.http_port}"


@asynccontextmanager
async def both_ports(tmp_path: Path, **limits: Any) -> AsyncIterator[tuple[ZigguratServer, str, str]]:
    server, address, url = await _start(tmp_path, **limits)
    try:
        yield server, address, url
    finally:
        await server.stop()


async def _refusal(work: Any) -> tuple[Code, str]:
    try:
        await work
    except ConnectError as error:
        return error.code, _reason(error)
    raise AssertionError("the call was not refused")


async def _first(stream: AsyncIterator[Any]) -> Any:
    return await asyncio.wait_for(anext(aiter(stream)), 5)


async def test_web_calls_count_against_the_address_caps_with_the_grpc_ones(tmp_path: Path) -> None:
    async with (
        both_ports(tmp_path, max_streams_per_address=3) as (server, address, url),
        grpc.aio.insecure_channel(address) as channel,
    ):
        web = Web(url)
        try:
            stub = sgrpc.MatchServiceStub(channel)
            match = (await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))).match
            request = spb.WatchMatchRequest(match_id=match.match_id)
            over_grpc = stub.WatchMatch(request)
            await over_grpc.read()
            over_web = [web.stream("WatchMatch", request) for _ in range(2)]
            for stream in over_web:
                assert (await _first(stream)).events
            assert server.guard.calls_from(LOOPBACK) == 3
            # One address, both ports: a fourth call is refused on either.
            code, reason = await _refusal(web.call("GetMatch", spb.GetMatchRequest(match_id=match.match_id)))
            assert (code, reason) == (Code.RESOURCE_EXHAUSTED, "TOO_MANY_STREAMS")
            try:
                await stub.GetMatch(spb.GetMatchRequest(match_id=match.match_id))
                raise AssertionError("a fourth call over gRPC was admitted")
            except grpc.aio.AioRpcError as error:
                assert (error.code(), error_reason(error)) == (
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                    "TOO_MANY_STREAMS",
                )
            # A web stream that ends gives its slot back.
            await over_web[0].aclose()  # type: ignore[attr-defined]
            assert await until(lambda: server.guard.calls_from(LOOPBACK) == 2, 5)
            got = await web.call("GetMatch", spb.GetMatchRequest(match_id=match.match_id))
            assert got.match.match_id == match.match_id
            over_grpc.cancel()
            await over_web[1].aclose()  # type: ignore[attr-defined]
        finally:
            await web.close()


async def test_web_connections_count_against_the_address_cap(tmp_path: Path) -> None:
    async with (
        both_ports(tmp_path, max_connections_per_address=1) as (_, address, url),
        grpc.aio.insecure_channel(address) as channel,
    ):
        web = Web(url)
        try:
            stub = sgrpc.MatchServiceStub(channel)
            match = (await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))).match
            held = stub.WatchMatch(spb.WatchMatchRequest(match_id=match.match_id))
            await held.read()  # the address's one connection with calls
            code, reason = await _refusal(web.call("GetMatch", spb.GetMatchRequest(match_id=match.match_id)))
            assert (code, reason) == (Code.RESOURCE_EXHAUSTED, "TOO_MANY_CONNECTIONS")
            held.cancel()
            await asyncio.sleep(0.2)
            got = await web.call("GetMatch", spb.GetMatchRequest(match_id=match.match_id))
            assert got.match.match_id == match.match_id
        finally:
            await web.close()


async def test_a_web_request_must_arrive_in_full_within_the_first_message_timeout(tmp_path: Path) -> None:
    async with both_ports(tmp_path, first_message_timeout=0.5) as (server, _, url):
        host, port = url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            writer.write(
                b"POST /ziggurat.v1.MatchService/GetMatch HTTP/1.1\r\nhost: x\r\n"
                b"content-type: application/json\r\ncontent-length: 40\r\n\r\n{"
            )  # a promised body that never comes
            started = time.monotonic()
            head, body = await _http_response(reader, 10)
            assert time.monotonic() - started < 5
            assert head.split()[1] == b"504", head
            error = json.loads(body)
            assert error["code"] == "deadline_exceeded", error
            (detail,) = error["details"]
            info = error_details_pb2.ErrorInfo.FromString(base64.b64decode(detail["value"] + "=="))
            assert (info.domain, info.reason) == ("ziggurat", "FIRST_MESSAGE_TIMEOUT")
        finally:
            writer.close()
        # A request sent in time is answered.
        web = Web(url)
        try:
            assert (await web.call("ListMatches", spb.ListMatchesRequest())) is not None
        finally:
            await web.close()
        assert server.guard.calls_from(LOOPBACK) == 0


async def test_a_web_connection_must_send_a_request_in_time_and_is_closed_when_idle(tmp_path: Path) -> None:
    async with both_ports(tmp_path, handshake_timeout=0.5, max_connection_idle=1) as (_, _, url):
        host, port = url.removeprefix("http://").split(":")
        silent_reader, silent = await asyncio.open_connection(host, int(port))
        partial_reader, partial = await asyncio.open_connection(host, int(port))
        partial.write(b"GET / HTTP/1.1\r\nhost: x\r\n")  # headers begun, never finished
        answered_reader, answered = await asyncio.open_connection(host, int(port))
        answered.write(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        try:
            started = time.monotonic()
            head, _ = await _http_response(answered_reader, 5)
            assert head.split()[1] == b"200", head
            answered_at = time.monotonic()
            assert await _read_to_eof(silent_reader, 10), "a silent web connection was held"
            assert await _read_to_eof(partial_reader, 10), "a web connection with half its headers was held"
            assert time.monotonic() - started < 5
            # Kept for the next request a while, then closed as idle.
            assert await _read_to_eof(answered_reader, 10), "an idle web connection was held"
            assert 0.8 < time.monotonic() - answered_at < 5
        finally:
            for writer in (silent, partial, answered):
                writer.close()


async def test_shutdown_ends_web_streams_and_refuses_web_calls_with_server_shutting_down(
    tmp_path: Path,
) -> None:
    server, address, url = await _start(tmp_path, grace_seconds=3.0)
    async with grpc.aio.insecure_channel(address) as channel:
        web = Web(url)
        try:
            stub = sgrpc.MatchServiceStub(channel)
            match = (await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))).match
            stream = web.stream("WatchMatch", spb.WatchMatchRequest(match_id=match.match_id))
            assert (await _first(stream)).events
            # A unary call still running holds the drain open (up to the grace period) ...
            slow = asyncio.ensure_future(channel.unary_unary(SLEEP_METHOD)(b"1.0", timeout=10))
            assert await until(lambda: server.guard.calls_from(LOOPBACK) == 2, 5)
            stopping = asyncio.ensure_future(server.stop())
            # ... the web stream has ended with the shutdown status at once ...
            try:
                while not (await asyncio.wait_for(anext(aiter(stream)), 5)).events:
                    pass  # a heartbeat of the quiet match, sent before the shutdown
                raise AssertionError("the web stream went on after shutdown")
            except ConnectError as error:
                assert (error.code, _reason(error)) == (Code.UNAVAILABLE, "SERVER_SHUTTING_DOWN")
            # ... and a web call made during the drain is refused the same way.
            code, reason = await _refusal(web.call("GetMatch", spb.GetMatchRequest(match_id=match.match_id)))
            assert (code, reason) == (Code.UNAVAILABLE, "SERVER_SHUTTING_DOWN")
            assert await slow == b"slept 1.0"
            await stopping
        finally:
            await web.close()


async def _http_response(reader: asyncio.StreamReader, timeout: float) -> tuple[bytes, bytes]:
    """The status line + headers, and the body (Content-Length or chunked) of one HTTP/1.1 response."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
    headers = {}
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    if headers.get(b"transfer-encoding") == b"chunked":
        body = b""
        while size := int((await asyncio.wait_for(reader.readuntil(b"\r\n"), timeout)).strip(), 16):
            body += await asyncio.wait_for(reader.readexactly(size + 2), timeout)
            body = body[:-2]
        await asyncio.wait_for(reader.readuntil(b"\r\n"), timeout)
        return head, body
    length = int(headers.get(b"content-length", b"0"))
    return head, await asyncio.wait_for(reader.readexactly(length), timeout) if length else b""


async def _connect_from(url: str, source: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    host, port = url.removeprefix("http://").rstrip("/").split(":")
    return await asyncio.open_connection(host, int(port), local_addr=(source, 0))


async def test_web_connections_are_capped_from_accept_per_address_and_in_total(tmp_path: Path) -> None:
    limits = {"max_web_connections_per_address": 2, "max_web_connections": 3}
    async with both_ports(tmp_path, **limits) as (_, _, url):
        opened = []
        try:
            ones = [await _connect_from(url, "127.0.0.1") for _ in range(3)]
            opened += ones
            assert await _read_to_eof(ones[2][0], 5), "a third connection from one address was held"
            assert not await _read_to_eof(ones[0][0], 0.3), "the address's first connections are held"
            twos = [await _connect_from(url, "127.0.0.2") for _ in range(2)]
            opened += twos
            assert await _read_to_eof(twos[1][0], 5), "a connection past the total was held"
            assert not await _read_to_eof(twos[0][0], 0.3), "another address has its own connections"
            ones[0][1].close()  # one closed: room for one more, from anywhere
            await asyncio.sleep(0.3)
            reader, writer = await _connect_from(url, "127.0.0.2")
            opened.append((reader, writer))
            writer.write(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            head, _ = await _http_response(reader, 5)
            assert head.split()[1] == b"200", head
        finally:
            for _, writer in opened:
                writer.close()


async def test_two_thousand_idle_web_connections_from_one_address_leave_other_clients_answered(
    tmp_path: Path,
) -> None:
    # `ziggurat serve` started under a soft open-files limit of 1,024 (as a shell with the usual
    # `ulimit -n` starts it): it raises the limit to the hard one, and one address's 2,000 idle web
    # connections (127.0.0.2) get --max-web-connections-per-address of them, so gRPC and web calls
    # from another address (127.0.0.1) are answered.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = 2_300  # the test's own 2,000 sockets and the rest of this process
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"the hard open-files limit {hard} is under the {needed} this test needs")
    server = ServerProcess(tmp_path / "z.db", ["--http-port", "0"])
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))
    try:
        await asyncio.to_thread(server.start)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, needed), hard))
    assert server.proc is not None
    idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    web = Web(server.web_url.rstrip("/"))
    try:
        limits = Path(f"/proc/{server.proc.pid}/limits").read_text()
        open_files = next(line for line in limits.splitlines() if line.startswith("Max open files"))
        assert open_files.split()[3] == open_files.split()[4], f"the soft limit was not raised: {open_files}"
        for _ in range(2_000):
            idle.append(await _connect_from(server.web_url, "127.0.0.2"))
        await asyncio.sleep(1.0)
        held = sum(1 for reader, _ in idle if not reader.at_eof())
        assert 0 < held <= ServeOptions().max_web_connections_per_address, f"{held} held from one address"
        async with ZigguratClient(server.address) as client:
            created = await asyncio.wait_for(client.create_match(pylos_config()), 10)
        got = await asyncio.wait_for(web.call("GetMatch", spb.GetMatchRequest(match_id=created.match_id)), 10)
        assert got.match.match_id == created.match_id
    finally:
        await web.close()
        for _, writer in idle:
            writer.close()
        server.stop()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


async def test_the_web_port_counts_an_ipv6_prefix_as_one_address_as_the_grpc_port_does() -> None:
    # Loopback has one IPv6 address, so the clients' addresses are given as uvicorn gives them
    # (an unbracketed host and a port) to the two places the web port counts them.
    from ziggurat.api.guard import Guard, GuardLimits
    from ziggurat.web.limits import ConnectionLimits, GuardInterceptor, OpenConnections

    guard = Guard(GuardLimits(max_streams_per_address=2))
    interceptor = GuardInterceptor(guard)

    class Ctx:
        def __init__(self, client_address: str) -> None:
            self.client_address = client_address

    calls = [
        interceptor._admit(Ctx(f"2001:db8:1:2::{n}:{1000 + n}"), streaming=False)  # type: ignore[arg-type]
        for n in (1, 2)
    ]
    assert guard.calls_from("ipv6:[2001:db8:1:2::]/64") == 2
    with pytest.raises(ConnectError) as refused:
        interceptor._admit(Ctx("2001:db8:1:2:ffff::3:1003"), streaming=False)  # type: ignore[arg-type]
    assert (refused.value.code, _reason(refused.value)) == (Code.RESOURCE_EXHAUSTED, "TOO_MANY_STREAMS")
    other = interceptor._admit(Ctx("2001:db8:1:3::1:1001"), streaming=False)  # type: ignore[arg-type]
    for call in (*calls, other):
        guard.release(call)
    connections = OpenConnections(ConnectionLimits(max_per_address=1, max_total=10))
    assert connections.admit(("2001:db8:1:2::a", 5000, 0, 0)) == "ipv6:[2001:db8:1:2::]/64"
    assert connections.admit(("2001:db8:1:2:ffff::b", 5001, 0, 0)) is None, "the same /64"
    assert connections.admit(("::ffff:10.0.0.1", 5002, 0, 0)) == "ipv4:10.0.0.1"
