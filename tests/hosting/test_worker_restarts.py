"""``ziggurat serve --workers 2`` stopped and started again while its matches are played.

Clients learn each match's owner address (``Match.server_address``, MATCH_ELSEWHERE) and keep
it. A worker binds the port it published last time again when a new supervisor starts it, so
those addresses stay valid across kill -9 of the supervisor (its workers die with it) and
across SIGTERM and a new start; when that port is taken the worker serves on another, says so,
and clients fall back to the public address, which names the new one. Every match finishes,
every seat sees every move once, and ``ziggurat verify`` passes. Real processes, loopback
ports, real database files.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import pytest

from tests import processes
from tests.hosting.test_workers import CLI, Workers, _wait_gone
from tests.servers import pylos_config
from ziggurat.v1 import match_pb2
from ziggurat_client import ZigguratClient, ZigguratError
from ziggurat_client.bot import Turn
from ziggurat_client.runner import Backoff, FunctionBot, SeatRunner

pytestmark = pytest.mark.slow

MATCHES = 4  # two per worker
THINK_S = 0.1  # per move, so that every match is mid-game at each stop


class Play:
    """Both seats of every match played by SeatRunners, each seat's client opened on the public
    address (one client per side, so each holds a route per match)."""

    def __init__(self, workers: Workers) -> None:
        self.public = workers.address
        self.owners: dict[str, str] = {}  # match id -> the own address of the worker that made it
        self.clients: list[ZigguratClient] = []
        self.runners: list[SeatRunner] = []
        self.tasks: list[asyncio.Task[object]] = []
        # Cleared while the server is stopped and started: the bots hold their moves, so that no
        # match ends while the first worker to start serves its matches and the others start.
        self.moving = asyncio.Event()
        self.moving.set()

    async def start(self, own: list[str]) -> None:
        for index in range(MATCHES):
            async with ZigguratClient(own[index % len(own)]) as creator:
                match = await creator.create_match(pylos_config())
            self.owners[match.match_id] = match.server_address
        self.clients = [ZigguratClient(self.public), ZigguratClient(self.public)]
        for number, match_id in enumerate(self.owners):
            rng = random.Random(number)

            async def choose(turn: Turn, rng: random.Random = rng) -> str:
                await self.moving.wait()
                await asyncio.sleep(THINK_S)
                return rng.choice(turn.legal_moves)

            for client in self.clients:
                handle = await client.join(match_id, f"seat{len(self.runners)}")
                runner = SeatRunner(
                    client, handle, FunctionBot(choose), backoff=Backoff(initial=0.05, maximum=0.5)
                )
                self.runners.append(runner)
        self.tasks = [asyncio.create_task(r.run()) for r in self.runners]
        for client in self.clients:  # routes learnt from Match.server_address: in use from now on
            assert client.routes == self.owners

    async def wait_for_plies(self, at_least: int) -> None:
        """Until every match has this many plies (each still live)."""
        async with ZigguratClient(self.public) as watcher:
            for match_id in self.owners:
                while True:
                    for task in self.tasks:
                        if task.done():
                            task.result()  # raises what ended it, if it failed
                            raise AssertionError("a match ended before the stop")
                    try:
                        match = await watcher.get_match(match_id)
                    except ZigguratError as error:  # its worker still starting: asked again
                        if not error.retryable:
                            raise
                        match = None
                    if match is not None and match.view.ply >= at_least:
                        break
                    await asyncio.sleep(0.05)
                assert match.status == match_pb2.MATCH_STATUS_ACTIVE, "a match ended before the stop"

    async def finish(self) -> None:
        try:
            await asyncio.wait_for(asyncio.gather(*self.tasks), 240)
        finally:
            for client in self.clients:
                await client.close()

    async def check(self) -> None:
        """Every match played to its end by its bots (no move substituted by the server) and
        verified; each seat saw every move once, in order, and was asked each turn once."""
        assert all(r.sessions > 1 for r in self.runners), "every seat reconnected"
        async with ZigguratClient(self.public) as reader:
            for match_id in self.owners:
                record = await reader.record(match_id)
                assert not any(m.substituted for m in record.moves), "moves played by the bots only"
                moves = [m.move for m in record.moves]
                for runner in self.runners:
                    if runner.handle.match_id == match_id:
                        assert runner.history == moves
                        assert len(runner.answered) == len(set(runner.answered))
        for match_id in self.owners:
            command = [*CLI, "verify", match_id, "--server", self.public]
            verify = processes.run(command, capture_output=True, text=True, timeout=120)
            assert verify.returncode == 0, verify.stdout + verify.stderr


class PortTaker:
    """Another program on a port: it accepts connections and hangs up at once (it speaks
    something else), so a gRPC client's connection there fails as a dead port's does."""

    def __init__(self, port: int) -> None:
        self.server = socket.create_server(("127.0.0.1", port))  # SO_REUSEADDR: past TIME_WAIT
        self.server.settimeout(0.2)
        self.open = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.open:
            try:
                connection, _ = self.server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            connection.close()

    def close(self) -> None:
        self.open = False
        self.thread.join(5)
        self.server.close()


class Holding(Protocol):
    """What :func:`_restart` needs of the players: an event that holds their moves."""

    moving: asyncio.Event


async def _restart(
    play: Holding, running: Workers, stop: Callable[[Workers], None], *, hold: int | None = None
) -> tuple[Workers, PortTaker | None]:
    """Stop the server with ``stop``, wait for its workers to end, start it again on the same
    ``--port`` and ``--db`` (in a thread: the seats keep reconnecting meanwhile, their bots
    holding their moves). ``hold``: a worker whose own port another program takes while the
    server is down."""
    pids = [running.worker_pid(i) for i in range(running.count)]
    play.moving.clear()
    stop(running)
    for pid in pids:
        await asyncio.to_thread(_wait_gone, pid)
    holder = None if hold is None else PortTaker(int(running.own[hold].rsplit(":", 1)[1]))
    again = Workers(running.db, port=running.port, log=running.log)
    await asyncio.to_thread(again.start)
    play.moving.set()
    assert again.address == running.address
    return again, holder


def _kill9(running: Workers) -> None:
    assert running.proc is not None
    running.proc.kill()  # the supervisor only: its workers get SIGTERM from the kernel (PDEATHSIG)
    running.proc.wait(10)


def _sigterm(running: Workers) -> None:
    assert running.proc is not None
    running.proc.send_signal(signal.SIGTERM)
    assert running.proc.wait(60) == 0


async def test_matches_finish_through_kill9_of_the_supervisor_and_a_new_start(tmp_path: Path) -> None:
    first = Workers(tmp_path / "z.db", log=tmp_path / "serve.log")
    first.start()
    first.port = int(first.address.rsplit(":", 1)[1])
    servers = [first]
    try:
        play = Play(first)
        await play.start(first.own)
        await play.wait_for_plies(4)
        second, _ = await _restart(play, first, _kill9)
        servers.append(second)
        assert second.own == first.own, "every worker kept its own port"
        await play.finish()
        await play.check()
    finally:
        for server in servers:
            server.stop()


async def test_matches_finish_through_sigterm_and_new_starts_even_on_a_new_own_port(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    first = Workers(tmp_path / "z.db", log=log)
    first.start()
    first.port = int(first.address.rsplit(":", 1)[1])
    servers = [first]
    holder: PortTaker | None = None
    try:
        play = Play(first)
        await play.start(first.own)
        await play.wait_for_plies(4)
        second, _ = await _restart(play, first, _sigterm)
        servers.append(second)
        assert second.own == first.own, "every worker kept its own port"
        await play.wait_for_plies(8)
        # Now worker 1's port is taken while the server is down: it serves on a new one, and
        # the clients that hold the old address fall back to the public one, which names it.
        third, holder = await _restart(play, second, _sigterm, hold=1)
        servers.append(third)
        assert third.own[0] == first.own[0] and third.own[1] != first.own[1]
        taken = first.own[1].rsplit(":", 1)[1]
        assert f"worker 1 cannot listen on its own port {taken} again" in log.read_text()
        await play.finish()
        await play.check()
        moved = [m for m, owner in play.owners.items() if owner == first.own[1]]
        for client in play.clients:  # the old address was forgotten, the new one learnt
            assert all(client.routes.get(m) == third.own[1] for m in moved), client.routes
        assert os.stat(f"{tmp_path / 'z.shard1.db'}.address").st_mode & 0o777 == 0o600
    finally:
        if holder is not None:
            holder.close()
        for server in servers:
            server.stop()


def _free_pair() -> int:
    """A port P such that P and P+1 are both free now."""
    for _ in range(50):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = int(first.getsockname()[1])
            if port < 65535:
                with socket.socket() as second:
                    try:
                        second.bind(("127.0.0.1", port + 1))
                    except OSError:
                        continue
                    return port
    raise AssertionError("no two free ports in a row")


def test_worker_ports_fix_each_own_port_and_a_taken_one_stops_the_start(tmp_path: Path) -> None:
    """``--worker-ports FIRST``: worker K on FIRST+K (an operator's firewall expects them); a
    port of them that is taken is not swapped for another: the server does not start."""
    first = _free_pair()
    fixed = Workers(tmp_path / "z.db", log=tmp_path / "serve.log", extra=["--worker-ports", str(first)])
    fixed.start()
    try:
        assert fixed.own == [f"127.0.0.1:{first}", f"127.0.0.1:{first + 1}"]
        pids = [fixed.worker_pid(i) for i in range(2)]
    finally:
        fixed.stop()
    for pid in pids:
        _wait_gone(pid)
    taker = PortTaker(first + 1)
    try:
        command = [*CLI, "serve", "--workers", "2", "--worker-ports", str(first), "--host", "127.0.0.1"]
        refused = processes.run(
            [*command, "--port", "0", "--db", str(tmp_path / "z.db"), "--no-mdns"],
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        taker.close()
    assert refused.returncode == 1, refused.stderr
    assert f"cannot listen on 127.0.0.1:{first + 1}, worker 1's own port (--worker-ports)" in refused.stderr
