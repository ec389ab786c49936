"""A person's seat survives a server restart (README: "the seat token survives ... a server
restart"): the token a person got from JoinMatch, kept by the Python client, still names the
same seat on a server started again on the same database, after SIGTERM and after kill -9,
and the person plays on with it to the end of the game.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.servers import ServerProcess, free_port, match_when_back
from ziggurat_client import game_config
from ziggurat_client.client import MatchHandle
from ziggurat_client.sync import SyncClient
from ziggurat_client.v1 import match_pb2


def _move(client: SyncClient, handle: MatchHandle, rng: random.Random) -> bool:
    """Play the seat's move if it is its turn (from its own view); False when the game is over."""
    match = match_when_back(client, handle.match_id, handle)
    if match.status == match_pb2.MATCH_STATUS_FINISHED:
        return False
    view = match.view
    if view.to_move == view.viewer_seat and view.legal_moves:
        client.submit_move(handle, rng.choice(list(view.legal_moves)), view.ply)
    return True


@pytest.mark.slow
def test_a_persons_token_keeps_the_seat_across_restarts(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "z.db", ["--port", str(free_port()), "--no-web"])
    address = server.start()
    rng = random.Random(3)
    try:
        with SyncClient(address) as client:
            match_id = client.create_match(game_config("pylos")).match_id
            alice = client.join(match_id, "alice")
            bob = client.join(match_id, "bob")
            kept = {h.seat: MatchHandle(match_id, h.seat, h.token) for h in (alice, bob)}  # as a file would
            for stop in ("SIGTERM", "kill -9", None):
                for _ in range(6):
                    for handle in kept.values():
                        _move(client, handle, rng)
                if stop is None:
                    break
                if stop == "SIGTERM":
                    assert server.terminate() == 0
                else:
                    server.kill9()
                server.start()
                for seat, handle in kept.items():
                    # the token alone names the seat: the server tells it in the view it returns
                    assert match_when_back(client, match_id, handle).view.viewer_seat == seat
            for _ in range(500):  # a Pylos game is far shorter
                if not all([_move(client, handle, rng) for handle in kept.values()]):
                    break
            final = match_when_back(client, match_id)
        assert final.status == match_pb2.MATCH_STATUS_FINISHED and final.view.outcome.ranks
        assert {seat.player_name for seat in final.seats} == {"alice", "bob"}
        assert final.view.ply > 12  # both seats moved after each restart
    finally:
        server.stop()
