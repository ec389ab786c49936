"""``ziggurat serve --gate``: a real server subprocess with ziggurat-gate on a loopback port, real clients.

The gate (server/gate, Rust) is built by scripts/bootstrap into .venv/bin when cargo is on
PATH. Without cargo these tests are skipped (the gate is optional); with cargo and no binary
they fail: CI has cargo, and a gate that was never built must not pass for one that works.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import ssl
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest
from connectrpc.client import ConnectClient
from connectrpc.code import Code
from connectrpc.compat import google_protobuf_binary_codec
from connectrpc.errors import ConnectError

from tests import processes
from tests.clients.test_sdk import _self_signed
from tests.hosting.test_shutdown import _bot_messages, _play_events, assert_shutting_down, collect, started
from tests.lan import discovered
from tests.servers import ServerProcess, kabaleo_config, pylos_config, random_chooser
from ziggurat.hosting.gate import default_binary
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import bot_service_pb2 as bpb
from ziggurat.v1 import bot_service_pb2_grpc as bgrpc
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as sgrpc
from ziggurat.web.connect import method_infos
from ziggurat.wire.errors import error_reason
from ziggurat_client import ZigguratClient, ZigguratError
from ziggurat_client.client import MatchHandle

GATE = default_binary()
# Metadata a client may send to pass itself off as another address: never believed.
FORGED = (("x-ziggurat-peer", "ipv4:10.9.8.7:6543"), ("x-ziggurat-gate", "guessed-secret-" * 3))
OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]


@pytest.fixture
def private_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short, empty TMPDIR for the server (where it makes its private socket's directory):
    pytest's own temporary paths are too long for a Unix socket's path."""
    private = Path(tempfile.mkdtemp(prefix="zgt-", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(private))
    yield private
    shutil.rmtree(private, ignore_errors=True)


@pytest.fixture
def gate_built(private_tmp: Path) -> Path:
    """The gate binary; skipped without cargo, FAILED with cargo but no binary (see the module's doc).
    The servers of the tests that use it make their private socket in ``private_tmp``."""
    if shutil.which("cargo") is None:
        pytest.skip("cargo is not on PATH: ziggurat-gate is not built (scripts/bootstrap)")
    if not GATE.is_file():
        pytest.fail(f"{GATE} is missing though cargo is on PATH: run scripts/bootstrap")
    return GATE


def gated(db: Path, *extra: str) -> ServerProcess:
    return ServerProcess(db, ["--gate", "--no-web", *extra])


def gate_pid(server: ServerProcess) -> int:
    """The pid of the server's ziggurat-gate child."""
    assert server.proc is not None
    for task in Path(f"/proc/{server.proc.pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            if Path(f"/proc/{child}/comm").read_text().strip() == "ziggurat-gate":
                return int(child)
    raise AssertionError("the server has no ziggurat-gate child")


def gate_environment(server: ServerProcess) -> dict[bytes, bytes]:
    """The environment the server gave its gate."""
    entries = Path(f"/proc/{gate_pid(server)}/environ").read_bytes().split(b"\0")
    return dict(item.split(b"=", 1) for item in entries if b"=" in item)


def stderr_of(server: ServerProcess) -> str:
    assert server.proc is not None and server.proc.stderr is not None
    return server.proc.stderr.read()


async def terminate(server: ServerProcess) -> int:
    assert server.proc is not None
    server.proc.send_signal(signal.SIGTERM)
    return await asyncio.to_thread(server.proc.wait, 20)


def events_bytes(events: list[match_pb2.Event]) -> list[bytes]:
    return [event.SerializeToString(deterministic=True) for event in events]


# ------------------------------------------------------------------ hidden information


async def _everything_each_audience_sees(
    client: ZigguratClient, match_id: str, handles: list[MatchHandle], *, play: bool
) -> dict[str, Any]:
    """What every seat and a spectator see of a match: their Play events (each seat playing
    random moves with the SDK's runner when ``play``, else the finished match's backlog), their
    WatchMatch events, their GetMatch view, and the record."""
    watched = {
        seat: asyncio.create_task(collect(client.watch(match_id, handle=handle)))
        for seat, handle in [(0, None), *((h.seat, h) for h in handles)]
    }
    played: dict[int, list[match_pb2.Event]] = {h.seat: [] for h in handles}
    await asyncio.gather(
        *(
            client.play(h, random_chooser(h.seat) if play else _never, on_event=played[h.seat].append)
            for h in handles
        )
    )
    seen: dict[str, Any] = {}
    for seat, task in watched.items():
        events, error = await asyncio.wait_for(task, 30)
        assert error is None, error
        seen[f"watch {seat}"] = events_bytes(events)
    for h in handles:
        seen[f"play {h.seat}"] = events_bytes(played[h.seat])
        seen[f"view {h.seat}"] = (await client.get_match(match_id, h)).view.SerializeToString(
            deterministic=True
        )
    seen["view spectator"] = (await client.get_match(match_id)).view.SerializeToString(deterministic=True)
    seen["record"] = (await client.record(match_id)).SerializeToString(deterministic=True)
    return seen


def _never(turn: Any) -> str:
    raise AssertionError("a finished match asks for no move")


@pytest.mark.parametrize("game", ["pylos", "kabaleo"])
async def test_each_seat_sees_through_the_gate_what_it_sees_directly(
    gate_built: Path, tmp_path: Path, game: str
) -> None:
    # A whole match played through the gate (every seat on Play, every audience on WatchMatch),
    # then the same match read straight from the server without the gate: each audience's
    # events, views and the record are byte for byte the same. The gate mixes no seat's
    # secret into another's stream.
    db = tmp_path / "z.db"
    through = gated(db)
    try:
        address = await asyncio.to_thread(through.start)
        async with ZigguratClient(address) as client:
            config = pylos_config() if game == "pylos" else kabaleo_config(3)
            match = await client.create_match(config)
            handles = [await client.join(match.match_id, f"seat{i}") for i in range(config.seats)]
            handles.sort(key=lambda h: h.seat)
            gate_seen = await _everything_each_audience_sees(client, match.match_id, handles, play=True)
            assert (await client.get_match(match.match_id)).status == match_pb2.MATCH_STATUS_FINISHED
        assert await terminate(through) == 0
    finally:
        through.stop()

    direct = ServerProcess(db, ["--no-web"])
    try:
        address = await asyncio.to_thread(direct.start)
        async with ZigguratClient(address) as client:
            direct_seen = await _everything_each_audience_sees(client, match.match_id, handles, play=False)
    finally:
        direct.stop()
    assert gate_seen.keys() == direct_seen.keys()
    for what, value in direct_seen.items():
        assert gate_seen[what] == value, f"{what} differs through the gate"
    # The audiences really are told different things (else the comparison proves little).
    assert (
        len({b"".join(direct_seen[f"watch {seat}"]) for seat in range(len(handles) + 1)}) == len(handles) + 1
    )


# ------------------------------------------------------------------ refusals


async def _refusals(address: str) -> list[tuple[str, str | None, str]]:
    """(code, reason, message) of a series of bad calls, match ids written as MATCH."""
    out: list[tuple[str, str | None, str]] = []
    async with ZigguratClient(address) as client:
        match = await client.create_match(pylos_config())
        handles = [await client.join(match.match_id, f"s{i}") for i in range(2)]
        first = next(h for h in handles if h.seat == 1)
        second = next(h for h in handles if h.seat == 2)
        attempts = [
            client.submit_move(first, "zz9"),  # not a move
            client.submit_move(first, "2a1"),  # a move, not a legal one: level 2 is not there yet
            client.submit_move(second, "a1"),  # not this seat's turn
            client.submit_move(MatchHandle(match.match_id, 1, "not-a-token-of-this-match"), "a1"),
            client.get_match("no-such-match"),
            client.create_match(game_pb2.GameConfig(game=game_pb2.GAME_PYLOS, seats=3)),
        ]
        for attempt in attempts:
            with pytest.raises(ZigguratError) as refused:
                await attempt
            error = refused.value
            out.append((error.code.name, error.reason, error.message.replace(match.match_id, "MATCH")))
        # An illegal move on Play is a MoveRejected, not the end of the stream.
        play = client.stub.Play(metadata=first.metadata)
        await play.write(spb.PlayRequest(match_id=match.match_id))
        await play.write(spb.PlayRequest(match_id=match.match_id, move="zz9"))
        async for response in play:
            if response.HasField("move_rejected"):
                rejected = response.move_rejected
                out.append(
                    ("MoveRejected", rejected.reason, rejected.message.replace(match.match_id, "MATCH"))
                )
                break
        play.cancel()
    return out


async def test_refusals_pass_through_the_gate_unchanged(gate_built: Path, tmp_path: Path) -> None:
    through = gated(tmp_path / "gated.db")
    direct = ServerProcess(tmp_path / "direct.db", ["--no-web"])
    try:
        gate_address = await asyncio.to_thread(through.start)
        direct_address = await asyncio.to_thread(direct.start)
        through_gate = await _refusals(gate_address)
        straight = await _refusals(direct_address)
    finally:
        through.stop()
        direct.stop()
    assert through_gate == straight
    reasons = [reason for _, reason, _ in straight]
    assert reasons == [
        "MALFORMED_MOVE",
        "ILLEGAL_MOVE",
        "NOT_YOUR_TURN",
        "BAD_TOKEN",
        "MATCH_NOT_FOUND",
        "INVALID_CONFIG",
        "MALFORMED_MOVE",
    ], straight


# ------------------------------------------------------------------ addresses and limits


@asynccontextmanager
async def from_address(port: int, source: str) -> AsyncIterator[str]:
    """A loopback relay whose connections reach 127.0.0.1:``port`` from the address ``source``
    (another client machine, as far as the gate can tell); yields the relay's address."""

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0))
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(relay, "127.0.0.1", 0)
    try:
        yield f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


def refusal(error: grpc.aio.AioRpcError) -> tuple[grpc.StatusCode, str | None]:
    return error.code(), error_reason(error)


async def open_watch(stub: sgrpc.MatchServiceStub, match_id: str, metadata: Any = ()) -> Any:
    """A WatchMatch stream, once the server has answered it (its first events)."""
    call = stub.WatchMatch(spb.WatchMatchRequest(match_id=match_id), metadata=metadata)
    await asyncio.wait_for(call.read(), 10)
    return call


async def refused_watch(stub: sgrpc.MatchServiceStub, match_id: str, metadata: Any = ()) -> tuple[Any, Any]:
    call = stub.WatchMatch(spb.WatchMatchRequest(match_id=match_id), metadata=metadata)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await asyncio.wait_for(call.read(), 10)
    return refusal(refused.value)


async def test_per_address_limits_count_the_real_client_not_a_forged_peer(
    gate_built: Path, tmp_path: Path
) -> None:
    # Behind the gate every call reaches Python over one Unix socket: the create rate (Python's)
    # and the per-address caps must still count each client by its own address. A client that
    # sends x-ziggurat-peer is still counted as itself, with a guessed secret and even with the
    # real one: the gate drops both keys from what clients send, and so does the web port
    # (which the gate does not front).
    limits = ["--create-rate", "0.1", "--max-streams-per-address", "3", "--max-connections-per-address", "2"]
    server = ServerProcess(tmp_path / "z.db", ["--gate", "--http-port", "0", *limits])
    web: ConnectClient | None = None
    try:
        address = await asyncio.to_thread(server.start)
        port = int(address.rsplit(":", 1)[1])
        secret = gate_environment(server)[b"ZIGGURAT_GATE_SECRET"].decode()
        with_secret = (("x-ziggurat-peer", "ipv4:10.9.8.7:6543"), ("x-ziggurat-gate", secret))
        web = ConnectClient(server.web_url.rstrip("/"), codec=google_protobuf_binary_codec())
        async with (
            grpc.aio.insecure_channel(address, options=OWN_CONNECTION) as one,
            grpc.aio.insecure_channel(address, options=OWN_CONNECTION) as two,
            grpc.aio.insecure_channel(address, options=OWN_CONNECTION) as three,
            from_address(port, "127.0.0.2") as elsewhere,
            grpc.aio.insecure_channel(elsewhere, options=OWN_CONNECTION) as other,
        ):
            a1, a2, a3, b = (sgrpc.MatchServiceStub(c) for c in (one, two, three, other))
            create = spb.CreateMatchRequest(config=pylos_config())
            # The create rate (one match per 10 s) of 127.0.0.1, forged or not; 127.0.0.2 has its own.
            match_id = (await a1.CreateMatch(create)).match.match_id
            for metadata in ((), FORGED, with_secret):
                with pytest.raises(grpc.aio.AioRpcError) as limited:
                    await a1.CreateMatch(create, metadata=metadata)
                assert refusal(limited.value) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED")
            with pytest.raises(ConnectError) as web_limited:
                await web.execute_unary(
                    request=create, method=method_infos()["CreateMatch"], headers=dict(with_secret)
                )
            assert web_limited.value.code == Code.RESOURCE_EXHAUSTED
            assert "from this address" in web_limited.value.message
            await b.CreateMatch(create)

            # Calls at once (3) and connections with calls (2) from 127.0.0.1.
            held = [
                await open_watch(a1, match_id),
                await open_watch(a1, match_id),
                await open_watch(a2, match_id),
            ]
            too_many = (grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_STREAMS")
            assert await refused_watch(a1, match_id) == too_many
            assert await refused_watch(a1, match_id, FORGED) == too_many
            assert await refused_watch(a1, match_id, with_secret) == too_many
            held.pop(0).cancel()
            await asyncio.sleep(0.3)
            crowded = (grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_CONNECTIONS")
            assert await refused_watch(a3, match_id) == crowded
            assert await refused_watch(a3, match_id, FORGED) == crowded
            # 127.0.0.2 is another client: its calls are its own.
            held.append(await open_watch(b, match_id))
            held.append(await open_watch(b, match_id, FORGED))
            for call in held:
                call.cancel()
    finally:
        if web is not None:
            await web.close()
        server.stop()


def _idle_from(port: int, source: str) -> socket.socket:
    """A TCP connection to the gate from ``source`` that never says anything (no TLS, no HTTP/2
    preface), once the gate has accepted it (its HTTP/2 SETTINGS frame, 9 bytes, has come)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
    sock.settimeout(5)
    first = b""
    while len(first) < 9:
        chunk = sock.recv(9 - len(first))
        assert chunk, f"the gate closed a connection from {source} within its cap"
        first += chunk
    assert first[3] == 0x4, f"the gate's first frame is of type {first[3]}, want SETTINGS"
    return sock


def _closed_at_once(port: int, source: str) -> bytes:
    """What the gate sends on a new connection from ``source`` before it closes it (a reset
    counts as closed); fails unless it is closed within 2 s."""
    with socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0)) as sock:
        started_at = time.monotonic()
        said = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(4096):
                said += chunk
        assert time.monotonic() - started_at < 2, "the connection over the cap was not closed at once"
        return said


async def test_idle_connections_over_the_open_connections_cap_are_closed_at_accept_and_others_get_in(
    gate_built: Path, tmp_path: Path
) -> None:
    # One address (127.0.0.2) holds connections that never make a call, so that the server
    # never hears of them: the gate counts them from accept, refuses one more at once, and
    # still lets a client from another address (127.0.0.1) play.
    server = gated(tmp_path / "z.db", "--max-open-connections-per-address", "3")
    idle: list[socket.socket] = []
    try:
        address = await asyncio.to_thread(server.start)
        port = int(address.rsplit(":", 1)[1])
        argv = Path(f"/proc/{gate_pid(server)}/cmdline").read_bytes().split(b"\0")
        assert argv[argv.index(b"--max-open-connections-per-address") + 1] == b"3"
        assert argv[argv.index(b"--ipv6-prefix-length") + 1] == b"64"
        idle = [await asyncio.to_thread(_idle_from, port, "127.0.0.2") for _ in range(3)]
        for _ in range(4):  # closed before any TLS or HTTP/2: not even the gate's SETTINGS
            assert await asyncio.to_thread(_closed_at_once, port, "127.0.0.2") == b""
        # A real client from that address fails at once (it is not left reconnecting in a loop).
        async with from_address(port, "127.0.0.2") as crowded, ZigguratClient(crowded) as refused_client:
            with pytest.raises(ZigguratError) as refused:
                await asyncio.wait_for(refused_client.list_matches(), 10)
            assert refused.value.code == grpc.StatusCode.UNAVAILABLE

        async with ZigguratClient(address) as client:  # 127.0.0.1
            match = await client.create_match(pylos_config())
            handles = [await client.join(match.match_id, f"b{i}") for i in range(2)]
            await asyncio.gather(*(client.play(h, random_chooser(h.seat)) for h in handles))
            assert (await client.get_match(match.match_id)).status == match_pb2.MATCH_STATUS_FINISHED

        # A closed connection frees its place for the next one from its address.
        idle.pop().close()
        deadline = time.monotonic() + 5
        while True:
            try:
                idle.append(await asyncio.to_thread(_idle_from, port, "127.0.0.2"))
                break
            except (AssertionError, OSError):  # refused: its place is not free yet
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)
        assert await terminate(server) == 0
        log = stderr_of(server)
    finally:
        for sock in idle:
            sock.close()
        server.stop()
    # The refusals (4 raw ones, the client's and its retries) are one rate-limited line.
    lines = [line for line in log.splitlines() if "TOO_MANY_OPEN_CONNECTIONS" in line]
    assert lines[0].endswith(
        " WARNING ziggurat.gate: refused a connection from ipv4:127.0.0.2: TOO_MANY_OPEN_CONNECTIONS: "
        "this address has 3 connections open, the most the server allows (3); close some first"
    ), log
    assert len(lines) <= 2 and all("more refusals" in line for line in lines[1:]), log


def test_the_open_connections_cap_is_refused_without_the_gate_that_enforces_it(tmp_path: Path) -> None:
    for option, value in (("--max-open-connections-per-address", "50"),):
        done = _serve(tmp_path, option, value)
        assert done.returncode == 2
        assert done.stderr.splitlines() == [
            f"error: {option} applies to the gate only, and would do nothing without it: add --gate "
            "(docs/operations.md, 'Limits')"
        ], done.stderr


async def test_a_silent_play_stream_is_closed_by_the_gate_and_never_reaches_the_server(
    gate_built: Path, tmp_path: Path
) -> None:
    server = gated(tmp_path / "z.db", "--first-message-timeout", "0.5")
    try:
        address = await asyncio.to_thread(server.start)
        async with ZigguratClient(address) as client:
            silent = client.stub.Play()
            started_at = time.monotonic()
            with pytest.raises(grpc.aio.AioRpcError) as closed:
                await silent.read()
            assert refusal(closed.value) == (grpc.StatusCode.DEADLINE_EXCEEDED, "FIRST_MESSAGE_TIMEOUT")
            assert closed.value.details() == "a stream must send its first message within 0.5 s"
            assert time.monotonic() - started_at < 5
            # A stream dropped before its first message, and one that speaks in time.
            client.stub.Play().cancel()
            match = await client.create_match(pylos_config())
            handle = await client.join(match.match_id, "prompt")
            play = client.stub.Play(metadata=handle.metadata)
            await play.write(spb.PlayRequest(match_id=match.match_id))
            first = await asyncio.wait_for(play.read(), 5)
            assert first.events[0].seq == 1
            await asyncio.sleep(0.8)  # past the deadline: a stream that spoke stays open
            assert not play.done()
            play.cancel()
        assert await terminate(server) == 0
        log = stderr_of(server)
    finally:
        server.stop()
    assert "ziggurat.gate" in log and "FIRST_MESSAGE_TIMEOUT" in log, log
    # Python's guard logs each stream it closes for want of a first message: none reached it.
    assert "ziggurat.limits" not in log, log


# ------------------------------------------------------------------ lifecycle


async def test_sigterm_through_the_gate_ends_streams_exits_zero_and_restart_serves(
    gate_built: Path, tmp_path: Path, private_tmp: Path
) -> None:
    private = private_tmp
    server = gated(tmp_path / "z.db", "--first-message-timeout", "7.5", "--max-streams-per-address", "321")
    try:
        address = await asyncio.to_thread(server.start)
        # The private socket: in a directory of its own that only this user may enter.
        (socket_dir,) = [d for d in private.iterdir() if d.name.startswith("ziggurat-gate-")]
        assert stat.S_IMODE(socket_dir.stat().st_mode) == 0o700
        assert stat.S_ISSOCK((socket_dir / "upstream.sock").stat().st_mode)
        # The gate got the limits; the secret is in its environment only, never on a command line.
        gate = gate_pid(server)
        argv = Path(f"/proc/{gate}/cmdline").read_bytes().split(b"\0")
        assert argv[argv.index(b"--first-message-timeout") + 1] == b"7.5"
        assert argv[argv.index(b"--max-streams-per-address") + 1] == b"321"
        secret = gate_environment(server)[b"ZIGGURAT_GATE_SECRET"]
        assert len(secret) >= 32 and not any(secret in arg for arg in argv)
        assert server.proc is not None
        assert b"ZIGGURAT_GATE_SECRET" not in Path(f"/proc/{server.proc.pid}/environ").read_bytes()

        async with ZigguratClient(address) as client:
            match_id, handles = await started(client)
            for _ in range(5):
                public = await client.get_match(match_id)
                mover = handles[public.view.to_move - 1]
                view = (await client.get_match(match_id, mover)).view
                await client.submit_move(mover, view.legal_moves[0], ply=view.ply)
            spectator = asyncio.create_task(collect(client.watch(match_id)))
            seat_stream = asyncio.create_task(collect(client.watch(match_id, handle=handles[0])))
            play_call = client.stub.Play(metadata=handles[1].metadata)
            await play_call.write(spb.PlayRequest(match_id=match_id))
            bot = asyncio.create_task(collect(_play_events(play_call)))
            remote = bgrpc.BotServiceStub(client.channel).ConnectBot(
                bpb.ConnectBotRequest(name="waiting-bot", games=[game_pb2.GAME_PYLOS]),
                metadata=(("authorization", "Bearer remote-bot-token-0123456789"),),
            )
            remote_bot = asyncio.create_task(collect(_bot_messages(remote)))
            await asyncio.sleep(0.3)
            streams = (spectator, seat_stream, bot, remote_bot)
            assert not any(task.done() for task in streams)
            before = await client.get_match(match_id, handles[0])

            started_at = time.monotonic()
            assert await terminate(server) == 0
            assert time.monotonic() - started_at < 8, "the open streams do not hold the shutdown"
            for task in streams:
                events, error = await asyncio.wait_for(task, 5)
                assert events, "the stream delivered the backlog before it ended"
                assert_shutting_down(error)
        log = stderr_of(server)
        assert "Traceback" not in log, log
        assert " ERROR " not in log, log
        assert "ending 4 open streams" in log, log
        assert not [d for d in private.iterdir() if d.name.startswith("ziggurat-gate-")], (
            "the private socket's directory is removed at exit"
        )

        # Restarted (with the gate again), the server serves the same match with the same tokens.
        address = await asyncio.to_thread(server.start)
        async with ZigguratClient(address) as client:
            after = await client.get_match(match_id, handles[0])
            assert after.status == match_pb2.MATCH_STATUS_ACTIVE
            assert after.view == before.view
            for _ in range(100):
                public = await client.get_match(match_id)
                if public.status == match_pb2.MATCH_STATUS_FINISHED:
                    break
                mover = handles[public.view.to_move - 1]
                view = (await client.get_match(match_id, mover)).view
                await client.submit_move(mover, view.legal_moves[0], ply=view.ply)
            assert (await client.get_match(match_id)).status == match_pb2.MATCH_STATUS_FINISHED
        assert await terminate(server) == 0
    finally:
        server.stop()


async def test_a_gate_killed_with_kill_9_stops_the_server_with_one_error_line(
    gate_built: Path, tmp_path: Path, private_tmp: Path
) -> None:
    private = private_tmp
    server = gated(tmp_path / "z.db")
    try:
        address = await asyncio.to_thread(server.start)
        async with ZigguratClient(address) as client:
            await client.create_match(pylos_config())
        os.kill(gate_pid(server), signal.SIGKILL)
        assert server.proc is not None
        assert await asyncio.to_thread(server.proc.wait, 15) == 1
        log = stderr_of(server)
    finally:
        server.stop()
    errors = [line for line in log.splitlines() if " ERROR " in line]
    assert len(errors) == 1, log
    assert "ziggurat-gate" in errors[0] and "SIGKILL" in errors[0], errors
    assert "Traceback" not in log, log
    assert not [d for d in private.iterdir() if d.name.startswith("ziggurat-gate-")], (
        "the private socket's directory is removed at exit"
    )
    # Nothing holds the port any more: a new server can take it.
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(("127.0.0.1", int(address.rsplit(":", 1)[1])))


async def test_a_server_killed_with_kill_9_leaves_a_directory_the_next_server_removes(
    gate_built: Path, tmp_path: Path, private_tmp: Path
) -> None:
    """kill -9 gives the server no chance to remove its private socket's directory (its gate
    dies with it); the next ``serve --gate`` of the user removes it, and serves."""
    first = gated(tmp_path / "z.db")
    try:
        await asyncio.to_thread(first.start)
        assert first.proc is not None
        gate = gate_pid(first)
        first.kill9()
        left = [entry.name for entry in private_tmp.iterdir() if entry.name.startswith("ziggurat-gate-")]
        assert len(left) == 1 and left[0].startswith(f"ziggurat-gate-{first.proc.pid}-"), left
        for _ in range(100):  # Linux kills the gate with its parent (pdeathsig)
            if not Path(f"/proc/{gate}").exists() or "Z" in Path(f"/proc/{gate}/stat").read_text().split()[2]:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the gate outlived its server")
    finally:
        first.stop()
    second = gated(tmp_path / "z.db")
    try:
        address = await asyncio.to_thread(second.start)
        assert second.proc is not None
        now = [d for d in private_tmp.iterdir() if d.name.startswith("ziggurat-gate-")]
        assert len(now) == 1 and now[0].name.startswith(f"ziggurat-gate-{second.proc.pid}-"), now
        async with ZigguratClient(address) as client:
            await client.create_match(pylos_config())
        assert await terminate(second) == 0
    finally:
        second.stop()
    assert not [d for d in private_tmp.iterdir() if d.name.startswith("ziggurat-gate-")], (
        "a clean stop removes its own directory"
    )


async def test_tls_is_terminated_by_the_gate(gate_built: Path, tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    server = gated(tmp_path / "z.db", "--tls-cert", str(cert), "--tls-key", str(key))
    try:
        address = await asyncio.to_thread(server.start)
        async with ZigguratClient(address, root_certificates=cert.read_bytes()) as client:
            match = await client.create_match(pylos_config())
            handles = [await client.join(match.match_id, f"b{i}") for i in range(2)]
            await asyncio.gather(*(client.play(h, random_chooser(h.seat)) for h in handles))
            assert (await client.get_match(match.match_id)).status == match_pb2.MATCH_STATUS_FINISHED
        async with ZigguratClient(address) as plaintext:
            with pytest.raises(ZigguratError) as refused:
                await plaintext.list_matches()
            assert refused.value.code == grpc.StatusCode.UNAVAILABLE
    finally:
        server.stop()


async def test_with_tls_the_web_port_beside_the_gate_speaks_https_too(
    gate_built: Path, tmp_path: Path
) -> None:
    """The gate terminates TLS on the gRPC port; the web port (this server's own) encrypts with
    the same files: a LAN CA from ``ziggurat tls init`` is trusted on both, plain HTTP gets nothing."""
    certs = tmp_path / "tls"
    init = [sys.executable, "-m", "ziggurat.cli.main", "tls", "init", "--dir", str(certs)]
    processes.run(init, check=True, capture_output=True, timeout=60)
    tls = ["--tls-cert", str(certs / "server.pem"), "--tls-key", str(certs / "server.key")]
    server = ServerProcess(tmp_path / "z.db", ["--gate", "--http-port", "0", *tls])
    try:
        address = await asyncio.to_thread(server.start)
        assert server.web_url.startswith("https://"), server.web_url
        ca = (certs / "ca.pem").read_bytes()
        async with ZigguratClient(address, root_certificates=ca) as client:
            match = await client.create_match(pylos_config())
        context = ssl.create_default_context(cadata=ca.decode())
        web = await asyncio.to_thread(_https_get_match, server.web_url, match.match_id, context)
        assert web["match"]["matchId"] == match.match_id
        plain = server.web_url.replace("https:", "http:")
        with pytest.raises(OSError):  # a reset or a closed connection: no answer
            await asyncio.to_thread(_https_get_match, plain, match.match_id, None)
    finally:
        server.stop()


def _https_get_match(url: str, match_id: str, context: ssl.SSLContext | None) -> Any:
    request = urllib.request.Request(
        f"{url}ziggurat.v1.MatchService/GetMatch",
        data=json.dumps({"matchId": match_id}).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        return json.loads(response.read())


def _serve(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ziggurat.cli.main", "serve", "--port", "0", "--no-mdns", "--no-web"]
    return processes.run(
        [*command, "--db", str(tmp_path / "z.db"), *arguments], capture_output=True, text=True, timeout=60
    )


def test_gate_without_its_binary_is_refused_in_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "no-gate-here"
    done = _serve(tmp_path, "--gate", "--gate-binary", str(missing))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        f"error: --gate needs {missing}, which is missing: run ./scripts/serve --gate with cargo on PATH "
        "(it builds server/gate first)"
    ], done.stderr


def test_gate_on_an_address_not_of_this_machine_is_refused_in_one_line(tmp_path: Path) -> None:
    done = _serve(tmp_path, "--gate", "--host", "10.255.255.1")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "error: cannot listen on 10.255.255.1:0: Cannot assign requested address"
    ]


def test_a_gate_that_cannot_start_is_refused_in_one_line(
    gate_built: Path, tmp_path: Path, private_tmp: Path
) -> None:
    # Files the server can read but the gate cannot use: the gate's own one-line reason.
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_text("not a certificate\n")
    key.write_text("not a key\n")
    done = _serve(tmp_path, "--gate", "--host", "127.0.0.1", "--tls-cert", str(cert), "--tls-key", str(key))
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: ziggurat-gate could not start: cannot use --tls-cert/--tls-key"), line
    assert "Traceback" not in done.stderr
    assert not [d for d in private_tmp.iterdir() if d.name.startswith("ziggurat-gate-")], (
        "the private socket's directory is removed"
    )


async def test_the_lan_is_told_the_gate_s_address(gate_built: Path, tmp_path: Path) -> None:
    # mDNS announces the public port, which with --gate is the gate's (the server has none).
    server = ZigguratServer(
        ServeOptions(host="127.0.0.1", port=0, db_path=str(tmp_path / "z.db"), mdns=True, gate=True)
    )
    port = await server.start()
    try:
        assert server.gate is not None and port == server.gate.port != 0
        assert server.advertiser is not None
        await server.advertiser.wait_announced()
        found = await discovered(port)
        assert [info.address for info in found] == [f"127.0.0.1:{port}"]
        async with ZigguratClient(found[0].address) as client:
            assert await client.list_matches() == []
    finally:
        await server.stop()


@pytest.mark.usefixtures("gate_built")
def test_the_gate_warns_when_the_open_files_limit_leaves_others_little_room_beside_the_cap(
    tmp_path: Path,
) -> None:
    # With a hard limit of 1,024 open files and the default cap of 1,000 connections per
    # address, one address at its cap would leave 24 descriptors for every other client: the
    # gate says so once at start-up. A cap the limit covers twice over draws no warning.
    import resource

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))

    def started_stderr(*extra: str) -> str:
        command = [sys.executable, "-m", "ziggurat.cli.main", "serve", "--host", "127.0.0.1", "--port", "0"]
        command += ["--db", str(tmp_path / "z.db"), "--no-mdns", "--no-web", "--gate", *extra]
        proc = processes.popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=low_limit,
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line.startswith("ziggurat listening on "), line
            proc.terminate()
            _, err = proc.communicate(timeout=20)
            assert proc.returncode == 0, err
            return err
        finally:
            processes.stop(proc)

    warned = [line for line in started_stderr().splitlines() if "open-files limit" in line]
    assert len(warned) == 1, warned
    assert warned[0].endswith(
        " WARNING ziggurat.gate: the open-files limit is 1024: one address at "
        "--max-open-connections-per-address (1000) would leave 24 for every other client; raise the "
        "hard limit (ulimit -Hn, systemd's LimitNOFILE) to at least 2000 or lower the cap"
    ), warned
    assert "open-files limit" not in started_stderr("--max-open-connections-per-address", "500")
