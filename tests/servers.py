"""Fixtures: a real server on an ephemeral loopback port with a real database file.

A plugin of the whole suite (tests/conftest.py), so the fixtures ``server``, ``client`` and
``server_process`` serve every folder (tests/core, tests/api, tests/hosting, the clients'
tests, ...); the helpers (``RunningServer``, ``ServerProcess``, ``pylos_config``, ...) are
imported from here."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import processes
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import game_pb2, match_pb2, match_service_pb2
from ziggurat_client import ZigguratClient, ZigguratError
from ziggurat_client.client import MatchHandle
from ziggurat_client.sync import SyncClient


@dataclass
class RunningServer:
    server: ZigguratServer
    address: str
    db_path: Path


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[RunningServer]:
    """An in-process server (same event loop as the test) on 127.0.0.1:0."""
    db = tmp_path / "ziggurat.db"
    running = ZigguratServer(ServeOptions(host="127.0.0.1", port=0, db_path=str(db), grace_seconds=0.5))
    port = await running.start()
    yield RunningServer(running, f"127.0.0.1:{port}", db)
    await running.stop()


@pytest.fixture
async def client(server: RunningServer) -> AsyncIterator[ZigguratClient]:
    async with ZigguratClient(server.address) as c:
        yield c


def pylos_config(variant: int = game_pb2.PYLOS_VARIANT_STANDARD, max_moves: int = 0) -> game_pb2.GameConfig:
    return game_pb2.GameConfig(
        game=game_pb2.GAME_PYLOS, seats=2, pylos=game_pb2.PylosConfig(variant=variant, max_moves=max_moves)
    )


def kabaleo_config(
    seats: int, deal: int = game_pb2.KABALEO_DEAL_RANDOM, last_stack: bool = False
) -> game_pb2.GameConfig:
    return game_pb2.GameConfig(
        game=game_pb2.GAME_KABALEO,
        seats=seats,
        kabaleo=game_pb2.KabaleoConfig(deal=deal, last_stack=last_stack),
    )


def random_chooser(seed: int):  # type: ignore[no-untyped-def]
    rng = random.Random(seed)

    def choose(turn):  # type: ignore[no-untyped-def]
        return rng.choice(list(turn.legal_moves))

    return choose


class ServerProcess:
    """``ziggurat serve`` as a real subprocess (for kill -9, signals and the CLI)."""

    def __init__(self, db_path: Path, extra: list[str] | None = None) -> None:
        self.db_path = db_path
        self.extra = extra or []
        self.proc: subprocess.Popen[str] | None = None
        self.address = ""
        self.web_url = ""  # the web client's http://HOST:PORT/ (unless --no-web)

    def start(self) -> str:
        cmd = [
            sys.executable,
            "-m",
            "ziggurat.cli.main",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--db",
            str(self.db_path),
            "--grace",
            "1",
            "--no-mdns",
            *self.extra,
        ]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = processes.popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        assert self.proc.stdout is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                err = self.proc.stderr.read() if self.proc.stderr else ""
                raise RuntimeError(f"server exited before listening: {err}")
            if line.startswith("ziggurat listening on "):
                self.address = line.split()[-1].strip()
                if "--no-web" not in self.extra:
                    web = self.proc.stdout.readline()
                    assert web.startswith("ziggurat web client on "), web
                    self.web_url = web.split()[-1].strip()
                return self.address
        raise RuntimeError("server did not start in 30 s")

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(10)

    def terminate(self) -> int:
        assert self.proc is not None
        self.proc.terminate()
        return self.proc.wait(20)

    def stop(self) -> None:
        """Kill it (and anything left in its process group), if it still runs."""
        if self.proc is not None:
            processes.stop(self.proc)


def free_port() -> int:
    """A loopback port free now: a server restarted in a test comes back on the same one."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def match_when_back(client: SyncClient, match_id: str, handle: MatchHandle | None = None) -> match_pb2.Match:
    """GetMatch, retried while the server is restarting (retryable errors, up to 30 s)."""
    for _ in range(300):
        try:
            return client.get_match(match_id, handle)
        except ZigguratError as error:
            if not error.retryable:
                raise
            time.sleep(0.1)
    raise AssertionError("the server did not come back")


@pytest.fixture
def server_process(tmp_path: Path) -> Iterator[ServerProcess]:
    proc = ServerProcess(tmp_path / "ziggurat.db")
    yield proc
    proc.stop()


@dataclass
class PlayItem:
    """One item of a Play stream, flattened: an event, or a refusal of a sent move."""

    kind: str  # "event" or "move_rejected"
    event: match_pb2.Event
    move_rejected: match_service_pb2.MoveRejected

    def WhichOneof(self, _: str) -> str:
        return self.kind


async def play_items(call: Any) -> AsyncIterator[PlayItem]:
    """Flatten PlayResponse batches (events of one change + an optional refusal) into items."""
    async for response in call:
        if response.HasField("move_rejected"):
            yield PlayItem("move_rejected", match_pb2.Event(), response.move_rejected)
        for event in response.events:
            yield PlayItem("event", event, match_service_pb2.MoveRejected())
