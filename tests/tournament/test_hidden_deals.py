"""Duplicate Kabaleo deals keep their secrets: no rotation's end is readable before the deal's last
rotation has ended, whatever a participant asks the tournament's server and whatever it remembers.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from tests.tournament.fixtures.harness import make_runner, write_config
from ziggurat.service.match import hash_token
from ziggurat.tournament.runner import TournamentRunner
from ziggurat.v1 import match_pb2
from ziggurat_client.bot import Turn
from ziggurat_client.client import ZigguratClient, ZigguratError
from ziggurat_client.remote import RemoteBot

TOKEN = "snoop-token"
CONFIG = f"""
name = "hidden-deals"
seed = "hidden-deals"
game = "kabaleo"
seats = 3
duplicate = true
concurrency = 2

[time_control]
per_move_ms = 10000
on_timeout = "random_move"

[[participants]]
name = "snoop"
remote = true
token_sha256 = "{hash_token(TOKEN)}"

[[participants]]
name = "random"
builtin = "random"

[[participants]]
name = "greedy"
builtin = "greedy"

[[participants]]
name = "random2"
builtin = "random"
"""


class Snoop:
    """Plays at random; before every move asks the server about every match it has heard of
    (ListMatches, GetMatch, GetMatchRecord, WatchMatch) and remembers every end it sees."""

    def __init__(self, client: ZigguratClient, runner: TournamentRunner) -> None:
        self.client = client
        self.runner = runner
        self.known: set[str] = set()
        self.seen: dict[str, set[str]] = {}  # match id -> the calls that showed its end
        self.violations: list[str] = []
        self.calls = 0

    async def choose(self, turn: Turn) -> str:
        await self.snoop()
        return random.Random(turn.ply).choice(sorted(turn.legal_moves))

    def saw_end(self, match_id: str, how: str) -> None:
        """An end (outcome or seed) of ``match_id`` was readable: every rotation of its deal must be over."""
        self.seen.setdefault(match_id, set()).add(how)
        server, store = self.runner.server, self.runner.store
        assert server is not None
        rows = store.games(self.runner.tournament_id)
        deal = next((r.spec["deal"] for r in rows if r.match_id == match_id), None)
        for row in rows:
            if (
                row.spec["deal"] == deal
                and row.match_id
                and server.manager.get(row.match_id).status != "finished"
            ):
                self.violations.append(f"{how} of {match_id} while {row.match_id} (same deal) is played")

    async def snoop(self) -> None:
        for status in (match_pb2.MATCH_STATUS_UNSPECIFIED, match_pb2.MATCH_STATUS_FINISHED):
            for match in await self.client.list_matches(status):
                self.calls += 1
                self.known.add(match.match_id)
                if match.revealed_seed or match.status == match_pb2.MATCH_STATUS_FINISHED:
                    self.saw_end(match.match_id, "ListMatches")
        for match_id in sorted(self.known):
            self.calls += 3
            match = await self.client.get_match(match_id)
            if match.revealed_seed or match.status == match_pb2.MATCH_STATUS_FINISHED:
                self.saw_end(match_id, "GetMatch")
            try:
                record = await self.client.record(match_id)
            except ZigguratError:
                pass  # no record before the end
            else:
                if record.revealed_seed or record.outcome.ranks:
                    self.saw_end(match_id, "GetMatchRecord")
            try:
                async with asyncio.timeout(0.05):
                    async for event in self.client.watch(match_id):
                        if event.WhichOneof("kind") == "match_ended":
                            self.saw_end(match_id, "WatchMatch")
            except (TimeoutError, ZigguratError):
                pass


async def test_no_participant_reads_a_deal_before_its_last_rotation_ends(tmp_path: Path) -> None:
    runner = make_runner(write_config(tmp_path, CONFIG), tmp_path / "t.db")
    task = asyncio.create_task(runner.run())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    while runner.address is None:
        assert not task.done() and loop.time() < deadline
        await asyncio.sleep(0.02)
    client = ZigguratClient(runner.address)
    snoop = Snoop(client, runner)
    remote = RemoteBot(client, lambda _: snoop, name="snoop", token=TOKEN, max_matches=6)
    playing = asyncio.create_task(remote.run())
    try:
        assert await asyncio.wait_for(task, 240) == "completed"
    finally:
        playing.cancel()
        await asyncio.gather(playing, return_exceptions=True)
        await client.close()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    assert snoop.violations == []
    # the snoop did ask, and did see the ends of earlier deals once they were over: it could have
    # seen a leak, had there been one
    assert snoop.calls > 100 and len(snoop.seen) >= 3
    assert set().union(*snoop.seen.values()) == {"ListMatches", "GetMatch", "GetMatchRecord", "WatchMatch"}
