"""A game whose moves are private (phantom tic-tac-toe): the move text of a MovePlayed event goes
to its mover only, on every stream (each seat's, a spectator's), live and in a catch-up after the
end; the record publishes every move once the match has ended. A real server on a loopback port,
real streams, a real database."""

from __future__ import annotations

import grpc

from tests.servers import RunningServer
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as sgrpc


def _auth(token: str) -> tuple[tuple[str, str]]:
    return (("authorization", f"Bearer {token}"),)


async def _moves_seen(
    stub: sgrpc.MatchServiceStub, match_id: str, token: str | None
) -> list[tuple[int, str]]:
    """Every MovePlayed of a finished match as one audience's WatchMatch catch-up shows it."""
    seen: list[tuple[int, str]] = []
    call = stub.WatchMatch(spb.WatchMatchRequest(match_id=match_id), metadata=_auth(token) if token else None)
    async for message in call:
        for event in message.events:
            if event.WhichOneof("kind") == "move_played":
                seen.append((event.move_played.seat, event.move_played.move))
            if event.WhichOneof("kind") == "match_ended":
                call.cancel()
                return seen
    return seen


async def test_a_private_move_is_shown_to_its_mover_only(server: RunningServer) -> None:
    async with grpc.aio.insecure_channel(server.address) as channel:
        stub = sgrpc.MatchServiceStub(channel)
        created = await stub.CreateMatch(
            spb.CreateMatchRequest(
                config=game_pb2.GameConfig(game=game_pb2.GAME_PHANTOM_TIC_TAC_TOE, seats=2),
                seat_assignment=match_pb2.SEAT_ASSIGNMENT_CHOSEN,
            )
        )
        match_id = created.match.match_id
        tokens = {}
        for seat in (1, 2):
            joined = await stub.JoinMatch(
                spb.JoinMatchRequest(match_id=match_id, player_name=f"p{seat}", seat=seat)
            )
            tokens[seat] = joined.token
        # x a1; o tries a1 (taken: found, o again) then b1; x a2; o b2; x a3 wins
        played = [(1, "a1"), (2, "a1"), (2, "b1"), (1, "a2"), (2, "b2"), (1, "a3")]
        live = stub.WatchMatch(spb.WatchMatchRequest(match_id=match_id), metadata=_auth(tokens[1]))
        for seat, move in played:
            await stub.SubmitMove(
                spb.SubmitMoveRequest(match_id=match_id, move=move), metadata=_auth(tokens[seat])
            )
        live_seen: list[tuple[int, str]] = []
        async for message in live:
            for event in message.events:
                if event.WhichOneof("kind") == "move_played":
                    live_seen.append((event.move_played.seat, event.move_played.move))
            if len(live_seen) == len(played):
                live.cancel()
                break
        hidden = [(seat, move if seat == 1 else "") for seat, move in played]
        assert live_seen == hidden  # seat 1's live stream: its own moves, not seat 2's
        assert await _moves_seen(stub, match_id, tokens[1]) == hidden
        assert await _moves_seen(stub, match_id, tokens[2]) == [(s, m if s == 2 else "") for s, m in played]
        assert await _moves_seen(stub, match_id, None) == [(s, "") for s, _ in played]
        record = await stub.GetMatchRecord(spb.GetMatchRecordRequest(match_id=match_id))
        assert [(m.seat, m.move) for m in record.record.moves] == played
