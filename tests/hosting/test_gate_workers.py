"""``ziggurat serve --workers N --gate``: each worker runs a ziggurat-gate of its own, which
shares the public port with the other workers' gates (SO_REUSEPORT) and serves the worker's
own port, both with TLS when the server has it. Real processes: the supervisor, its workers,
their gates, clients over TLS.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import time
from pathlib import Path

import grpc
import pytest

from tests import processes
from tests.clients.test_sdk import _self_signed
from tests.hosting import test_gate
from tests.hosting.test_workers import CLI, Workers
from tests.servers import pylos_config
from ziggurat.v1 import match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as rpc
from ziggurat_client import ZigguratClient
from ziggurat_client.bot import Turn
from ziggurat_client.runner import Backoff, FunctionBot, SeatRunner

pytestmark = pytest.mark.slow
gate_built = test_gate.gate_built
private_tmp = test_gate.private_tmp


def _gates_in(directory: Path) -> set[int]:
    """The pids of the gates whose private upstream socket is in ``directory`` (the servers'
    TMPDIR): this test's gates, whatever else runs on the machine."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(w.endswith(b"ziggurat-gate") for w in words) and str(directory).encode() in b" ".join(words):
            found.add(int(entry.name))
    return found


def _closed_at_once(address: str) -> bool:
    """Whether a new TCP connection to ``address`` is closed by the far end within 2 s, before
    this side sends anything (the gate's open-connections cap closes it at accept)."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as probe:
        probe.settimeout(2)
        try:
            return probe.recv(1) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False


async def _play(address: str, root: bytes, match_id: str) -> list[str]:
    """Both seats played to the end through ``address`` over TLS; the record's moves."""
    rng = random.Random(3)

    async def choose(turn: Turn) -> str:
        return rng.choice(turn.legal_moves)

    async with (
        ZigguratClient(address, tls=True, root_certificates=root) as one,
        ZigguratClient(address, tls=True, root_certificates=root) as two,
    ):
        handles = [await one.join(match_id, "one"), await two.join(match_id, "two")]
        runners = [
            SeatRunner(client, handle, FunctionBot(choose), backoff=Backoff(maximum=1.0))
            for client, handle in zip((one, two), handles, strict=True)
        ]
        await asyncio.wait_for(asyncio.gather(*(r.run() for r in runners)), 180)
        record = await one.record(match_id)
    return [m.move for m in record.moves]


async def test_each_worker_runs_a_gate_on_the_shared_port_and_its_own_with_tls(
    gate_built: Path, tmp_path: Path, private_tmp: Path
) -> None:
    cert, key = _self_signed(tmp_path)
    root = cert.read_bytes()
    cap = 6
    running = Workers(
        tmp_path / "z.db",
        extra=[
            "--gate",
            "--tls-cert",
            str(cert),
            "--tls-key",
            str(key),
            "--max-open-connections-per-address",
            str(cap),
        ],
    )
    running.start()
    gates: set[int] = set()
    try:
        gates = _gates_in(private_tmp)
        assert len(gates) == 2, "one gate per worker"
        assert running.web.startswith("https://"), "the web port speaks TLS too"

        # New connections to the public port reach both workers' gates: matches created
        # through it land in both shards (each names its owner's own port).
        owners: dict[str, str] = {}
        for _ in range(60):
            async with ZigguratClient(running.address, tls=True, root_certificates=root) as client:
                match = await client.create_match(pylos_config())
            owners.setdefault(match.server_address, match.match_id)
            if len(owners) == 2:
                break
        assert set(owners) == set(running.own), owners

        # A match of worker 1 played to the end through the public port (the clients follow
        # MATCH_ELSEWHERE to the owner's own port, also behind its gate), then verified.
        on1 = owners[running.own[1]]
        moves = await _play(running.address, root, on1)
        assert moves
        async with ZigguratClient(running.own[0], tls=True, root_certificates=root) as client:
            final = await client.get_match(on1)
        assert final.status == match_pb2.MATCH_STATUS_FINISHED
        verify = processes.run(
            [*CLI, "verify", on1, "--server", running.address, "--ca", str(cert)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert verify.returncode == 0 and verify.stdout.startswith(f"verified: match {on1}"), (
            verify.stdout + verify.stderr
        )

        # Plain text gets no answer on either port: the gates speak TLS only.
        for address in (running.address, running.own[0]):
            async with grpc.aio.insecure_channel(address) as plain:
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await rpc.MatchServiceStub(plain).GetMatch(spb.GetMatchRequest(match_id=on1), timeout=5)
            assert refused.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)

        # The own port is the gate's: idle connections over its open-connections cap (a gate-only
        # limit) are closed at accept, and the ones under it are held.
        own = running.own[0]
        host, port = own.rsplit(":", 1)
        held = [socket.create_connection((host, int(port)), timeout=5) for _ in range(cap)]
        try:
            time.sleep(0.3)
            assert _closed_at_once(own), "the connection over the cap was closed at accept"
            for connection in held:
                connection.setblocking(False)
                with pytest.raises(BlockingIOError):  # open, nothing received
                    connection.recv(1)
        finally:
            for connection in held:
                connection.close()
    finally:
        running.stop()  # kill -9 of the supervisor: workers die with it, and their gates with them
        deadline = time.monotonic() + 30
        while _gates_in(private_tmp) and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
    assert gates and not _gates_in(private_tmp), "every gate died with its worker"
    for pid in gates:
        assert not os.path.exists(f"/proc/{pid}") or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
