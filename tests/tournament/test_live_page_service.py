"""TournamentService, the live tournament page's source: a real tournament with its own server and
web port, read over gRPC and over Connect while it runs and after it ends; a duplicate Kabaleo
tournament read as fast as a page could, which never shows a deal's results before the deal's
reveal nor any seed or secret."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from pathlib import Path

import grpc
import pytest
from connectrpc.client import ConnectClient
from connectrpc.code import Code
from connectrpc.compat import google_protobuf_binary_codec
from connectrpc.errors import ConnectError
from google.rpc import error_details_pb2

from tests.tournament.fixtures.harness import (
    FIXTURES,
    PYTHON,
    make_runner,
    stored_games,
    toml_list,
    wait_for_address,
    write_config,
)
from ziggurat.tournament.runner import TournamentRunner
from ziggurat.tournament.servicer import TournamentServicer
from ziggurat.v1 import match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import tournament_service_pb2 as tpb
from ziggurat.v1 import tournament_service_pb2_grpc as tgrpc
from ziggurat.web.connect import method_infos

SERVICE = tpb.DESCRIPTOR.services_by_name["TournamentService"]
METHODS = method_infos(SERVICE)

PYLOS = """
name = "live-pylos"
seed = "live-pylos"
game = "pylos"
concurrency = 1

[server]
http_port = 0

[[participants]]
name = "random"
builtin = "random"

[[participants]]
name = "greedy"
builtin = "greedy"

# thinks a little on every move, so that a game is still in progress when the page is read
# (random and greedy alone finish a game in a few milliseconds on an idle machine)
[[participants]]
name = "thinker"
builtin = "alphabeta"
options = { max_seconds = 0.02 }
"""

KABALEO = f"""
name = "live-deals"
seed = "live-deals"
game = "kabaleo"
seats = 3
duplicate = true
rounds = 2
concurrency = 1

[server]
http_port = 0

# a per-game program (duplicate deals take no participant that could remember a rotation)
[[participants]]
name = "slow"
command = {toml_list([PYTHON, str(FIXTURES / "grpc_bot.py"), "slow-move:0.15"])}

[[participants]]
name = "greedy"
builtin = "greedy"

[[participants]]
name = "random2"
builtin = "random"
"""


async def _started(runner: TournamentRunner, task: asyncio.Task[str]) -> tuple[str, str]:
    """The gRPC address and the web base URL of the tournament's server once it serves."""
    address = await wait_for_address(runner)
    assert runner.server is not None and runner.server.http_port, "the live page is served"
    assert not task.done()
    return address, f"http://127.0.0.1:{runner.server.http_port}"


def _reason(error: ConnectError) -> str:
    for detail in error.details:
        if detail.type_name == "google.rpc.ErrorInfo":
            return str(error_details_pb2.ErrorInfo.FromString(detail.message_bytes).reason)
    raise AssertionError(f"no reason in {error!r}")


@pytest.mark.slow
async def test_a_running_tournament_is_served_over_grpc_and_connect(tmp_path: Path) -> None:
    runner = make_runner(write_config(tmp_path, PYLOS), tmp_path / "t.db", page_linger=60)
    task = asyncio.create_task(runner.run())
    web = None
    channel = None
    try:
        address, base = await _started(runner, task)
        assert runner.page_url == f"{base}/#/tournament/{runner.tournament_id}"
        web = ConnectClient(base, codec=google_protobuf_binary_codec())
        channel = grpc.aio.insecure_channel(address)
        stub = tgrpc.TournamentServiceStub(channel)
        request = tpb.GetTournamentRequest(tournament_id=runner.tournament_id)
        seen_playing = None
        done_counts = []
        while not runner.finished:
            over_connect = (
                await web.execute_unary(request=request, method=METHODS["GetTournament"])
            ).tournament
            over_grpc = (await stub.GetTournament(request)).tournament
            assert over_connect.tournament_id == over_grpc.tournament_id == runner.tournament_id
            if over_connect.status == tpb.TOURNAMENT_STATUS_FINISHED:
                break  # the store records the end a moment before the runner says so
            assert over_connect.status == tpb.TOURNAMENT_STATUS_RUNNING
            done_counts.append(over_connect.games_done)
            playing = [g for g in over_connect.games if g.status == tpb.TOURNAMENT_GAME_STATUS_PLAYING]
            if playing and seen_playing is None:
                seen_playing = playing[0]
                # A game in progress links to its match, which the same server lets anyone watch.
                assert seen_playing.match_id and not seen_playing.ranks
                match = runner.server.manager.get(seen_playing.match_id) if runner.server else None
                # seats are named as the tournament's bots play (``ID/name`` for what it launches)
                assert match is not None
                assert [n.split("/")[-1] for n in match.names] == list(seen_playing.seats)
            await asyncio.sleep(0.05)
        assert seen_playing is not None, "a game in progress was seen"
        assert done_counts == sorted(done_counts) and done_counts[-1] < 6, (
            "standings filled in as games ended"
        )
        # After the end the page stays up with the final standings.
        final = (await stub.GetTournament(request)).tournament
        if final.status != tpb.TOURNAMENT_STATUS_FINISHED:  # the cached answer is at most 0.5 s old
            await asyncio.sleep(0.6)
            final = (await stub.GetTournament(request)).tournament
        assert final.status == tpb.TOURNAMENT_STATUS_FINISHED and final.stop_reason == "completed"
        assert (final.games_done, final.games_total) == (6, 6)
        assert [g.status for g in final.games] == [tpb.TOURNAMENT_GAME_STATUS_FINISHED] * 6
        assert sum(s.points for s in final.standings) == 6  # one point per two-seat game
        assert [s.rank for s in final.standings] == [1, 2, 3]
        assert {s.participant: s.games for s in final.standings} == {"random": 4, "greedy": 4, "thinker": 4}
        # The crosstable agrees with the games: a's points against b + b's against a = their games.
        cells = {
            (row.participant, c.opponent): (c.points, c.games) for row in final.crosstable for c in row.cells
        }
        for (a, b), (points, games) in cells.items():
            assert games == 2 and points + cells[b, a][0] == games
        for game in final.games:
            assert sorted(game.ranks) == [1, 2] or list(game.ranks) == [1, 1]
            assert runner.server is not None
            outcome = runner.server.manager.get(game.match_id).outcome()
            assert outcome is not None and list(outcome.ranks) == list(game.ranks)
        listed = await stub.ListTournaments(tpb.ListTournamentsRequest())
        assert [t.tournament_id for t in listed.tournaments] == [runner.tournament_id]
        # An unknown id: NOT_FOUND with its reason, on both transports.
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.GetTournament(tpb.GetTournamentRequest(tournament_id="nope"))
        assert refused.value.code() == grpc.StatusCode.NOT_FOUND
        with pytest.raises(ConnectError) as connect_refused:
            await web.execute_unary(
                request=tpb.GetTournamentRequest(tournament_id="nope"), method=METHODS["GetTournament"]
            )
        assert (connect_refused.value.code, _reason(connect_refused.value)) == (
            Code.NOT_FOUND,
            "TOURNAMENT_NOT_FOUND",
        )
        # The tournament's matches are spectated through the ordinary MatchService, over Connect too.
        watched = await web.execute_unary(
            request=spb.GetMatchRequest(match_id=final.games[0].match_id),
            method=method_infos()["GetMatch"],
        )
        assert watched.match.status == match_pb2.MATCH_STATUS_FINISHED
    finally:
        if web is not None:
            await web.close()
        if channel is not None:
            await channel.close(None)
        task.cancel()  # ends the page's linger
        await asyncio.gather(task, return_exceptions=True)
    assert runner.finished


@pytest.mark.slow
async def test_the_page_never_shows_a_deal_before_its_reveal_nor_any_seed(tmp_path: Path) -> None:
    runner = make_runner(write_config(tmp_path, KABALEO), tmp_path / "t.db", page_linger=30)
    task = asyncio.create_task(runner.run())
    web = None
    snapshots: list[bytes] = []
    try:
        _, base = await _started(runner, task)
        web = ConnectClient(base, codec=google_protobuf_binary_codec())
        request = tpb.GetTournamentRequest(tournament_id=runner.tournament_id)
        read_after_the_end = 0
        while read_after_the_end < 2:  # a page polls all along, and once more after the end
            answer = await web.execute_unary(request=request, method=METHODS["GetTournament"])
            snapshots.append(answer.tournament.SerializeToString())
            if runner.finished:
                read_after_the_end += 1
                await asyncio.sleep(0.6)  # past the shared answer's lifetime
            else:
                await asyncio.sleep(0.01)
    finally:
        if web is not None:
            await web.close()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert runner.finished
    games = stored_games(tmp_path / "t.db", runner.tournament_id)
    deal_of = {g.index: g.spec["deal"] for g in games}
    assert len(set(deal_of.values())) == 2 and len(games) == 6
    assert all("slow" in g.spec["seats"] for g in games)
    secrets = [runner.secret, runner.secret.hex().encode()]
    for game in games:
        seed = bytes.fromhex(game.spec["seed"])
        secrets += [seed, seed.hex().encode()]
        secrets += [str(s).encode() for s in game.spec["bot_seeds"] if s]
    finished_deals = set()
    playing_seen = 0
    for data in snapshots:
        for secret in secrets:
            assert secret not in data, "a seed or the organiser's secret reached the page"
        tournament = tpb.Tournament.FromString(data)
        by_deal: dict[int, list[tpb.TournamentGame]] = defaultdict(list)
        for shown_game in tournament.games:
            by_deal[deal_of[shown_game.index]].append(shown_game)
        for deal, rotations in by_deal.items():
            shown = [bool(g.ranks) or g.status == tpb.TOURNAMENT_GAME_STATUS_FINISHED for g in rotations]
            assert all(shown) or not any(shown), f"deal {deal}: a rotation's result before the deal's reveal"
            if all(shown):
                finished_deals.add(deal)
        playing_seen += any(g.status == tpb.TOURNAMENT_GAME_STATUS_PLAYING for g in tournament.games)
        assert sum(s.games for s in tournament.standings) == 3 * tournament.games_done
    # The page was read all along: while deals were played and after each was revealed.
    assert playing_seen > 5 and len(snapshots) > 20
    assert finished_deals == set(deal_of.values())
    last = tpb.Tournament.FromString(snapshots[-1])
    assert last.status == tpb.TOURNAMENT_STATUS_FINISHED and last.games_done == 6


def test_the_servicer_shares_one_answer_between_close_calls(tmp_path: Path) -> None:
    """Many open pages poll: within CACHE_SECONDS they get the same answer, built once."""
    from ziggurat.tournament.config import load_config
    from ziggurat.tournament.store import TournamentStore

    config_path = write_config(tmp_path, PYLOS)
    store = TournamentStore(tmp_path / "t.db")
    try:
        store.create("tid", "live-pylos", str(config_path), config_path.read_text(), b"s" * 32)
        now = [100.0]
        servicer = TournamentServicer(store, "tid", load_config(config_path), clock=lambda: now[0])
        first = servicer.snapshot()
        assert servicer.snapshot() is first
        now[0] += 1.0
        again = servicer.snapshot()
        assert again is not first and again == first
        assert again.status == tpb.TOURNAMENT_STATUS_RUNNING and [s.participant for s in again.standings]
    finally:
        store.close()


def test_a_deal_shows_its_results_only_once_every_rotation_is_recorded(tmp_path: Path) -> None:
    """The rotations of a duplicate deal end together but are recorded one by one: while the
    tournament runs, the page shows none of a deal's results until all are recorded."""
    from ziggurat.tournament.config import load_config
    from ziggurat.tournament.games import forfeit_result
    from ziggurat.tournament.runner import spec_from_dict
    from ziggurat.tournament.store import TournamentStore

    config_path = write_config(tmp_path, KABALEO)
    store = TournamentStore(tmp_path / "t.db")
    names = ["slow", "greedy", "random2"]
    specs = []
    for index in range(6):  # two deals of three rotations (deal = the index of its first game)
        seats = names[index % 3 :] + names[: index % 3]
        specs.append({
            "index": index, "round": 1 + index // 3, "game": "kabaleo", "options": {}, "seats": seats,
            "seed": "00" * 32, "opening": [], "pair": None, "deal": index // 3 * 3, "bot_seeds": [0, 0, 0],
        })  # fmt: skip
    try:
        store.create("tid", "live-deals", str(config_path), config_path.read_text(), b"s" * 32)
        store.add_games("tid", [(s["index"], s["round"], s) for s in specs])
        now = [0.0]
        servicer = TournamentServicer(store, "tid", load_config(config_path), clock=lambda: now[0])

        def shown() -> list[int]:
            now[0] += 1.0  # past the shared answer's lifetime
            return [
                g.index for g in servicer.snapshot().games if g.status == tpb.TOURNAMENT_GAME_STATUS_FINISHED
            ]

        for index in range(6):
            store.start_game("tid", index, f"m{index}")
        for index in (0, 1):
            store.finish_game("tid", index, forfeit_result(spec_from_dict(specs[index])))
            assert shown() == [], "a deal half recorded shows nothing"
        store.finish_game("tid", 2, forfeit_result(spec_from_dict(specs[2])))
        assert shown() == [0, 1, 2]
        assert servicer.snapshot().games_done == 3
        store.finish_game("tid", 3, forfeit_result(spec_from_dict(specs[3])))
        assert shown() == [0, 1, 2]
        store.finish("tid", "interrupted")  # over: every recorded row is shown as it is
        assert shown() == [0, 1, 2, 3]
    finally:
        store.close()
