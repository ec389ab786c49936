"""The standing arena's acceptance test (issue 23): bots in every language, coming and going.

A real ``ziggurat arena run`` subprocess on a Pylos ladder, with eight entrants that all
connect by themselves (remote bots, under credentials issued by ``ziggurat arena token``):
the starter bot of each official client, each started by the very command its README's
"Enter a standing arena" section gives (the block marked ``<!-- arena-test: entrant -->``;
Python's ``arenabot.py`` is that README's block too), and the built-in levels random, greedy
and mcts (``ziggurat bot LEVEL --remote``). For a while entrants leave (their process is
killed, often in the middle of a game) and come back (started again), at random. Then the
arena is stopped with SIGTERM and what it kept is checked, from its database, its
``standings --json`` and ``export``, and a plain ``ziggurat serve`` on the same file:

* every rated game's match verifies (``verify_record`` on each record; ``ziggurat verify``
  on the games an entrant abandoned);
* no game is counted twice: ``rated_order`` runs 1..N, each match once;
* no entrant was paired while it was away: no game started while one of its seats' processes
  was down (a second of slack after the kill, for the server to see the connection close);
* a game an entrant abandoned by dying is rated, and it ranks last there (or, when more
  seats died, one of them does);
* the ladder orders the built-in levels: random < greedy < mcts (displayed ratings).

The built-in levels random and greedy are killed only between their games, and mcts not at
all: a game a level abandons counts as its loss and blurs the order this test asserts (and
"between games" is a race the test can lose: the arena seats a free bot within a pairing
round, so one is sometimes seated just as it is killed, and loses). The starter bots are
killed at any time, mostly in the middle of a game. The bots are built before the tests by
scripts/test (tests/clients/test_polyglot_table.py); a language whose toolchain is missing is
left out, as there. Each run prints its chaos seed (``ZIGGURAT_ARENA_SEED`` replays it).
About 70 s on a 2-core machine: one minute of chaos (about 130 rated games, each entrant
killed once or twice), then the checks. The chaos's length is the test's cost: mcts searches
through every turn of its games whatever its budget a move, about 0.75 of a core for as long
as the arena runs (two minutes of chaos cost 140 CPU s, most of it in mcts's workers).
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests import processes
from tests.clients.test_polyglot_table import PREBUILT, REPO, available_languages
from tests.servers import ServerProcess
from ziggurat.arena.store import ArenaStore
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as sgrpc
from ziggurat.verify import verify_record

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "ziggurat.cli.main"]
CHAOS_SECONDS = 60.0
LEVELS = ("random", "greedy", "mcts")  # weakest first
LEVEL_OPTIONS = {"mcts": ["--bot-option", "max_seconds=0.1"]}
GAMES_AT_ONCE = 2  # per entrant
SLACK_MS = 1000  # after a kill, how long the server may take to see the connection close
DOCUMENTED_ADDRESS = "arena.example.org:50051"
ENTRANT_MARKER = re.compile(r"<!-- arena-test: entrant -->\n( *)```sh\n(.*?)^\1```", re.M | re.S)
SCRIPT_MARKER = re.compile(r"<!-- arena-test: (\S+\.py) -->\n( *)```python\n(.*?)^\2```", re.M | re.S)


def readme_command(language: str) -> tuple[str, dict[str, str]]:
    """The README's command that runs the language's starter bot in an arena, and the files
    it needs beside it (Python's ``arenabot.py``)."""
    text = (REPO / "clients" / language / "README.md").read_text()
    found = ENTRANT_MARKER.findall(text)
    assert len(found) == 1, f"clients/{language}/README.md: one block marked <!-- arena-test: entrant -->"
    lines = [line.strip() for line in found[0][1].splitlines() if line.strip()]
    assert len(lines) == 1, lines
    files = {name: textwrap.dedent(body) for name, _, body in SCRIPT_MARKER.findall(text)}
    return lines[0], files


@dataclass
class Entrant:
    """One entrant's bot process, started and killed at will, with the times it was down."""

    name: str
    argv: list[str]
    cwd: Path
    env: dict[str, str]
    log: Path
    builtin: bool
    process: subprocess.Popen[bytes] | None = None
    down: list[tuple[int, int]] = field(default_factory=list)  # (killed, started again), Unix ms
    killed_at: int | None = None
    kills: list[int] = field(default_factory=list)

    def start(self) -> None:
        if self.killed_at is not None:
            self.down.append((self.killed_at, now_ms()))
            self.killed_at = None
        with self.log.open("ab") as out:
            out.write(f"--- started at {now_ms()}\n".encode())
            out.flush()
            self.process = processes.popen(
                self.argv, cwd=self.cwd, env=self.env, stdout=out, stderr=subprocess.STDOUT
            )

    def kill(self) -> None:
        assert self.process is not None
        self.killed_at = now_ms()  # before the kill: the window is never too short
        self.kills.append(self.killed_at)
        processes.stop(self.process)
        self.process = None

    def check_alive(self) -> None:
        """A bot that exits on its own (a refused token, a missing build) fails the test."""
        if self.process is not None and self.process.poll() is not None:
            code = self.process.returncode
            output = self.log.read_text(errors="replace")[-3000:]
            if code == PREBUILT:
                pytest.fail(f"the {self.name} bot is not built (scripts/test builds it):\n{output}")
            raise AssertionError(f"the {self.name} bot exited ({code}) by itself:\n{output}")


def now_ms() -> int:
    return int(time.time() * 1000)


def issue_token(name: str) -> tuple[str, str]:
    """``ziggurat arena token NAME``, as an operator runs it: the token and its [[entrant]] lines."""
    done = processes.run([*CLI, "arena", "token", name], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    # the token once on standard error, the lines for the arena's file on standard output
    token = done.stderr.strip().rsplit(" ", 1)[1]
    assert f"{name}'s token" in done.stderr and token not in done.stdout, done.stderr
    entrant = [line for line in done.stdout.splitlines() if line]
    assert entrant[0] == "[[entrant]]" and entrant[1] == f'name = "{name}"', done.stdout
    return token, "\n".join(entrant)


def arena_toml(entrant_lines: list[str]) -> str:
    return (
        textwrap.dedent(
            f"""\
        name = "polyglot"
        database = "arena.db"

        [server]
        listen = "127.0.0.1:0"

        [[ladder]]
        game = "pylos"

        [time_control]
        base_ms = 20000
        increment_ms = 100
        disconnect_grace_ms = 3000

        [pairing]
        # two at once: about 130 rated games in the minute, plenty for the order of the levels
        # (mcts about 2,450, greedy 1,950, random 1,400); four at once cost twice the CPU
        max_games = 2
        games_per_entrant = {GAMES_AT_ONCE}
        interval_seconds = 0.2
        stop_grace_seconds = 5
        """
        )
        + "\n"
        + "\n\n".join(entrant_lines)
        + "\n"
    )


def wait_for_address(log: Path, arena: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"arena 'polyglot': server (\S+)", log.read_text(errors="replace"))
        if found:
            return found.group(1)
        assert arena.poll() is None, log.read_text(errors="replace")
        time.sleep(0.1)
    raise AssertionError(f"the arena did not start in 60 s:\n{log.read_text(errors='replace')}")


def playing(store: ArenaStore, started_before_ms: int | None = None) -> set[str]:
    """The entrants in a game now (in one that started before ``started_before_ms``)."""
    rows = store.games(status="playing")
    return {
        line
        for row in rows
        if started_before_ms is None or row.start_ms < started_before_ms
        for line in row.seats
    }


def chaos(entrants: dict[str, Entrant], store: ArenaStore, seconds: float, rng: random.Random) -> None:
    """Entrants leave and come back at random for ``seconds``; all are up at the end."""
    up_until = {name: time.monotonic() + rng.uniform(15, 30) for name in entrants}
    down_until: dict[str, float] = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        now = time.monotonic()
        for entrant in entrants.values():
            entrant.check_alive()
        for name in [n for n, t in down_until.items() if now >= t]:
            del down_until[name]
            entrants[name].start()
            up_until[name] = now + rng.uniform(8, 25)
        seated, established = playing(store), playing(store, now_ms() - 1500)
        for name, until in list(up_until.items()):
            entrant = entrants[name]
            if now < until or name in down_until:
                continue
            if entrant.builtin and (name in seated or name == LEVELS[-1]):
                continue  # a level leaves between its games only, the top one never (docstring)
            if not entrant.builtin and name not in established and rng.random() < 0.7:
                continue  # a starter bot leaves mostly in the middle of a game
            del up_until[name]
            entrant.kill()
            down_until[name] = now + rng.uniform(1.5, 8)
        time.sleep(0.1)
    for name in list(down_until):
        entrants[name].start()


def rated_games(config: Path) -> list[dict[str, Any]]:
    done = processes.run(
        [*CLI, "arena", "export", str(config), "games"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.timeout(420)
def test_bots_of_every_language_and_the_levels_in_a_standing_arena(tmp_path: Path) -> None:
    languages = [*available_languages(), "python"]
    tokens: dict[str, str] = {}
    declared: list[str] = []
    for name in [*languages, *LEVELS]:
        tokens[name], lines = issue_token(name)
        declared.append(lines)
    config = tmp_path / "arena.toml"
    config.write_text(arena_toml(declared))
    arena_log = tmp_path / "arena.log"
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    env = {**os.environ, "PATH": path, "PYTHONUNBUFFERED": "1", "ZIGGURAT_STARTER_BOT_PREBUILT": "1"}
    with arena_log.open("wb") as out:
        arena = processes.popen(
            [*CLI, "arena", "run", str(config), "--log-level", "info"],
            cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    entrants: dict[str, Entrant] = {}
    server: ServerProcess | None = None
    try:
        address = wait_for_address(arena_log, arena)
        for language in languages:
            command, files = readme_command(language)
            for file_name, body in files.items():
                (tmp_path / file_name).write_text(body)
            command = command.replace(DOCUMENTED_ADDRESS, address).replace(
                "bot-venv/bin/python", sys.executable
            )
            command = re.sub(r"\bTOKEN\b", tokens[language], re.sub(r"\bNAME\b", language, command))
            cwd = tmp_path if files else REPO
            entrants[language] = Entrant(
                language, ["bash", "-c", command], cwd, env, tmp_path / f"{language}.log", builtin=False
            )
        for level in LEVELS:
            argv = [*CLI, "bot", level, "--remote", "--server", address, "--name", level]
            argv += ["--max-matches", str(GAMES_AT_ONCE), *LEVEL_OPTIONS.get(level, [])]
            level_env = {**env, "ZIGGURAT_BOT_TOKEN": tokens[level]}
            entrants[level] = Entrant(
                level, argv, tmp_path, level_env, tmp_path / f"{level}.log", builtin=True
            )
        for entrant in entrants.values():
            entrant.start()
        started = time.monotonic()
        seed = int(os.environ.get("ZIGGURAT_ARENA_SEED") or random.randrange(2**32))
        print(f"chaos seed {seed} (ZIGGURAT_ARENA_SEED={seed} plays the same comings and goings)")
        store = ArenaStore(tmp_path / "arena.db", readonly=True)
        try:
            chaos(entrants, store, CHAOS_SECONDS, random.Random(seed))
        finally:
            store.close()
        chaos_end_ms = now_ms()
        kills = sum(len(e.kills) for e in entrants.values())
        print(f"chaos over after {time.monotonic() - started:.0f} s: {kills} kills")
        for entrant in entrants.values():
            entrant.check_alive()
        arena.send_signal(signal.SIGTERM)
        assert arena.wait(60) == 0, arena_log.read_text(errors="replace")[-5000:]
        for entrant in entrants.values():  # (one started a moment ago may have found no server)
            if entrant.process is not None:
                entrant.kill()

        standings = json.loads(
            processes.run(
                [*CLI, "arena", "standings", str(config), "--json"],
                capture_output=True,
                text=True,
                timeout=60,
            ).stdout
        )
        rows = {row["line"]: row for row in standings["ladders"][0]["standings"]}
        print(json.dumps(rows, indent=1))
        games = rated_games(config)
        rated = sorted((g for g in games if g["status"] == "rated"), key=lambda g: g["rated_order"])
        print(f"{len(rated)} rated games, {sum(g['status'] == 'void' for g in games)} void")

        # No game counted twice: rated_order is 1..N, each match once, as the ladder says.
        assert [g["rated_order"] for g in rated] == list(range(1, len(rated) + 1))
        assert len({g["match_id"] for g in rated}) == len(rated)
        assert standings["games_rated"] == len(rated)
        assert sum(row["games"] for row in rows.values()) == 2 * len(rated)
        assert not any(g["status"] == "playing" for g in games), "every game rated or void at the stop"

        # No entrant paired while away; each paired again once back.
        for entrant in entrants.values():
            starts = [game["start_ms"] for game in games if entrant.name in game["seats"]]
            for killed, back in entrant.down:
                away = [start for start in starts if killed + SLACK_MS < start < back]
                assert not away, f"{entrant.name} was seated at {away}, while away ({killed}..{back})"
            for _, back in entrant.down:
                if back < chaos_end_ms - 10_000:  # (not one started again as the chaos ended)
                    assert max(starts) > back, f"{entrant.name} was not paired after coming back at {back}"

        # A game abandoned by dying mid-game is rated, and a dead seat ranks last: the one that
        # died, or one of those that died when more did (whichever the clock caught first).
        abandoned: list[dict[str, Any]] = []
        for game in rated:
            dead = {
                seat
                for seat, line in enumerate(game["seats"])
                for killed in entrants[line].kills
                if game["start_ms"] < killed + SLACK_MS < game["end_ms"]
            }
            if dead:
                abandoned.append(game)
                ranks = game["ranks"]
                last = [seat for seat, rank in enumerate(ranks) if rank == max(ranks)]
                assert set(last) <= dead and (len(dead) > 1 or len(last) == 1), (game, dead)
        print(f"{len(abandoned)} games abandoned mid-game by a killed entrant")
        assert abandoned, "the chaos killed no entrant in the middle of a game"

        # The ladder orders the levels.
        ratings = [rows[level]["rating"] for level in LEVELS]
        assert ratings == sorted(ratings) and len(set(ratings)) == 3, {level: rows[level] for level in LEVELS}

        print(f"checked the ladder {time.monotonic() - started:.0f} s after the start")
        # Every rated game's match verifies, read back by a plain server on the arena's file.
        server = ServerProcess(tmp_path / "arena.db", ["--no-web"])
        server_address = server.start()
        with grpc.insecure_channel(server_address) as channel:
            stub = sgrpc.MatchServiceStub(channel)
            for game in rated:
                record = stub.GetMatchRecord(spb.GetMatchRecordRequest(match_id=game["match_id"])).record
                verdict = verify_record(record)
                assert verdict.ok, f"game {game['number']} ({game['match_id']}): {verdict.problem}"
                assert [s.player_name for s in record.seats] == game["seats"]
                assert list(record.outcome.ranks) == game["ranks"]
        for game in abandoned[:3]:
            verified = processes.run(
                [*CLI, "verify", game["match_id"], "--server", server_address],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
            assert verified.returncode == 0, verified.stdout + verified.stderr
        print(f"verified {len(rated)} matches {time.monotonic() - started:.0f} s after the start")
    finally:
        for entrant in entrants.values():
            if entrant.process is not None:
                processes.stop(entrant.process)
        processes.stop(arena)
        if server is not None:
            server.stop()
