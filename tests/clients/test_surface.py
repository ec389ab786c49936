"""The thin client's common surface: cancel, watch as a spectator, typed refusals, game configs."""

from __future__ import annotations

import asyncio
import threading

import grpc
import pytest
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2

from tests.servers import RunningServer, ServerProcess
from ziggurat.rules.registry import GAMES
from ziggurat.wire.codec import config_from_proto
from ziggurat_client import RandomBot, Turn, ZigguratClient, ZigguratError, config_strings, game_config
from ziggurat_client.errors import error_info
from ziggurat_client.sync import SyncClient
from ziggurat_client.v1 import match_pb2


@pytest.mark.parametrize(
    ("game", "seats", "options"),
    [
        ("pylos", 2, {}),
        ("pylos", 2, {"variant": "beginner", "max_moves": 40}),
        ("pylos", 2, {"variant": "advanced"}),
        ("kabaleo", 3, {}),
        ("kabaleo", 4, {"deal": "equal", "last_stack": True, "colours": "RGBO"}),
    ],
)
def test_game_configs_read_as_the_server_reads_them(
    game: str, seats: int, options: dict[str, object]
) -> None:
    config = game_config(game, seats, **options)  # type: ignore[arg-type]
    assert config_strings(config) == config_from_proto(config)


def test_unknown_games_and_options_are_refused_early() -> None:
    with pytest.raises(ValueError, match="unknown game"):
        game_config("chess")
    with pytest.raises(ValueError, match="unknown pylos options"):
        game_config("pylos", deal="equal")


async def test_any_game_the_server_lists_is_made_by_name(client: ZigguratClient) -> None:
    hosted = [info.name for info in await client.list_games()]
    assert hosted == list(GAMES)
    phantom = await client.game_config("phantom-ttt")
    match = await client.create_match(phantom)
    assert (match.config.game, match.config.seats) == (phantom.game, 2)
    assert config_strings(match.config) == ("phantom-ttt", 2, {})
    kabaleo = await client.create_match(await client.game_config("kabaleo", 3, {"deal": "equal"}))
    # Read back as the server reads it, whichever message carried the options.
    assert config_strings(kabaleo.config) == ("kabaleo", 3, {"deal": "equal"})
    with pytest.raises(ValueError, match=f'^unknown game "chess": this server hosts {", ".join(GAMES)}$'):
        await client.game_config("chess")
    with pytest.raises(ZigguratError) as refused:
        await client.create_match(await client.game_config("pylos", options={"variant": "giant"}))
    assert refused.value.reason == "INVALID_CONFIG"
    assert [m.match_id for m in await client.list_matches()] == [kabaleo.match_id, match.match_id]


async def test_creator_cancels_a_waiting_match(server: RunningServer, client: ZigguratClient) -> None:
    match = await client.create_match(game_config("pylos"))
    async with ZigguratClient(server.address) as stranger:
        with pytest.raises(ZigguratError) as refused:
            await stranger.cancel_match(match.match_id)  # no creator token
        assert not refused.value.retryable and refused.value.reason
    cancelled = await client.cancel_match(match.match_id)
    assert cancelled.status == match_pb2.MATCH_STATUS_FINISHED
    with pytest.raises(ZigguratError) as late:
        await client.join(match.match_id, "late")
    assert late.value.code == grpc.StatusCode.FAILED_PRECONDITION


async def test_a_spectator_watches_a_match_to_its_end(server: RunningServer, client: ZigguratClient) -> None:
    match = await client.create_match(game_config("kabaleo", 3))
    handles = [await client.join(match.match_id, f"k{i}") for i in range(3)]
    seen: list[match_pb2.Event] = []

    async def watch() -> None:
        async for event in client.watch(match.match_id):
            seen.append(event)

    watcher = asyncio.create_task(watch())
    ended = await asyncio.gather(*(client.play(h, RandomBot(seed=h.seat)) for h in handles))
    await asyncio.wait_for(watcher, 30)
    assert [e.seq for e in seen] == list(range(1, len(seen) + 1))
    assert seen[-1].WhichOneof("kind") == "match_ended"
    assert seen[-1].match_ended.outcome == ended[0].outcome
    # A spectator never sees legal moves (only the seat to move gets them) nor a secret objective.
    moves = [e for e in seen if e.WhichOneof("kind") == "move_played"]
    assert all(not e.turn_started.legal_moves for e in seen if e.WhichOneof("kind") == "turn_started")
    hidden = [set(e.move_played.view.kabaleo.objectives) <= {"?"} for e in moves]
    assert all(hidden[:-1]), hidden  # the move that ends the game shows the final, revealed position


async def test_refusals_carry_the_servers_reason(server: RunningServer, client: ZigguratClient) -> None:
    match = await client.create_match(game_config("pylos"))
    handles = {h.seat: h for h in [await client.join(match.match_id, f"p{i}") for i in range(2)]}
    cases = [
        (client.submit_move(handles[2], "1a1"), "NOT_YOUR_TURN"),
        (client.submit_move(handles[1], "9z9"), "MALFORMED_MOVE"),
        (client.submit_move(handles[1], "1a1", ply=3), "STALE_PLY"),
        (client.get_match("no-such-match"), "MATCH_NOT_FOUND"),
    ]
    for call, reason in cases:
        with pytest.raises(ZigguratError) as refused:
            await call
        assert refused.value.reason == reason
        assert refused.value.message and not refused.value.retryable


def test_error_info_is_read_from_the_status_trailer() -> None:
    # googleapis' own classes (a server-side dependency) build the trailer the client decodes.
    detail = any_pb2.Any()
    detail.Pack(
        error_details_pb2.ErrorInfo(reason="NOT_YOUR_TURN", domain="ziggurat", metadata={"seat": "2"})
    )
    status = status_pb2.Status(code=9, message="m", details=[detail])
    trailer = [("other", "x"), ("grpc-status-details-bin", status.SerializeToString())]
    assert error_info(trailer) == ("NOT_YOUR_TURN", {"seat": "2"})
    assert error_info([]) is None and error_info(None) is None


def _first(turn: Turn) -> str:
    return turn.legal_moves[0]


def test_sync_client_cancel_and_play(server_process: ServerProcess) -> None:
    address = server_process.start()
    with SyncClient(address) as client:
        waiting = client.create_match(game_config("pylos"))
        assert client.cancel_match(waiting.match_id).status == match_pb2.MATCH_STATUS_FINISHED
        match = client.create_match(game_config("pylos", max_moves=6))
        handles = [client.join(match.match_id, f"s{i}") for i in range(2)]
        results: list[match_pb2.MatchEndedEvent] = []
        threads = [
            threading.Thread(target=lambda h=h: results.append(client.play(h, _first))) for h in handles
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert len(results) == 2 and results[0].outcome == results[1].outcome
