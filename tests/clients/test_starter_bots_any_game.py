"""Each official client's starter bot creates any game the server lists, by its name.

``random-bot --create NAME`` resolves NAME through ``MatchService.ListGames`` (the client's
own ``GameConfig`` by name), so a bot written before a game existed can create and play it:
here phantom tic-tac-toe, which no client has a helper for, with private moves and a hidden
board. Two copies of one language's bot take both seats, the first creating the match, and
the finished match must pass ``ziggurat verify``. A name the server does not list stops the
bot before anything is created: non-zero exit and one line naming the server's games.

The bots are built before the tests (scripts/test runs each ``random-bot --build``); the
launchers run with ``ZIGGURAT_STARTER_BOT_PREBUILT``, which makes one that would have to build
refuse with exit 3 instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from tests import processes
from tests.clients.test_polyglot_table import PREBUILT, REPO, available_languages
from tests.servers import ServerProcess
from ziggurat_client.v1 import game_pb2
from ziggurat_client.v1 import match_service_pb2 as spb
from ziggurat_client.v1 import match_service_pb2_grpc as sgrpc

pytestmark = pytest.mark.slow
GAME_TIMEOUT = 180  # two starter bots, JVM start-up included, on a loaded machine
CREATED = re.compile(r"created match (\S+)")


def _environment() -> dict[str, str]:
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    return {**os.environ, "PATH": path, "ZIGGURAT_STARTER_BOT_PREBUILT": "1"}


def _launcher(language: str) -> str:
    return str(REPO / "clients" / language / "random-bot")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path / "z.db", ["--no-web"])
    yield process
    process.stop()


@pytest.mark.timeout(2 * GAME_TIMEOUT)
@pytest.mark.parametrize("language", available_languages())
def test_starter_bot_creates_and_plays_phantom_ttt_by_name(language: str, server: ServerProcess) -> None:
    address = server.start()
    env = _environment()
    pipe, merged = subprocess.PIPE, subprocess.STDOUT
    names = [f"{language}-creator", f"{language}-joiner"]
    creator = processes.popen(
        [_launcher(language), "--server", address, "--create", "phantom-ttt", "--name", names[0]],
        stdout=pipe, stderr=merged, text=True, env=env,
    )  # fmt: skip
    joiner: subprocess.Popen[str] | None = None
    try:
        assert creator.stdout is not None
        seen = []
        for line in creator.stdout:  # ends when the bot exits: a failure is then asserted
            seen.append(line)
            if found := CREATED.search(line):
                break
        else:
            creator.wait(timeout=30)
            if creator.returncode == PREBUILT:
                pytest.fail(f"the {language} bot is not built (scripts/test builds it):\n{''.join(seen)}")
            pytest.fail(f"the {language} bot created no match (exit {creator.returncode}):\n{''.join(seen)}")
        match_id = found.group(1)
        joiner = processes.popen(
            [_launcher(language), "--server", address, "--match", match_id, "--name", names[1]],
            stdout=pipe, stderr=merged, text=True, env=env,
        )  # fmt: skip
        joined, _ = joiner.communicate(timeout=GAME_TIMEOUT)
        rest, _ = creator.communicate(timeout=GAME_TIMEOUT)
        assert joiner.returncode == 0, f"the {language} joiner failed:\n{joined}"
        assert creator.returncode == 0, f"the {language} creator failed:\n{''.join(seen)}{rest}"
        with grpc.insecure_channel(address) as channel:
            stub = sgrpc.MatchServiceStub(channel)
            record = stub.GetMatchRecord(spb.GetMatchRecordRequest(match_id=match_id)).record
        assert record.config.game == game_pb2.GAME_PHANTOM_TIC_TAC_TOE and record.config.seats == 2
        assert sorted(seat.player_name for seat in record.seats) == names
        assert record.outcome.termination == game_pb2.TERMINATION_NORMAL
        assert record.moves and not any(move.substituted for move in record.moves), "all the bots' own"
        verified = processes.run(
            [sys.executable, "-m", "ziggurat.cli.main", "verify", match_id, "--server", address],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert verified.stdout.startswith(f"verified: match {match_id}"), verified.stdout
    finally:
        for bot in (creator, joiner):
            if bot is not None:
                processes.stop(bot)


@pytest.mark.timeout(GAME_TIMEOUT)
@pytest.mark.parametrize("language", available_languages())
def test_starter_bot_refuses_a_game_the_server_does_not_list(language: str, server: ServerProcess) -> None:
    address = server.start()
    bot = processes.run(
        [_launcher(language), "--server", address, "--create", "chess"],
        capture_output=True, text=True, timeout=GAME_TIMEOUT, env=_environment(),
    )  # fmt: skip
    assert bot.returncode not in (0, PREBUILT), bot.stdout + bot.stderr
    lines = bot.stderr.strip().splitlines()
    assert len(lines) == 1, bot.stderr
    assert all(name in lines[0] for name in ("chess", "pylos", "kabaleo", "phantom-ttt")), lines
    with grpc.insecure_channel(address) as channel:
        listed = sgrpc.MatchServiceStub(channel).ListMatches(spb.ListMatchesRequest()).matches
    assert not listed, "nothing was created"
