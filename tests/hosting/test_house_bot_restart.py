"""A built-in (house) bot plays on after a server restart: the bot is named in the log
(``SeatJoined.house_bot``) and ``ziggurat serve`` seats it again at start-up.

A person plays a Pylos match through the Python client (``SeatRunner``, which resumes with
the seat token) against a bot the server launched with AddBot. The server is stopped with
SIGTERM, then with kill -9, and started again on the same database and port each time; the
match must finish, with moves of the bot's seat after each restart, and verify. The match is
untimed, so a bot that is not restored leaves it hanging instead of losing on time.
"""

from __future__ import annotations

import asyncio
import random
import sys
import threading
import time
from pathlib import Path

import pytest

from tests import processes
from tests.servers import ServerProcess, free_port, match_when_back
from ziggurat_client import game_config
from ziggurat_client.bot import Turn
from ziggurat_client.client import MatchHandle, ZigguratClient
from ziggurat_client.runner import SeatRunner
from ziggurat_client.sync import SyncClient
from ziggurat_client.v1 import match_pb2


class Person:
    """Plays a random legal move after a short think (so that restarts land mid-game)."""

    name = "person"

    def __init__(self) -> None:
        self.rng = random.Random(7)

    def choose(self, turn: Turn) -> str:
        time.sleep(0.2)
        return self.rng.choice(turn.legal_moves)


def _plays(address: str, handle: MatchHandle, ended: list[match_pb2.MatchEndedEvent]) -> threading.Thread:
    """The person's seat, played by the Python client's SeatRunner in a thread of its own."""

    async def play() -> None:
        async with ZigguratClient(address) as client:
            ended.append(await SeatRunner(client, handle, Person()).run())

    thread = threading.Thread(target=asyncio.run, args=(play(),), daemon=True)
    thread.start()
    return thread


def _ply(client: SyncClient, match_id: str) -> int:
    """Plies played so far. Pylos seats alternate, so two more plies include a move of the bot."""
    return int(match_when_back(client, match_id).view.ply)


def _wait_two_plies(client: SyncClient, match_id: str, why: str) -> None:
    start = _ply(client, match_id)
    deadline = time.monotonic() + 60
    while _ply(client, match_id) < start + 2:
        status = match_when_back(client, match_id).status
        assert status != match_pb2.MATCH_STATUS_FINISHED, f"the game ended too soon ({why})"
        assert time.monotonic() < deadline, f"the bot stopped playing ({why})"
        time.sleep(0.1)


@pytest.mark.slow
def test_a_match_against_a_built_in_bot_finishes_across_server_restarts(tmp_path: Path) -> None:
    port = free_port()
    server = ServerProcess(tmp_path / "z.db", ["--port", str(port), "--no-web"])
    address = server.start()
    ended: list[match_pb2.MatchEndedEvent] = []
    try:
        with SyncClient(address) as client:
            match_id = client.create_match(game_config("pylos")).match_id
            person = client.join(match_id, "person")
            bot_seat = client.add_bot(match_id, "greedy")
            assert {bot_seat, person.seat} == {1, 2}
            thread = _plays(address, person, ended)
            for stop in ("SIGTERM", "kill -9"):
                _wait_two_plies(client, match_id, f"before the {stop}")  # mid-game, the bot playing
                if stop == "SIGTERM":
                    assert server.terminate() == 0
                else:
                    server.kill9()
                server.start()
                _wait_two_plies(client, match_id, f"after the {stop}: the bot was not restored")
            thread.join(120)
            assert not thread.is_alive(), "the match did not finish"
            final = match_when_back(client, match_id)
            assert final.status == match_pb2.MATCH_STATUS_FINISHED
            seats = {seat.seat: seat for seat in final.seats}
            assert seats[bot_seat].player_name == "greedy (bot)"
            forfeits = {match_pb2.SEAT_STATE_TIMED_OUT, match_pb2.SEAT_STATE_RESIGNED}
            assert seats[bot_seat].state not in forfeits | {match_pb2.SEAT_STATE_ILLEGAL_MOVES}
        assert ended and ended[0].outcome.ranks
        verify = processes.run(
            [sys.executable, "-m", "ziggurat.cli.main", "verify", match_id, "--server", address],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert verify.returncode == 0, verify.stdout + verify.stderr
    finally:
        server.stop()
