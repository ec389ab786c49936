"""A starter bot started as a remote bot before its server is up waits for it (an arena entrant
launched while the arena restarts must not die): started against a free port, it is still
running two seconds later, and once a server starts on that port it connects and is listed."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import grpc
import pytest

from tests import processes
from tests.clients.test_polyglot_table import REPO, available_languages
from tests.servers import ServerProcess
from ziggurat.v1 import bot_service_pb2 as bpb
from ziggurat.v1 import bot_service_pb2_grpc as bgrpc

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("language", available_languages())
def test_a_remote_starter_bot_waits_for_its_server(language: str, tmp_path: Path) -> None:
    port = _free_port()
    address = f"127.0.0.1:{port}"
    dash = "-" if language == "go" else "--"  # Go's flag package
    name = f"early-{language}"
    bot = processes.popen(
        [
            REPO / "clients" / language / "random-bot",
            f"{dash}server",
            address,
            f"{dash}remote",
            f"{dash}name",
            name,
        ],
        env={**os.environ, "ZIGGURAT_STARTER_BOT_PREBUILT": "1", "ZIGGURAT_BOT_TOKEN": "early-token"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    server = ServerProcess(tmp_path / "s.db", ["--port", str(port), "--no-web"])
    try:
        time.sleep(2.0)
        assert bot.poll() is None, bot.stderr.read() if bot.stderr else ""
        server.start()
        deadline = time.monotonic() + 30
        with grpc.insecure_channel(address) as channel:
            stub = bgrpc.BotServiceStub(channel)
            while name not in {b.name for b in stub.ListBots(bpb.ListBotsRequest(), timeout=5).bots}:
                assert time.monotonic() < deadline, f"{language}: the bot never connected"
                assert bot.poll() is None, bot.stderr.read() if bot.stderr else ""
                time.sleep(0.2)
    finally:
        processes.stop(bot)
        server.stop()
