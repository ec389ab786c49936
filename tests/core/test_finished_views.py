"""Finished matches are kept as what GetMatch and ListMatches answer, not whole (manager.py).

Every test runs a real server on a loopback port with a real database file, plays matches to
their end through the client SDK and the generated stub, and compares what the cached views
answer with what a server that replays the log from the database answers.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
from pathlib import Path

import grpc
import pytest

from tests.servers import kabaleo_config, pylos_config
from ziggurat.core import manager as manager_module
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as rpc
from ziggurat.wire.errors import error_reason
from ziggurat_client import ZigguratClient

FINISHED = match_pb2.MATCH_STATUS_FINISHED


def bearer(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


async def refused(call: object, code: grpc.StatusCode, reason: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    assert (caught.value.code(), error_reason(caught.value)) == (code, reason), caught.value


async def play_pylos_to_the_end(client: ZigguratClient, seed: int) -> tuple[str, dict[int, str]]:
    """A Pylos match played out by two random bots: its id and each seat's token (1-based)."""
    rng = random.Random(seed)
    match = await client.create_match(pylos_config())
    handles = [await client.join(match.match_id, name) for name in ("north", "south")]
    await asyncio.gather(*(client.play(h, lambda turn: rng.choice(list(turn.legal_moves))) for h in handles))
    return match.match_id, {h.seat: h.token for h in handles}


async def resign_kabaleo_to_the_end(stub: rpc.MatchServiceStub, seats: int) -> tuple[str, dict[int, str]]:
    """A Kabaleo match (secret colours: each seat sees another view) ended by resignations."""
    created = await stub.CreateMatch(spb.CreateMatchRequest(config=kabaleo_config(seats)))
    match_id = created.match.match_id
    tokens = {}
    for index in range(seats):
        joined = await stub.JoinMatch(spb.JoinMatchRequest(match_id=match_id, player_name=f"k{index}"))
        tokens[joined.seat] = joined.token
    for token in tokens.values():
        await stub.Resign(spb.ResignRequest(match_id=match_id), metadata=bearer(token))
        current = await stub.GetMatch(spb.GetMatchRequest(match_id=match_id))
        if current.match.status == FINISHED:
            break
    assert current.match.status == FINISHED
    return match_id, tokens


async def answers(stub: rpc.MatchServiceStub, match_id: str, tokens: dict[int, str]) -> list[match_pb2.Match]:
    """GetMatch as a spectator and as each seat, and each seat's own ListMatches entry."""
    out = [(await stub.GetMatch(spb.GetMatchRequest(match_id=match_id))).match]
    for token in tokens.values():
        out.append(
            (await stub.GetMatch(spb.GetMatchRequest(match_id=match_id), metadata=bearer(token))).match
        )
        listed = await stub.ListMatches(
            spb.ListMatchesRequest(status=FINISHED, page_size=100), metadata=bearer(token)
        )
        out.append(next(m for m in listed.matches if m.match_id == match_id))
    return out


async def test_finished_matches_answer_from_their_views_as_a_replay_of_the_log_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manager_module, "FINISHED_CACHE", 1)
    monkeypatch.setattr(manager_module, "FINISHED_VIEWS", 3)
    options = ServeOptions(host="127.0.0.1", port=0, db_path=str(tmp_path / "z.db"), grace_seconds=0.2)
    first = ZigguratServer(options)
    port = await first.start()
    try:
        async with ZigguratClient(f"127.0.0.1:{port}") as client:
            finished = [await play_pylos_to_the_end(client, seed) for seed in range(3)]
            finished.append(await resign_kabaleo_to_the_end(client.stub, 3))
        manager = first.manager
        ids = [match_id for match_id, _ in finished]
        assert list(manager._finished) == ids[-1:], "one finished match is kept whole"
        assert list(manager._views) == ids[1:], "the three newest are kept as views"
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = rpc.MatchServiceStub(channel)
            served = {match_id: await answers(stub, match_id, tokens) for match_id, tokens in finished[1:]}
            assert list(manager._finished) == ids[-1:], "the views answered: no log was read back"
            kabaleo_id, kabaleo_tokens = finished[-1]
            views = served[kabaleo_id]
            assert views[1] != views[3] != views[5] and views[0] not in views[1:], "each seat its own view"
            await refused(
                stub.GetMatch(spb.GetMatchRequest(match_id=ids[1]), metadata=bearer(kabaleo_tokens[1])),
                grpc.StatusCode.PERMISSION_DENIED,
                "BAD_TOKEN",
            )
            oldest_id, oldest_tokens = finished[0]  # in neither cache: read back from the store
            served[oldest_id] = await answers(stub, oldest_id, oldest_tokens)
            assert oldest_id in manager._views
    finally:
        await first.stop()

    second = ZigguratServer(options)  # a fresh server replays each match's log when asked
    port = await second.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = rpc.MatchServiceStub(channel)
            for match_id, tokens in finished:
                spectators = await stub.GetMatch(spb.GetMatchRequest(match_id=match_id))
                assert match_id in second.manager._finished, "replayed from the log"
                assert [spectators.match, *(await answers(stub, match_id, tokens))[1:]] == served[match_id]
    finally:
        await second.stop()


async def test_a_finished_view_is_not_served_once_its_match_is_found_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manager_module, "FINISHED_CACHE", 1)
    db = tmp_path / "z.db"
    server = ZigguratServer(ServeOptions(host="127.0.0.1", port=0, db_path=str(db), grace_seconds=0.2))
    port = await server.start()
    try:
        async with ZigguratClient(f"127.0.0.1:{port}") as client:
            damaged, tokens = await play_pylos_to_the_end(client, 1)
            await play_pylos_to_the_end(client, 2)  # the first one is now only a view
            assert damaged in server.manager._views and damaged not in server.manager._finished
            with sqlite3.connect(db) as raw:  # the third move is moved onto the first one's square
                rows = raw.execute(
                    "SELECT seq, data_json FROM events WHERE match_id=? AND kind='move' ORDER BY seq",
                    (damaged,),
                ).fetchall()
                third = json.loads(rows[2][1])
                third["move"] = json.loads(rows[0][1])["move"]
                raw.execute(
                    "UPDATE events SET data_json=? WHERE match_id=? AND seq=?",
                    (json.dumps(third), damaged, rows[2][0]),
                )
            stub = client.stub
            # GetMatchRecord needs the log: reading it back finds the damage.
            await refused(
                stub.GetMatchRecord(spb.GetMatchRecordRequest(match_id=damaged)),
                grpc.StatusCode.DATA_LOSS,
                "MATCH_DAMAGED",
            )
            for metadata in ([], bearer(tokens[1])):  # and the view is no longer served
                await refused(
                    stub.GetMatch(spb.GetMatchRequest(match_id=damaged), metadata=metadata),
                    grpc.StatusCode.DATA_LOSS,
                    "MATCH_DAMAGED",
                )
    finally:
        await server.stop()
