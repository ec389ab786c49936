"""Who may speak for a client's address behind ``ziggurat serve --gate`` (ziggurat.api.peer).

The gate's ``x-ziggurat-peer`` is believed only beside ``x-ziggurat-gate`` equal to this server's
secret; tests/hosting/test_gate.py checks that a client of the gate cannot forge either. These
check the other doors and the secret itself: a client on the server's own Unix socket (which
the gate does not front), near-miss secrets, the web port's headers, and that the secret shows
up in no log line and no answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.hosting import test_gate
from tests.hosting.test_gate import FORGED, gate_environment, gated, refusal, stderr_of, terminate
from tests.servers import pylos_config
from ziggurat.api import peer as peer_module
from ziggurat.api.peer import Peers, is_gate_key
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as sgrpc

CLAIMED = "ipv4:10.9.8.7:6543"
# test_gate's fixtures: the gate binary (skipped without cargo) and a short TMPDIR for the socket.
gate_built = test_gate.gate_built
private_tmp = test_gate.private_tmp


class _Call:
    """A call's context as Peers reads it: gRPC's peer and the metadata sent."""

    def __init__(self, metadata: tuple[tuple[str, Any], ...]) -> None:
        self._metadata = metadata

    def peer(self) -> str:
        return "unix:/tmp/ziggurat-gate-x/upstream.sock"

    def invocation_metadata(self) -> tuple[tuple[str, Any], ...]:
        return self._metadata


def test_only_the_exact_secret_makes_the_peer_believed(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "s3cr3t-" * 7
    peers = Peers(secret)
    compared: list[tuple[bytes, bytes]] = []
    real_compare = peer_module.hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        compared.append((a, b))
        return real_compare(a, b)

    monkeypatch.setattr(peer_module.hmac, "compare_digest", spy)
    believed = _Call((("x-ziggurat-peer", CLAIMED), ("x-ziggurat-gate", secret)))
    assert peers.of(believed) == CLAIMED
    # Compared in constant time, as bytes, against the server's own secret.
    assert compared == [(secret.encode(), secret.encode())]
    near_misses = [
        secret[:-1] + ("x" if secret[-1] != "x" else "y"),  # same length, last character off
        secret[:-1],  # a prefix
        secret + "x",  # longer
        secret.upper(),
        " " + secret,
        "",
    ]
    for wrong in near_misses:
        call = _Call((("x-ziggurat-peer", CLAIMED), ("x-ziggurat-gate", wrong)))
        assert peers.of(call) == call.peer(), wrong
    # The right secret under another key (a binary variant) is no secret at all.
    assert peers.of(_Call((("x-ziggurat-peer", CLAIMED), ("x-ziggurat-gate-bin", secret.encode())))) == (
        "unix:/tmp/ziggurat-gate-x/upstream.sock"
    )
    # Without --gate there is no secret: even one that matches nothing is never believed.
    assert Peers(None).of(believed) == believed.peer()


def test_the_web_port_drops_every_key_only_the_gate_may_send() -> None:
    for key in (
        "x-ziggurat-peer",
        "x-ziggurat-peer-bin",
        "x-ziggurat-gate",
        "x-ziggurat-gate-bin",
        "x-ziggurat-gate-x",
    ):
        assert is_gate_key(key), key
    for key in ("authorization", "x-ziggurat-other", "x-ziggurat"):
        assert not is_gate_key(key), key


@asynccontextmanager
async def _beside_the_gate(
    gate_built: Path, tmp_path: Path, private_tmp: Path, **limits: Any
) -> AsyncIterator[tuple[ZigguratServer, str, sgrpc.MatchServiceStub]]:
    """A server with --gate that also listens on the operator's own Unix socket (which the gate
    does not front): the server, its gate secret, and a stub on that socket."""
    socket = private_tmp / "own.sock"
    options = replace(
        ServeOptions(host="127.0.0.1", port=0, db_path=str(tmp_path / "z.db"), grace_seconds=0.2),
        gate=True,
        unix_socket=str(socket),
        gate_binary=str(gate_built),
        **limits,
    )
    server = ZigguratServer(options)
    await server.start()
    try:
        secret = server._gate_secret
        assert secret is not None
        async with grpc.aio.insecure_channel(f"unix:{socket}") as channel:
            yield server, secret, sgrpc.MatchServiceStub(channel)
    finally:
        await server.stop()
        server.remove_gate_dir()


async def test_a_client_on_the_servers_own_unix_socket_cannot_pass_for_the_gate(
    gate_built: Path, tmp_path: Path, private_tmp: Path
) -> None:
    # The server also listens on the operator's Unix socket (ServeOptions.unix_socket), which the
    # gate does not front: a local client there may send x-ziggurat-peer and a guessed secret, and
    # must still be counted as itself. Only the secret itself is believed (the control below).
    async with _beside_the_gate(gate_built, tmp_path, private_tmp) as (server, secret, stub):
        guesses = [
            FORGED,
            (
                ("x-ziggurat-peer", CLAIMED),
                ("x-ziggurat-gate", secret[:-1] + ("A" if secret[-1] != "A" else "B")),
            ),
            (("x-ziggurat-peer", CLAIMED), ("x-ziggurat-gate", secret[:-1])),
            (("x-ziggurat-peer", CLAIMED), ("x-ziggurat-gate-bin", secret.encode())),
        ]
        match_id = (await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))).match.match_id
        request = spb.WatchMatchRequest(match_id=match_id)
        for metadata in guesses:
            call = stub.WatchMatch(request, metadata=metadata)
            await asyncio.wait_for(call.read(), 10)
            assert server.guard.calls_from("ipv4:10.9.8.7") == 0, metadata
            call.cancel()
        # The control: with the secret, this client is the gate, and its word is taken.
        call = stub.WatchMatch(request, metadata=(("x-ziggurat-peer", CLAIMED), ("x-ziggurat-gate", secret)))
        await asyncio.wait_for(call.read(), 10)
        assert server.guard.calls_from("ipv4:10.9.8.7") == 1
        call.cancel()


async def test_the_secret_is_in_no_log_line_and_no_answer(gate_built: Path, tmp_path: Path) -> None:
    # Everything the server and its gate write, at debug level, through refusals of every kind
    # (the gate's, Python's), forged keys, a silent stream and SIGTERM, and every status, detail
    # and metadata entry the clients get back: none of it may carry the secret.
    server = gated(
        tmp_path / "z.db",
        "--log-level",
        "debug",
        "--max-streams-per-address",
        "2",
        "--first-message-timeout",
        "0.3",
    )
    answers: list[str] = []

    def keep(error: grpc.aio.AioRpcError) -> None:
        answers.append(repr(error.details()))
        answers.extend(repr(entry) for entry in (error.trailing_metadata() or ()))
        answers.extend(repr(entry) for entry in (error.initial_metadata() or ()))

    try:
        address = await asyncio.to_thread(server.start)
        secret = gate_environment(server)[b"ZIGGURAT_GATE_SECRET"].decode()
        with_secret = (("x-ziggurat-peer", CLAIMED), ("x-ziggurat-gate", secret))
        async with grpc.aio.insecure_channel(address) as channel:
            stub = sgrpc.MatchServiceStub(channel)
            created = await stub.CreateMatch(
                spb.CreateMatchRequest(config=pylos_config()), metadata=with_secret
            )
            match_id = created.match.match_id
            for metadata in ((), FORGED, with_secret):  # Python's refusal, with each
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await stub.GetMatch(spb.GetMatchRequest(match_id="no-such-match"), metadata=metadata)
                keep(refused.value)
            silent = stub.Play(metadata=with_secret)  # closed by the gate
            with pytest.raises(grpc.aio.AioRpcError) as closed:
                await silent.read()
            assert refusal(closed.value)[1] == "FIRST_MESSAGE_TIMEOUT"
            keep(closed.value)
            held = [stub.WatchMatch(spb.WatchMatchRequest(match_id=match_id)) for _ in range(2)]
            for call in held:
                await asyncio.wait_for(call.read(), 10)
            over = stub.WatchMatch(spb.WatchMatchRequest(match_id=match_id), metadata=with_secret)
            with pytest.raises(grpc.aio.AioRpcError) as capped:  # the gate's cap
                await over.read()
            assert refusal(capped.value)[1] == "TOO_MANY_STREAMS"
            keep(capped.value)
            assert await terminate(server) == 0
            for call in held:  # ended by the shutdown (after the quiet match's heartbeats, if any)
                with pytest.raises(grpc.aio.AioRpcError) as ended:
                    while not (await asyncio.wait_for(call.read(), 10)).events:
                        pass
                keep(ended.value)
        assert server.proc is not None and server.proc.stdout is not None
        written = server.proc.stdout.read() + stderr_of(server)
    finally:
        server.stop()
    assert "DEBUG" in written and "ziggurat.gate" in written, written  # the logs were there to see
    assert secret not in written
    assert not [answer for answer in answers if secret in answer], answers
    assert len(answers) >= 7


async def test_the_server_counts_an_ipv6_prefix_as_one_address_for_its_caps_and_create_rate(
    gate_built: Path, tmp_path: Path, private_tmp: Path
) -> None:
    # What the gate says of a call's client, the server counts by --ipv6-prefix-length too: one
    # client with a /64 must not pass the per-address create rate (which only the server
    # keeps) or the server's own caps by changing its address within it. Loopback has one IPv6
    # address, so the gate's word is given here as the gate gives it, with its secret.
    limits = {"max_streams_per_address": 2, "create_rate": 0.1}
    async with _beside_the_gate(gate_built, tmp_path, private_tmp, **limits) as (server, secret, stub):

        def gate_says(peer: str) -> tuple[tuple[str, str], ...]:
            return (("x-ziggurat-peer", peer), ("x-ziggurat-gate", secret))

        create = spb.CreateMatchRequest(config=pylos_config())
        match_id = (
            await stub.CreateMatch(create, metadata=gate_says("ipv6:[2001:db8:1:2::a]:1000"))
        ).match.match_id
        with pytest.raises(grpc.aio.AioRpcError) as limited:  # another address, the same /64
            await stub.CreateMatch(create, metadata=gate_says("ipv6:[2001:db8:1:2:ffff::b]:2000"))
        assert refusal(limited.value) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "RATE_LIMITED")
        # The next /64 is another client, with its own budget.
        await stub.CreateMatch(create, metadata=gate_says("ipv6:[2001:db8:1:3::a]:1000"))

        request = spb.WatchMatchRequest(match_id=match_id)
        held = [
            stub.WatchMatch(request, metadata=gate_says(f"ipv6:[2001:db8:1:2::{n}]:{3000 + n}"))
            for n in (1, 2)
        ]
        for call in held:
            await asyncio.wait_for(call.read(), 10)
        assert server.guard.calls_from("ipv6:[2001:db8:1:2::]/64") == 2
        third = stub.WatchMatch(request, metadata=gate_says("ipv6:[2001:db8:1:2::3]:3003"))
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await third.read()
        assert refusal(refused.value) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_STREAMS")
        other = stub.WatchMatch(request, metadata=gate_says("ipv6:[2001:db8:1:3::1]:3001"))
        await asyncio.wait_for(other.read(), 10)
        for call in (*held, other):
            call.cancel()


def test_each_ipv6_address_counts_alone_at_prefix_length_128() -> None:
    secret = "s3cr3t-" * 7
    for length, expected in (
        (128, "ipv6:[2001:db8::7]"),
        (64, "ipv6:[2001:db8::]/64"),
        (32, "ipv6:[2001:db8::]/32"),
    ):
        call = _Call((("x-ziggurat-peer", "ipv6:[2001:db8::7]:443"), ("x-ziggurat-gate", secret)))
        assert Peers(secret, length).address_of(call) == expected
