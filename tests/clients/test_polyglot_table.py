"""One 4-seat Kabaleo table of starter bots written in different languages, played to the end.

The promise is "bots in any language": each official client's starter bot (its
``clients/<language>/random-bot`` launcher) joins the same match on a real server subprocess,
and the finished match must pass ``ziggurat verify``. On a machine that lacks a language's
toolchain, the languages present take the seats in turn, so the table always has four seats
(the CI machine has all four: Go, TypeScript, Rust, Java).

The bots are built before the tests, by scripts/test (``random-bot --build``: each language's
own build and cache), never here: a cold Rust or Java build took minutes of this test's time.
The launchers run with ``ZIGGURAT_STARTER_BOT_PREBUILT``, which makes one that would have to
build refuse (exit 3, naming the command) instead.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from tests import processes
from tests.servers import ServerProcess
from ziggurat_client.v1 import game_pb2
from ziggurat_client.v1 import match_service_pb2 as spb
from ziggurat_client.v1 import match_service_pb2_grpc as sgrpc

REPO = Path(__file__).resolve().parents[2]
# Language -> the toolchain commands its launcher needs.
LANGUAGES = {
    "go": ("go",),
    "typescript": ("node", "npm"),
    "rust": ("cargo",),
    "java": ("java", "mvn"),
}
GAME_TIMEOUT = 240  # a 4-seat game of starter bots, JVM start-up included, on a loaded machine
PREBUILT = 3  # a launcher's exit code when its bot is not built


def available_languages() -> list[str]:
    """Languages whose starter-bot launcher is in the repository and whose toolchain is here."""
    found = []
    for language, tools in LANGUAGES.items():
        launcher = REPO / "clients" / language / "random-bot"
        if os.access(launcher, os.X_OK) and all(shutil.which(tool) for tool in tools):
            found.append(language)
    return found


def test_every_official_client_has_a_starter_bot_launcher() -> None:
    """Guards the test below against silently shrinking: all four launchers are in the repository."""
    for language in LANGUAGES:
        assert os.access(REPO / "clients" / language / "random-bot", os.X_OK), language


@pytest.mark.slow
@pytest.mark.timeout(GAME_TIMEOUT + 120)
def test_four_languages_at_one_kabaleo_table(tmp_path: Path) -> None:
    languages = available_languages()
    if not languages:
        pytest.skip("no client toolchain (go, npm, cargo, mvn) on PATH")
    seats = [languages[i % len(languages)] for i in range(4)]
    print("languages at the table:", seats)
    server = ServerProcess(tmp_path / "z.db")
    address = server.start()
    bots: list[subprocess.Popen[str]] = []
    try:
        with grpc.insecure_channel(address) as channel:
            stub = sgrpc.MatchServiceStub(channel)
            config = game_pb2.GameConfig(game=game_pb2.GAME_KABALEO, seats=4)
            match_id = stub.CreateMatch(spb.CreateMatchRequest(config=config)).match.match_id
            path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
            env = {**os.environ, "PATH": path, "ZIGGURAT_STARTER_BOT_PREBUILT": "1"}
            for number, language in enumerate(seats, start=1):
                launcher = REPO / "clients" / language / "random-bot"
                name = f"{language}-{number}"
                command = [str(launcher), "--server", address, "--match", match_id, "--name", name]
                pipe, merged = subprocess.PIPE, subprocess.STDOUT
                bots.append(processes.popen(command, stdout=pipe, stderr=merged, text=True, env=env))
            outputs = []
            for bot, language in zip(bots, seats, strict=True):
                out, _ = bot.communicate(timeout=GAME_TIMEOUT)
                outputs.append(out)
                if bot.returncode == PREBUILT:
                    pytest.fail(f"the {language} bot is not built (scripts/test builds it):\n{out}")
                assert bot.returncode == 0, f"the {language} bot failed:\n{out}"
            record = stub.GetMatchRecord(spb.GetMatchRecordRequest(match_id=match_id)).record
        assert sorted(seat.player_name for seat in record.seats) == sorted(
            f"{language}-{number}" for number, language in enumerate(seats, start=1)
        )
        assert record.outcome.termination == game_pb2.TERMINATION_NORMAL
        assert not any(move.substituted for move in record.moves), "every move was a bot's own"
        assert len(record.outcome.ranks) == 4 and set(record.outcome.ranks) <= {1, 2, 3, 4}
        verified = processes.run(
            [sys.executable, "-m", "ziggurat.cli.main", "verify", match_id, "--server", address],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert verified.returncode == 0, verified.stdout + verified.stderr
    finally:
        for bot in bots:
            processes.stop(bot)
        server.stop()
