"""The Python SDK against real servers: reconnection, TLS, blocking client, typed views, `ziggurat bot`."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests import processes
from tests.servers import RunningServer, ServerProcess, kabaleo_config, pylos_config
from ziggurat.bots import make_bot
from ziggurat.v1 import match_pb2
from ziggurat.verify import verify_record
from ziggurat_client import ZigguratClient, ZigguratError
from ziggurat_client.runner import Backoff, SeatRunner
from ziggurat_client.sync import SyncClient
from ziggurat_client.views import KabaleoTable, PylosBoard, typed_view


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class SlowBot:
    """A random bot that thinks a little, so that a crash lands mid-game."""

    name = "slow"

    def __init__(self, seed: int) -> None:
        self.inner = make_bot("random", seed=seed)

    async def choose(self, turn):  # type: ignore[no-untyped-def]
        await asyncio.sleep(0.02)
        return self.inner.choose(turn)


async def test_bots_and_watchers_survive_a_server_crash(tmp_path: Path) -> None:
    port = free_port()
    proc = ServerProcess(tmp_path / "z.db", ["--port", str(port)])
    # ServerProcess passes --port 0 first; the later --port wins with argparse.
    address = proc.start()
    assert address.endswith(f":{port}")
    try:
        async with ZigguratClient(address) as client:
            match = await client.create_match(kabaleo_config(3))
            handles = [await client.join(match.match_id, f"b{i}") for i in range(3)]
            runners = [
                SeatRunner(
                    client, h, SlowBot(h.seat), backoff=Backoff(initial=0.05, maximum=0.5, attempts=200)
                )
                for h in handles
            ]
            seen: list[match_pb2.Event] = []

            async def watch() -> None:
                async for event in client.follow(
                    match.match_id, initial_backoff=0.05, max_backoff=0.5, attempts=200
                ):
                    seen.append(event)

            tasks = [asyncio.create_task(r.run()) for r in runners]
            watcher = asyncio.create_task(watch())
            while len(seen) < 20:
                await asyncio.sleep(0.02)
            proc.kill9()
            await asyncio.sleep(0.5)
            proc.start()  # same port, same database
            ended = await asyncio.wait_for(asyncio.gather(*tasks), 60)
            await asyncio.wait_for(watcher, 30)
            assert all(e.outcome.ranks for e in ended)
            assert [e.seq for e in seen] == list(range(1, len(seen) + 1)), "every event once, in order"
            assert seen[-1].WhichOneof("kind") == "match_ended"
            record = await client.record(match.match_id)
            assert verify_record(record).ok
            assert len(record.moves) == 30
            assert not any(
                r.rejections for r in runners if r.rejections and r.rejections[0].reason != "STALE_PLY"
            )
            # Each turn was put to its bot once, across the crash and the resume.
            assert all(len(r.answered) == len(set(r.answered)) for r in runners)
            assert sum(len(r.answered) for r in runners) == len(record.moves)
    finally:
        proc.stop()


def _self_signed(tmp_path: Path) -> tuple[Path, Path]:
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    processes.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


async def test_tls_server_and_client(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    proc = ServerProcess(tmp_path / "z.db", ["--tls-cert", str(cert), "--tls-key", str(key)])
    address = proc.start()
    try:
        async with ZigguratClient(address, root_certificates=cert.read_bytes()) as client:
            match = await client.create_match(pylos_config())
            handles = [await client.join(match.match_id, f"b{i}") for i in range(2)]
            ended = await asyncio.gather(
                *(SeatRunner(client, h, make_bot("random", seed=h.seat)).run() for h in handles)
            )
            assert sorted(ended[0].outcome.ranks) in ([1, 2], [1, 1])
        async with ZigguratClient(address) as plaintext:
            with pytest.raises(ZigguratError) as refused:
                await plaintext.list_matches()
            assert refused.value.code.name == "UNAVAILABLE"
    finally:
        proc.stop()


def test_blocking_client_plays_a_whole_match(server_process: ServerProcess) -> None:
    address = server_process.start()
    with SyncClient(address) as client:
        match = client.create_match(pylos_config())
        handles = [client.join(match.match_id, f"b{i}") for i in range(2)]
        results: dict[int, match_pb2.MatchEndedEvent] = {}

        def play(handle) -> None:  # type: ignore[no-untyped-def]
            results[handle.seat] = client.play(handle, make_bot("random", seed=handle.seat))

        threads = [threading.Thread(target=play, args=(h,)) for h in handles]
        for thread in threads:
            thread.start()
        events = list(client.follow(match.match_id))
        for thread in threads:
            thread.join(60)
        assert set(results) == {1, 2}
        assert events[-1].WhichOneof("kind") == "match_ended"
        assert client.get_match(match.match_id).status == match_pb2.MATCH_STATUS_FINISHED


async def test_typed_views_of_both_games(server: RunningServer, client: ZigguratClient) -> None:
    pylos = await client.create_match(pylos_config())
    handles = [await client.join(pylos.match_id, f"b{i}") for i in range(2)]
    mover = next(h for h in handles if h.seat == 1)
    await client.submit_move(mover, "1b3")
    board = typed_view((await client.get_match(pylos.match_id)).view)
    assert isinstance(board, PylosBoard)
    assert board.at("1b3") == "L" and board.at("1a1") == "." and board.light_reserve == 14
    assert board.to_move == 2
    kabaleo = await client.create_match(kabaleo_config(3))
    seats = [await client.join(kabaleo.match_id, f"k{i}") for i in range(3)]
    for handle in seats:
        table = typed_view((await client.get_match(kabaleo.match_id, handle)).view)
        assert isinstance(table, KabaleoTable)
        assert table.own_objective is not None
        assert [o is None for o in table.objectives] == [s != handle.seat for s in (1, 2, 3)]
        assert len(table.stacks) == 20 and all(stack.bare for stack in table.stacks)
        assert sum(table.hands[0].values()) == 10
    spectator = KabaleoTable.from_view((await client.get_match(kabaleo.match_id)).view)
    assert spectator.own_objective is None and set(spectator.objectives) == {None}


def test_bot_command_creates_and_joins(server_process: ServerProcess) -> None:
    address = server_process.start()
    cli = [sys.executable, "-m", "ziggurat.cli.main", "bot"]
    creator = processes.popen(
        [*cli, "greedy", "--server", address, "--create", "pylos"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert creator.stdout is not None
    first = creator.stdout.readline()
    assert first.startswith("created match "), first + (creator.stderr.read() if creator.stderr else "")
    match_id = first.split()[2]
    joiner = processes.run(
        [*cli, "random", "--server", address, "--match", match_id, "--name", "rnd"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    rest, err = creator.communicate(timeout=120)
    assert joiner.returncode == 0, joiner.stderr
    assert creator.returncode == 0, err
    assert f"match {match_id} over" in joiner.stdout and f"match {match_id} over" in rest
    unknown = processes.run(
        [*cli, "nosuchbot", "--server", address, "--match", match_id],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert unknown.returncode == 2 and "unknown bot" in unknown.stderr
