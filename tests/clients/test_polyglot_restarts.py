"""The starter bot of every official client plays through restarts of ``ziggurat serve
--workers 2``: kill -9 of the supervisor and a new start, then SIGTERM and a new start with a
worker's own port taken meanwhile (so that its matches move to another port and every client
must fall back to the public address, which names the new one). Every match finishes with the
bots' own moves and verifies.

Each Pylos match seats one language's starter bot (``clients/<language>/random-bot``, joined
through the public address) against a Python seat that thinks a little before each move and
holds its moves while the server is down, so that each match is mid-game at each stop. The
bots are built before the tests by scripts/test, never here (tests/clients/test_polyglot_table.py).
"""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from tests import processes
from tests.clients.test_polyglot_table import PREBUILT, REPO, available_languages
from tests.hosting.test_worker_restarts import PortTaker, _kill9, _restart, _sigterm
from tests.hosting.test_workers import CLI, Workers
from tests.servers import pylos_config
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat_client import ZigguratClient, ZigguratError
from ziggurat_client.bot import Turn
from ziggurat_client.runner import Backoff, FunctionBot, SeatRunner

pytestmark = pytest.mark.slow
THINK_S = 0.05
# How a Pylos match ends when both seats play it out (no resignation, timeout or abort).
PLAYED_OUT = {
    game_pb2.TERMINATION_PYRAMID_COMPLETE,
    game_pb2.TERMINATION_NO_LEGAL_MOVE,
    game_pb2.TERMINATION_REPETITION,
    game_pb2.TERMINATION_MOVE_LIMIT,
}


class Table:
    """One match per language: its starter bot against a Python seat. ``moving`` holds the
    Python seats' moves (cleared while the server is stopped and started); ``cap`` is how many
    moves each Python seat makes before it waits for the next phase, so that no match can end
    before the stops, however long each language's bot takes to reconnect."""

    def __init__(self, public: str) -> None:
        self.public = public
        self.matches: dict[str, str] = {}  # language -> match id
        self.bots: dict[str, subprocess.Popen[str]] = {}
        self.client = ZigguratClient(public)
        self.runners: list[SeatRunner] = []
        self.tasks: list[asyncio.Task[object]] = []
        self.moving = asyncio.Event()
        self.moving.set()
        self.cap = 0
        self.made: dict[str, int] = {}  # match id -> moves its Python seat made

    async def start(self, languages: list[str], own: list[str]) -> None:
        for index, language in enumerate(languages):
            async with ZigguratClient(own[index % len(own)]) as creator:  # both workers own some
                self.matches[language] = (await creator.create_match(pylos_config())).match_id
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
        env = {**os.environ, "PATH": path, "ZIGGURAT_STARTER_BOT_PREBUILT": "1"}
        for number, (language, match_id) in enumerate(self.matches.items()):
            handle = await self.client.join(match_id, f"python-{language}")
            rng = random.Random(number)

            async def choose(turn: Turn, rng: random.Random = rng, match_id: str = match_id) -> str:
                while self.made.get(match_id, 0) >= self.cap:
                    await asyncio.sleep(0.05)
                await self.moving.wait()
                await asyncio.sleep(THINK_S)
                self.made[match_id] = self.made.get(match_id, 0) + 1
                return rng.choice(turn.legal_moves)

            backoff = Backoff(initial=0.05, maximum=0.5)
            self.runners.append(SeatRunner(self.client, handle, FunctionBot(choose), backoff=backoff))
            launcher = REPO / "clients" / language / "random-bot"
            command = [
                str(launcher),
                "--server",
                self.public,
                "--match",
                match_id,
                "--name",
                f"{language}-bot",
            ]
            self.bots[language] = processes.popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
            )
        self.tasks = [asyncio.create_task(r.run()) for r in self.runners]

    async def play_until(self, moves: int) -> None:
        """Let each Python seat make ``moves`` moves in all, then wait until every match has
        that many of its moves (and the bots' answers to all but the last), each still live."""
        self.cap = moves
        async with ZigguratClient(self.public) as watcher:
            for language, match_id in self.matches.items():
                while True:
                    bot = self.bots[language]
                    if bot.poll() is not None:
                        out = bot.stdout.read() if bot.stdout else ""
                        if bot.returncode == PREBUILT:
                            pytest.fail(f"the {language} bot is not built (scripts/test builds it):\n{out}")
                        raise AssertionError(f"the {language} bot exited ({bot.returncode}) mid-game:\n{out}")
                    try:
                        match = await watcher.get_match(match_id)
                    except ZigguratError as error:  # a worker still starting: asked again
                        if not error.retryable:
                            raise
                        match = None
                    made = self.made.get(match_id, 0)
                    if match is not None and made >= moves and match.view.ply >= 2 * moves - 1:
                        assert match.status == match_pb2.MATCH_STATUS_ACTIVE, (
                            f"{language}: ended before the stop"
                        )
                        break
                    await asyncio.sleep(0.05)

    async def finish(self) -> dict[str, str]:
        """Wait for every seat; each bot's output."""
        self.cap = 10**6
        try:
            await asyncio.wait_for(asyncio.gather(*self.tasks), 240)
        except TimeoutError:
            raise AssertionError(f"not every match finished in 240 s: {await self.state()}") from None
        finally:
            await self.client.close()
        outputs = {}
        for language, bot in self.bots.items():
            out, _ = await asyncio.to_thread(bot.communicate, timeout=120)
            outputs[language] = out
            assert bot.returncode == 0, f"the {language} bot failed:\n{out}"
        return outputs

    async def state(self) -> str:
        """Each match's status, ply and seats, and each bot's exit code and output so far."""
        lines = []
        async with ZigguratClient(self.public) as reader:
            for language, match_id in self.matches.items():
                match = await reader.get_match(match_id)
                seats = [(s.player_name, match_pb2.SeatState.Name(s.state)) for s in match.seats]
                bot = self.bots[language]
                lines.append(
                    f"{language}: {match_pb2.MatchStatus.Name(match.status)} ply {match.view.ply} "
                    f"python moves {self.made.get(match_id, 0)} seats {seats} bot exit {bot.poll()}"
                )
        for language, bot in self.bots.items():
            if bot.poll() is None:
                bot.kill()
            out, _ = bot.communicate(timeout=10)
            lines.append(f"--- {language} bot:\n{out[-3000:]}")
        return "\n".join(lines)

    def stop(self) -> None:
        for bot in self.bots.values():
            processes.stop(bot)


@pytest.mark.timeout(900)
async def test_starter_bots_of_every_language_finish_through_kill9_and_sigterm_restarts(
    tmp_path: Path,
) -> None:
    languages = available_languages()
    if not languages:
        pytest.skip("no client toolchain (go, npm, cargo, mvn) on PATH")
    log = tmp_path / "serve.log"
    first = Workers(tmp_path / "z.db", log=log)
    first.start()
    first.port = int(first.address.rsplit(":", 1)[1])
    servers = [first]
    table = Table(first.address)
    holder: PortTaker | None = None
    try:
        await table.start(languages, first.own)
        await table.play_until(3)
        second, _ = await _restart(table, first, _kill9)
        servers.append(second)
        assert second.own == first.own, "every worker kept its own port"
        await table.play_until(6)
        third, holder = await _restart(table, second, _sigterm, hold=1)
        servers.append(third)
        assert third.own[0] == first.own[0] and third.own[1] != first.own[1], "worker 1 moved"
        await table.finish()
        async with ZigguratClient(third.address) as reader:
            for language, match_id in table.matches.items():
                record = await reader.record(match_id)
                names = {seat.player_name for seat in record.seats}
                assert names == {f"{language}-bot", f"python-{language}"}, names
                assert record.outcome.termination in PLAYED_OUT, f"{language}: {record.outcome}"
                assert not any(m.substituted for m in record.moves), f"{language}: a move not the bots' own"
        for language, match_id in table.matches.items():
            verify = processes.run(
                [*CLI, "verify", match_id, "--server", third.address],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert verify.returncode == 0, f"{language}: {verify.stdout}{verify.stderr}"
    finally:
        table.stop()
        if holder is not None:
            holder.close()
        for server in servers:
            server.stop()
