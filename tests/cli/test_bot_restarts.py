"""``ziggurat bot`` never gives up on a live match: a pair of bot processes plays one match to the
end while the server is restarted after every move, up to 50 times (SIGTERM and kill -9 alternately)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.service.conftest import ServerProcess
from ziggurat_client import ZigguratError
from ziggurat_client.sync import SyncClient
from ziggurat_client.v1 import match_pb2

SLOW_BOT = '''
import random
import time


class SlowBot:
    """Thinks a little, so that a restart lands between almost every two moves."""

    name = "slow"

    def __init__(self, delay: float = 1.0, seed: int = 0) -> None:
        self.delay = delay
        self.rng = random.Random(seed)

    def choose(self, turn):
        time.sleep(self.delay)
        return self.rng.choice(turn.legal_moves)
'''

MAX_RESTARTS = 50


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _match(client: SyncClient, match_id: str) -> match_pb2.Match:
    for _ in range(300):
        try:
            return client.get_match(match_id)
        except ZigguratError as error:
            if not error.retryable:
                raise
            time.sleep(0.1)
    raise AssertionError("the server did not come back")


@pytest.mark.slow
def test_a_bot_pair_finishes_its_match_through_many_server_restarts(tmp_path: Path) -> None:
    (tmp_path / "slow_bot.py").write_text(SLOW_BOT)
    port = _free_port()
    server = ServerProcess(tmp_path / "z.db", ["--port", str(port)])
    address = server.start()
    cli = [sys.executable, "-m", "ziggurat.cli.main", "bot", "slow_bot.py:SlowBot", "--server", address]
    bots: list[subprocess.Popen[str]] = []
    try:
        creator = subprocess.Popen(
            [*cli, "--create", "pylos", "--bot-option", "seed=1"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        bots.append(creator)
        assert creator.stdout is not None
        first = creator.stdout.readline()
        assert first.startswith("created match "), first
        match_id = first.split()[2]
        joiner = subprocess.Popen(
            [*cli, "--match", match_id, "--bot-option", "seed=2"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        bots.append(joiner)
        restarts = 0
        with SyncClient(address) as client:
            last_ply = _match(client, match_id).view.ply
            while restarts < MAX_RESTARTS:
                match = _match(client, match_id)
                if match.status == match_pb2.MATCH_STATUS_FINISHED:
                    break
                if match.view.ply == last_ply:  # restart once a move has been made since the last one
                    time.sleep(0.05)
                    continue
                last_ply = match.view.ply
                if restarts % 2:
                    server.kill9()
                else:
                    server.terminate()
                server.start()
                restarts += 1
                # A bot exits only at the end of the match, with status 0; anything else is giving up.
                assert {creator.poll(), joiner.poll()} <= {None, 0}, f"gave up ({restarts} restarts)"
            outputs = [bot.communicate(timeout=240) for bot in bots]
            for bot, (out, err) in zip(bots, outputs, strict=True):
                assert bot.returncode == 0, err[-2000:]
                assert f"match {match_id} over" in out
            assert client.get_match(match_id).status == match_pb2.MATCH_STATUS_FINISHED
        # A bot thinks 1 s, so nearly every move gets a restart of its own: a Pylos game has 30+.
        assert restarts >= 25, f"only {restarts} restarts"
        verify = subprocess.run(
            [sys.executable, "-m", "ziggurat.cli.main", "verify", match_id, "--server", address],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert verify.returncode == 0, verify.stdout + verify.stderr
    finally:
        for bot in bots:
            if bot.poll() is None:
                bot.kill()
                bot.wait(10)
        server.stop()
