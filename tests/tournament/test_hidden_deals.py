"""Duplicate Kabaleo deals keep their secrets: no rotation's objective, unheld colour, outcome or
seed is readable before the deal's last rotation has ended, whatever a participant asks, on
every listener of the tournament's server.

Two snoops at once, checked on the fields that hold the secrets (not on the status alone):

* a participant — a per-game program in the sandbox (fixtures/snoop_bot.py) — that before each
  of its moves calls everything it can reach through the socket it is handed and the TCP port
  (unreachable from the sandbox), and reports any secret of a match that is not finished or of
  a rotation of its own deal while it still plays it;
* the test itself, outside, as fast as it can on the gRPC port and the web port (Connect):
  every match it can find (ListMatches, the live page's GetTournament), each read with GetMatch,
  WatchMatch and GetMatchRecord; whenever an answer shows a secret of a match, every rotation of
  that match's deal must be finished at that moment (the server's own state says so).
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from typing import Any

import grpc
import pytest
from connectrpc.client import ConnectClient
from connectrpc.compat import google_protobuf_json_codec
from connectrpc.errors import ConnectError

from tests.tournament.fixtures.harness import FIXTURES, PYTHON, make_runner, toml_list, write_config
from ziggurat.tournament.runner import TournamentRunner
from ziggurat.v1 import match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as sgrpc
from ziggurat.v1 import tournament_service_pb2 as tpb
from ziggurat.v1 import tournament_service_pb2_grpc as tgrpc
from ziggurat.web.connect import method_infos

MATCH_METHODS = method_infos()
TOURNAMENT_METHODS = method_infos(tpb.DESCRIPTOR.services_by_name["TournamentService"])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _config(port: int, http_port: int) -> str:
    snoop = toml_list([PYTHON, str(FIXTURES / "snoop_bot.py")])
    return f"""
name = "hidden-deals"
seed = "hidden-deals"
game = "kabaleo"
seats = 3
duplicate = true
rounds = 2
concurrency = 1

[server]
listen = "127.0.0.1:{port}"
http_port = {http_port}

[time_control]
per_move_ms = 10000
on_timeout = "random_move"

[[participants]]
name = "snoop"
command = {snoop}
env = {{ SNOOP_TARGETS = "127.0.0.1:{port}" }}

[[participants]]
name = "greedy"
builtin = "greedy"

[[participants]]
name = "random"
builtin = "random"
"""


def shown_secrets(match: match_pb2.Match) -> list[str]:
    """What a spectator's ``match`` shows of its end (nothing, for a deal still being played)."""
    view = match.view
    shown = ["revealed_seed"] if match.revealed_seed else []
    shown += ["outcome"] if view.HasField("outcome") else []
    shown += ["unheld"] if any(c != "?" for c in view.kabaleo.unheld) else []
    shown += [f"objective {i}" for i, c in enumerate(view.kabaleo.objectives, 1) if c != "?"]
    return shown


class Outsider:
    """Reads every match of the tournament on the gRPC port and the web port, over and over."""

    def __init__(self, runner: TournamentRunner, address: str, base: str) -> None:
        self.runner = runner
        self.channel = grpc.aio.insecure_channel(address)
        self.matches = sgrpc.MatchServiceStub(self.channel)
        self.tournaments = tgrpc.TournamentServiceStub(self.channel)
        self.web = ConnectClient(base, codec=google_protobuf_json_codec())
        self.known: set[str] = set()
        self.violations: list[str] = []
        self.calls = 0
        self.released_seen = 0  # answers that did show a secret, of a released deal: the control

    def check(self, match_id: str, shown: list[str], how: str) -> None:
        """``how`` showed ``shown`` of ``match_id``: every rotation of its deal must be over now."""
        if not shown:
            return
        server = self.runner.server
        assert server is not None
        rows = self.runner.store.games(self.runner.tournament_id)
        deals = [row.spec["deal"] for row in rows if row.match_id == match_id]
        if not deals:  # not a game of the schedule: a preflight's throwaway match, aborted unplayed
            return
        deal = deals[0]
        unfinished = [
            row.match_id
            for row in rows
            if row.spec["deal"] == deal
            and row.match_id
            and server.manager.get(row.match_id).status != "finished"
        ]
        if unfinished:
            self.violations.append(f"{how} showed {shown} of {match_id} while {unfinished} are played")
        else:
            self.released_seen += 1

    async def web_call(self, methods: dict[str, Any], name: str, request: Any) -> Any:
        self.calls += 1
        try:
            return await self.web.execute_unary(request=request, method=methods[name])
        except ConnectError:
            return None

    async def grpc_call(self, method: Any, request: Any) -> Any:
        self.calls += 1
        try:
            return await method(request, timeout=5)
        except grpc.aio.AioRpcError:
            return None

    async def round(self) -> None:
        tournament_id = self.runner.tournament_id
        request = tpb.GetTournamentRequest(tournament_id=tournament_id)
        for got in (
            await self.grpc_call(self.tournaments.GetTournament, request),
            await self.web_call(TOURNAMENT_METHODS, "GetTournament", request),
        ):
            for game in got.tournament.games if got is not None else ():
                if game.match_id:
                    self.known.add(game.match_id)
                    self.check(game.match_id, ["ranks"] if game.ranks else [], "GetTournament")
        listing = spb.ListMatchesRequest(page_size=1000)
        for listed in (
            await self.grpc_call(self.matches.ListMatches, listing),
            await self.web_call(MATCH_METHODS, "ListMatches", listing),
        ):
            for match in listed.matches if listed is not None else ():
                self.known.add(match.match_id)
                self.check(match.match_id, shown_secrets(match), "ListMatches")
        for match_id in sorted(self.known):
            get = spb.GetMatchRequest(match_id=match_id)
            for got in (
                await self.grpc_call(self.matches.GetMatch, get),
                await self.web_call(MATCH_METHODS, "GetMatch", get),
            ):
                if got is not None:
                    self.check(match_id, shown_secrets(got.match), "GetMatch")
            record = spb.GetMatchRecordRequest(match_id=match_id)
            got_record = await self.grpc_call(self.matches.GetMatchRecord, record)
            if got_record is not None:
                self.check(match_id, ["record"], "GetMatchRecord")
            await self.watch(match_id)

    async def watch(self, match_id: str) -> None:
        self.calls += 1
        call = self.matches.WatchMatch(spb.WatchMatchRequest(match_id=match_id))
        try:
            async with asyncio.timeout(0.2):
                async for response in call:
                    for event in response.events:
                        kind = event.WhichOneof("kind")
                        if kind == "match_ended":
                            self.check(match_id, ["match_ended"], "WatchMatch")
                        elif kind == "move_played":
                            view = match_pb2.Match(view=event.move_played.view)
                            self.check(match_id, shown_secrets(view), "WatchMatch move_played")
        except (TimeoutError, grpc.aio.AioRpcError):
            pass
        finally:
            call.cancel()

    async def close(self) -> None:
        await self.web.close()
        await self.channel.close()


@pytest.mark.slow
async def test_no_participant_reads_a_deal_before_its_last_rotation_ends(tmp_path: Path) -> None:
    port, http_port = _free_port(), _free_port()
    runner = make_runner(write_config(tmp_path, _config(port, http_port)), tmp_path / "t.db", page_linger=0)
    task = asyncio.create_task(runner.run())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 20
    while runner.address is None:
        assert not task.done() and loop.time() < deadline
        await asyncio.sleep(0.02)
    outsider = Outsider(runner, f"127.0.0.1:{port}", f"http://127.0.0.1:{http_port}")
    try:
        while not task.done():
            await outsider.round()
        assert task.result() == "completed"
        await outsider.round()  # once more, everything released
    finally:
        await outsider.close()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    assert outsider.violations == []
    assert outsider.calls > 200 and outsider.released_seen > 20, "the outsider could have seen a leak"
    logs = sorted(runner.log_dir.glob("*-seat*.log"))
    snoops = [path.read_text() for path in logs]
    summaries = [line for text in snoops for line in text.splitlines() if line.startswith("SNOOP ")]
    assert len(summaries) == 6, logs  # one snoop per game, each ran to its end
    assert [line for text in snoops for line in text.splitlines() if line.startswith("LEAK")] == []
    assert sum(int(line.split("calls=")[1].split()[0]) for line in summaries) > 500
