"""The operator's limits on idle and greedy clients (docs/operations.md), each reached for real.

A real server on a loopback port with small limits: a Play stream that never speaks, an idle
connection, a connection past its age, a TCP connection that never starts HTTP/2, a peer
that stops answering pings (a proxy that goes dark in the middle), a connection that opens
more streams than it may carry, an address that opens more calls or connections than it may,
and unary calls still running when the server stops.
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

from tests.servers import pylos_config
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import match_pb2
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


async def test_each_silent_stream_of_a_burst_is_closed_at_its_own_deadline(tmp_path: Path) -> None:
    # One timer serves every waiting stream (guard.Guard._sweep): streams opened later are
    # not closed early with the first ones, and each one's slot is given back.
    async with (
        serving(tmp_path, first_message_timeout=1.0) as (server, address),
        grpc.aio.insecure_channel(address) as channel,
    ):
        stub = sgrpc.MatchServiceStub(channel)

        async def ending(call: Any) -> tuple[grpc.StatusCode, str | None]:
            try:
                await call.read()
            except grpc.aio.AioRpcError as error:
                return status_of(error)
            raise AssertionError("a silent Play stream was answered")

        first = [stub.Play() for _ in range(20)]
        await asyncio.sleep(0.8)
        later = [stub.Play() for _ in range(20)]
        timeout = (grpc.StatusCode.DEADLINE_EXCEEDED, "FIRST_MESSAGE_TIMEOUT")
        assert await asyncio.gather(*(ending(call) for call in first)) == [timeout] * 20
        assert not any(call.done() for call in later), "the later streams still have time"
        assert await asyncio.gather(*(ending(call) for call in later)) == [timeout] * 20
        assert await until(lambda: server.guard.calls_from(LOOPBACK) == 0, 2), "every slot is given back"


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
            while True:  # heartbeats of the quiet match may come first (docs/protocol.md)
                message = await asyncio.wait_for(watch.read(), 10)
                assert not message.events and time.monotonic() - started < 5, (
                    "the stream outlived max-connection-age and its grace"
                )
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


async def test_a_connection_that_never_starts_http2_is_closed_after_the_handshake_timeout(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path, handshake_timeout=0.5, max_connection_idle=0) as (_, address):
        host, port = address.split(":")
        silent_reader, silent = await asyncio.open_connection(host, int(port))
        speaking_reader, speaking = await asyncio.open_connection(host, int(port))
        speaking.write(HTTP2_PREFACE + SETTINGS_FRAME)  # the client's half of the HTTP/2 set-up
        try:
            started = time.monotonic()
            assert await _read_to_eof(silent_reader, 10), "a silent connection was held open"
            assert 0.3 < time.monotonic() - started < 5
            # A connection that finished its set-up is not cut by this limit.
            assert not await _read_to_eof(speaking_reader, 1.5)
        finally:
            for writer in (silent, speaking):
                writer.close()


async def test_a_peer_that_stops_answering_pings_is_dropped_and_its_seat_disconnected(
    tmp_path: Path,
) -> None:
    async with (
        serving(tmp_path, keepalive_time=0.3, keepalive_timeout=0.5, max_connection_idle=0) as (
            server,
            address,
        ),
        ZigguratClient(address) as client,
        DarkeningProxy(address) as proxy,
        grpc.aio.insecure_channel(proxy.address, options=OWN_CONNECTION) as far,
    ):
        match = await client.create_match(pylos_config())
        handle = await client.join(match.match_id, "far away")
        await client.join(match.match_id, "near")
        play = sgrpc.MatchServiceStub(far).Play(metadata=handle.metadata)
        await play.write(spb.PlayRequest(match_id=match.match_id))
        assert (await asyncio.wait_for(play.read(), 5)).events

        async def state() -> int:
            seats = (await client.get_match(match.match_id)).seats
            return int(next(s.state for s in seats if s.seat == handle.seat))

        # A quiet stream whose peer answers is pinged, and kept.
        assert server.guard.calls_from(LOOPBACK) == 1
        pings = proxy.pings_from_server
        await asyncio.sleep(1.5)
        assert proxy.pings_from_server > pings, "the server sent no keepalive ping on a quiet stream"
        assert not play.done()
        assert server.guard.calls_from(LOOPBACK) == 1
        assert await state() == match_pb2.SEAT_STATE_CONNECTED
        # The peer goes dark (a cable pulled: nothing more gets through, nothing is closed).
        proxy.go_dark()
        started = time.monotonic()
        assert await until(lambda: server.guard.calls_from(LOOPBACK) == 0, 10), "the dark stream was held"
        assert time.monotonic() - started < 8
        deadline = time.monotonic() + 5
        while await state() != match_pb2.SEAT_STATE_DISCONNECTED and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert await state() == match_pb2.SEAT_STATE_DISCONNECTED
        play.cancel()


async def test_a_connection_carries_so_many_streams_at_once(tmp_path: Path) -> None:
    async with (
        serving(tmp_path, max_streams_per_connection=2) as (server, address),
        grpc.aio.insecure_channel(address, options=OWN_CONNECTION) as channel,
    ):
        stub = sgrpc.MatchServiceStub(channel)
        match = (await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))).match
        request = spb.WatchMatchRequest(match_id=match.match_id)
        streams = [stub.WatchMatch(request) for _ in range(3)]
        reads = [asyncio.ensure_future(stream.read()) for stream in streams]
        done, pending = await asyncio.wait(reads, timeout=5, return_when=asyncio.ALL_COMPLETED)
        # Two are served; the third is held by the client's own HTTP/2 layer, not refused.
        assert len(done) == 2 and len(pending) == 1, (len(done), len(pending))
        assert server.guard.calls_from(LOOPBACK) == 2
        (held,) = pending
        waiting = streams[reads.index(held)]
        assert not waiting.done()
        # One ends: the held call goes through on the same connection.
        next(s for s in streams if s is not waiting).cancel()
        assert (await asyncio.wait_for(held, 5)).events
        for stream in streams:
            stream.cancel()


async def test_grace_lets_unary_calls_finish_and_cuts_the_ones_still_running(tmp_path: Path) -> None:
    options = ServeOptions(host="127.0.0.1", port=0, db_path=str(tmp_path / "z.db"), grace_seconds=1.0)
    server = ZigguratServer(options)
    server.server.add_generic_rpc_handlers((_sleeper_service(),))
    port = await server.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        sleep = channel.unary_unary(SLEEP_METHOD)
        short = asyncio.ensure_future(sleep(b"0.3", timeout=10))
        long = asyncio.ensure_future(sleep(b"30", timeout=60))
        await until(lambda: server.guard.calls_from(LOOPBACK) == 2, 5)
        started = time.monotonic()
        await server.stop()
        took = time.monotonic() - started
        assert await short == b"slept 0.3"  # inside the grace: it finished
        try:
            await long
            raise AssertionError("a call outlived --grace")
        except grpc.aio.AioRpcError as error:
            assert status_of(error) == (grpc.StatusCode.UNAVAILABLE, "SERVER_SHUTTING_DOWN"), error
        assert 0.9 < took < 6, took


SLEEP_METHOD = "/ziggurat.test.Sleeper/Sleep"
HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
SETTINGS_FRAME = bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])  # an empty SETTINGS frame
PING_FRAME = 6


def _sleeper_service() -> grpc.GenericRpcHandler:
    """A unary call that sleeps as many seconds as its request says (raw bytes): a call that is
    still running when the server stops, which none of the real methods can be made to be."""

    async def sleep(request: bytes, context: Any) -> bytes:
        await asyncio.sleep(float(request.decode()))
        return b"slept " + request

    handler = grpc.unary_unary_rpc_method_handler(sleep)
    return grpc.method_handlers_generic_handler("ziggurat.test.Sleeper", {"Sleep": handler})


async def _read_to_eof(reader: asyncio.StreamReader, timeout: float) -> bool:
    """True when the peer closed the connection within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            if not await asyncio.wait_for(reader.read(4096), left):
                return True
        except TimeoutError:
            return False
        except ConnectionError:
            return True
    return False


class DarkeningProxy:
    """A TCP proxy that can go dark: after :meth:`go_dark` it forwards nothing either way and
    closes nothing, like a peer whose network vanished. It counts the HTTP/2 PING frames the
    server sends (the frames of the server's half are parsed; they are forwarded unchanged)."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.address = ""
        self.pings_from_server = 0
        self.dark = False
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> DarkeningProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.address = f"127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()
        for writer in self._writers:
            writer.close()

    def go_dark(self) -> None:
        self.dark = True

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, port = self.upstream.split(":")
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        self._writers += [writer, up_writer]
        for task in (
            asyncio.create_task(self._pipe(reader, up_writer, count=False)),
            asyncio.create_task(self._pipe(up_reader, writer, count=True)),
        ):
            self._tasks.add(task)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, count: bool) -> None:
        pending = b""
        while data := await reader.read(65536):
            if self.dark:
                continue  # swallowed: neither forwarded nor answered
            if count:
                pending += data
                while len(pending) >= 9 and len(pending) >= 9 + int.from_bytes(pending[:3], "big"):
                    length = int.from_bytes(pending[:3], "big")
                    if pending[3] == PING_FRAME and not pending[4] & 1:  # not an ACK
                        self.pings_from_server += 1
                    pending = pending[9 + length :]
            writer.write(data)
            await writer.drain()


async def test_a_play_stream_that_does_not_read_is_no_longer_read_while_its_refusals_wait(
    tmp_path: Path,
) -> None:
    # A client with a 1 KiB window that sends moves and never reads: every move is refused
    # (not its turn, then RATE_LIMITED), the refusals cannot be written, and the server stops
    # reading the stream instead of queueing a refusal for each move (servicer.Play). Before,
    # the queue grew by every move sent (20,399 after 8 s; benchmarks/play_backpressure.py).
    from ziggurat.api.servicer import MAX_PENDING_REFUSALS

    tiny_window = [("grpc.http2.lookahead_bytes", 1024), ("grpc.http2.bdp_probe", 0), *OWN_CONNECTION]
    async with (
        serving(tmp_path) as (server, address),
        ZigguratClient(address) as client,
        grpc.aio.insecure_channel(address, options=tiny_window) as channel,
    ):
        match = await client.create_match(pylos_config())
        handles = [await client.join(match.match_id, name) for name in ("a", "b")]
        public = await client.get_match(match.match_id)
        waiting = next(h for h in handles if h.seat != public.view.to_move)
        play = sgrpc.MatchServiceStub(channel).Play(metadata=waiting.metadata)
        await play.write(spb.PlayRequest(match_id=match.match_id))
        live = server.manager.live[match.match_id]
        assert await until(lambda: any(s.seat == waiting.seat - 1 for s in live._subscribers), 5)
        subscriber = next(s for s in live._subscribers if s.seat == waiting.seat - 1)
        most = sent = 0
        started = time.monotonic()
        while time.monotonic() - started < 3 and sent < 20_000:
            await asyncio.wait_for(play.write(spb.PlayRequest(move="A1")), 5)
            sent += 1
            most = max(most, len(subscriber.outbox))
        await asyncio.sleep(0.5)  # whatever the server would still read is read by now
        most = max(most, len(subscriber.outbox))
        assert sent > 4 * MAX_PENDING_REFUSALS, f"only {sent} moves sent"
        assert len(subscriber.outbox) == MAX_PENDING_REFUSALS, "the reader waits with a full queue"
        assert most <= MAX_PENDING_REFUSALS, f"{most} refusals queued for a stream that does not read"
        # The stream itself is whole: once the client reads, its events and refusals come.
        first = await asyncio.wait_for(play.read(), 5)
        assert first.events
        rejected = 0
        while rejected < 2 * MAX_PENDING_REFUSALS:
            response = await asyncio.wait_for(play.read(), 5)
            rejected += response.HasField("move_rejected")
        play.cancel()


async def test_the_server_holds_so_many_calls_from_all_clients_together(tmp_path: Path) -> None:
    from tests.hosting.test_gate import from_address

    async with (
        serving(tmp_path, max_streams=3, max_streams_per_address=0) as (server, address),
        ZigguratClient(address) as client,
    ):
        match = await client.create_match(pylos_config())
        request = spb.WatchMatchRequest(match_id=match.match_id)
        streams = [client.stub.WatchMatch(request) for _ in range(3)]
        for stream in streams:
            await stream.read()
        async with (
            from_address(server.port, "127.0.0.2") as elsewhere,
            grpc.aio.insecure_channel(elsewhere) as channel,
        ):
            other = sgrpc.MatchServiceStub(channel)
            try:
                await other.GetMatch(spb.GetMatchRequest(match_id=match.match_id))
                raise AssertionError("a call past the server's total was admitted")
            except grpc.aio.AioRpcError as error:
                assert status_of(error) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "SERVER_BUSY")
            streams[0].cancel()
            assert await until(lambda: server.guard.open_calls() == 2, 2)
            answered = await other.GetMatch(spb.GetMatchRequest(match_id=match.match_id))
            assert answered.match.match_id == match.match_id
        for stream in streams[1:]:
            stream.cancel()


async def test_new_calls_are_shed_while_the_server_s_memory_is_at_its_ceiling(tmp_path: Path) -> None:
    # The in-process server's resident memory is this test process's: a ceiling at half of it
    # is reached at once, and every new call is refused until the memory is under it again.
    from ziggurat.hosting.memory import rss_bytes
    from ziggurat.hosting.memory_ceiling import usable_memory_bytes

    percent = rss_bytes() / 2 / usable_memory_bytes() * 100
    async with (
        serving(tmp_path, max_memory_percent=percent) as (server, address),
        grpc.aio.insecure_channel(address) as channel,
    ):
        stub = sgrpc.MatchServiceStub(channel)
        assert await until(lambda: server.memory_ceiling.over, 5)
        try:
            await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
            raise AssertionError("a call was admitted with the memory at its ceiling")
        except grpc.aio.AioRpcError as error:
            assert status_of(error) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "SERVER_BUSY")
        server.memory_ceiling.limit = rss_bytes() * 4  # as if the memory had fallen under it
        assert await until(lambda: not server.memory_ceiling.over, 5)
        created = await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
        assert created.match.match_id
