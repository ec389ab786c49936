"""``ziggurat bot`` never gives up on a live match: a pair of bot processes plays one match to the
end while the server is restarted exactly 50 times (SIGTERM and kill -9 alternately).

The test sets the pace, not the clock: the bots may only make the moves the test allows (a
gate file holding how many plies may be played), so that every restart lands on a live match
with the bots running, whatever the machine's load. Every other restart follows a move (and
the reconnection of the bot that made it); the others land while the bot to move waits at
the gate, in the middle of its turn (it reconnects, and re-sends its move, once it chose). That is
25 moves in 50 restarts, fewer than any Pylos game lasts (a player places at least 15 balls
before running out), so the match is live for all 50; then the gate opens and it finishes.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import processes
from tests.servers import ServerProcess, free_port, match_when_back
from ziggurat_client.sync import SyncClient
from ziggurat_client.v1 import match_pb2

GATED_BOT = '''
import pathlib
import random
import time


class GatedBot:
    """Plays a random legal move once the gate file allows the turn's ply."""

    name = "gated"

    def __init__(self, gate: str = "gate", seed: int = 0) -> None:
        self.gate = pathlib.Path(gate)
        self.rng = random.Random(seed)

    def allowed(self) -> int:
        try:
            return int(self.gate.read_text() or 0)
        except (OSError, ValueError):
            return 0

    def choose(self, turn):
        while turn.ply >= self.allowed():
            time.sleep(0.02)
        return self.rng.choice(turn.legal_moves)
'''

RESTARTS = 24  # 12 SIGTERM, 12 kill -9: each restart costs seconds on a loaded CI host
OPEN = 1_000_000  # a gate that lets the match run to its end


def _until(client: SyncClient, match_id: str, what: str, done: Callable[[match_pb2.Match], bool]) -> None:
    deadline = time.monotonic() + 120  # generous: under heavy load a restart takes seconds
    while time.monotonic() < deadline:
        if done(match_when_back(client, match_id)):
            return
        time.sleep(0.05)
    raise AssertionError(f"waited 120 s for {what}: {match_when_back(client, match_id)}")


def _waiting_bot_connected(match: match_pb2.Match) -> bool:
    """The bot that is not to move is back on its stream. (The one to move may be waiting at
    the gate inside ``choose``: the runner reconnects once its bot has chosen.)"""
    return all(
        seat.state == match_pb2.SEAT_STATE_CONNECTED
        for seat in match.seats
        if seat.seat != match.view.to_move
    )


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_bot_pair_finishes_its_match_through_many_server_restarts(tmp_path: Path) -> None:
    (tmp_path / "gated_bot.py").write_text(GATED_BOT)
    gate = tmp_path / "gate"
    gate.write_text("0")
    port = free_port()
    server = ServerProcess(tmp_path / "z.db", ["--port", str(port), "--no-web"])
    address = server.start()
    cli = [sys.executable, "-m", "ziggurat.cli.main", "bot", "gated_bot.py:GatedBot", "--server", address]
    bots: list[subprocess.Popen[str]] = []
    try:
        creator = processes.popen(
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
        joiner = processes.popen(
            [*cli, "--match", match_id, "--bot-option", "seed=2"],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        bots.append(joiner)
        restarts = {"SIGTERM": 0, "kill -9": 0}
        with SyncClient(address) as client:
            for restart in range(RESTARTS):
                if restart % 2 == 0:  # one move, then the restart
                    ply = match_when_back(client, match_id).view.ply
                    gate.write_text(str(ply + 1))
                    _until(client, match_id, f"move {ply + 1}", lambda m, ply=ply: m.view.ply == ply + 1)
                _until(client, match_id, "the waiting bot to be connected", _waiting_bot_connected)
                match = match_when_back(client, match_id)
                assert match.status == match_pb2.MATCH_STATUS_ACTIVE, f"not live at restart {restart + 1}"
                if restart % 2:
                    server.kill9()
                    restarts["kill -9"] += 1
                else:
                    assert server.terminate() == 0
                    restarts["SIGTERM"] += 1
                server.start()
                # A bot exits only at the end of the match, with status 0; anything else is giving up.
                assert {creator.poll(), joiner.poll()} == {None}, f"a bot quit at restart {restart + 1}"
            assert restarts == {"SIGTERM": RESTARTS // 2, "kill -9": RESTARTS // 2}
            assert match_when_back(client, match_id).view.ply == RESTARTS // 2
            gate.write_text(str(OPEN))
            outputs = [bot.communicate(timeout=240) for bot in bots]
            for bot, (out, err) in zip(bots, outputs, strict=True):
                assert bot.returncode == 0, err[-2000:]
                assert f"match {match_id} over" in out
            assert client.get_match(match_id).status == match_pb2.MATCH_STATUS_FINISHED
        verify = processes.run(
            [sys.executable, "-m", "ziggurat.cli.main", "verify", match_id, "--server", address],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert verify.returncode == 0, verify.stdout + verify.stderr
    finally:
        for bot in bots:
            processes.stop(bot)
        server.stop()
