"""ListMatches: summaries instead of replays, AIP-158 paging, filters, and the seat's own view.

Every test runs a real server on a loopback port with a real database file and calls
it through the generated stub, as any client would.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from tests.servers import RunningServer, kabaleo_config, pylos_config
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as rpc
from ziggurat.wire.errors import error_reason

WAITING, ACTIVE, FINISHED = (
    match_pb2.MATCH_STATUS_WAITING,
    match_pb2.MATCH_STATUS_ACTIVE,
    match_pb2.MATCH_STATUS_FINISHED,
)


def bearer(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


@pytest.fixture
async def stub(server: RunningServer) -> AsyncIterator[rpc.MatchServiceStub]:
    async with grpc.aio.insecure_channel(server.address) as channel:
        yield rpc.MatchServiceStub(channel)


async def create(stub: rpc.MatchServiceStub, config: game_pb2.GameConfig | None = None) -> str:
    response = await stub.CreateMatch(spb.CreateMatchRequest(config=config or pylos_config()))
    return response.match.match_id


async def join_all(stub: rpc.MatchServiceStub, match_id: str, seats: int) -> dict[int, str]:
    """Every seat's token, by 1-based seat."""
    tokens = {}
    for index in range(seats):
        joined = await stub.JoinMatch(spb.JoinMatchRequest(match_id=match_id, player_name=f"p{index}"))
        tokens[joined.seat] = joined.token
    return tokens


async def list_all(
    stub: rpc.MatchServiceStub, page_size: int, token: str = "", **filters: int
) -> tuple[list[match_pb2.Match], int]:
    """Every page of a listing from ``token`` on, token by token; the matches and the page count."""
    matches: list[match_pb2.Match] = []
    pages = 0
    while True:
        page = await stub.ListMatches(
            spb.ListMatchesRequest(page_size=page_size, page_token=token, **filters)
        )
        pages += 1
        matches.extend(page.matches)
        assert len(page.matches) <= page_size
        token = page.next_page_token
        if not token:
            return matches, pages


async def refused(call: object, code: grpc.StatusCode, reason: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call  # type: ignore[misc]
    assert (caught.value.code(), error_reason(caught.value)) == (code, reason), caught.value


async def test_pages_cover_every_match_once_newest_first(stub: rpc.MatchServiceStub) -> None:
    created = [await create(stub) for _ in range(23)]
    matches, pages = await list_all(stub, page_size=10)
    assert pages == 3
    assert [m.match_id for m in matches] == list(reversed(created))
    first = await stub.ListMatches(spb.ListMatchesRequest())
    assert len(first.matches) == 23 and first.next_page_token == "", "default page size is 100"


async def test_paging_is_stable_while_matches_are_created(stub: rpc.MatchServiceStub) -> None:
    older = [await create(stub) for _ in range(12)]
    first = await stub.ListMatches(spb.ListMatchesRequest(page_size=5))
    newer = [await create(stub) for _ in range(7)]  # created between two page reads
    rest, _ = await list_all(stub, page_size=5, token=first.next_page_token)
    listed = [m.match_id for m in first.matches] + [m.match_id for m in rest]
    assert listed == list(reversed(older)), "no match skipped or repeated, and none of the new ones"
    again, _ = await list_all(stub, page_size=5)
    assert [m.match_id for m in again] == list(reversed(older + newer))


async def test_invalid_page_tokens_are_refused(stub: rpc.MatchServiceStub) -> None:
    for _ in range(3):
        await create(stub)
    page = await stub.ListMatches(spb.ListMatchesRequest(page_size=1))
    assert page.next_page_token
    invalid = grpc.StatusCode.INVALID_ARGUMENT
    for token in ["garbage", "e30", page.next_page_token[:-3], "x" * 5000, "%%%"]:
        await refused(
            stub.ListMatches(spb.ListMatchesRequest(page_size=1, page_token=token)), invalid, "BAD_PAGE_TOKEN"
        )
    # A token is only valid with the filters of the listing that returned it.
    other = spb.ListMatchesRequest(page_size=1, page_token=page.next_page_token, status=WAITING)
    await refused(stub.ListMatches(other), invalid, "BAD_PAGE_TOKEN")


async def test_filters_by_status_and_game(stub: rpc.MatchServiceStub) -> None:
    waiting_pylos = await create(stub)
    waiting_kabaleo = await create(stub, kabaleo_config(3))
    active = await create(stub)
    await join_all(stub, active, 2)
    finished = await create(stub)
    tokens = await join_all(stub, finished, 2)
    await stub.Resign(spb.ResignRequest(match_id=finished), metadata=bearer(tokens[1]))

    async def ids(**filters: int) -> list[str]:
        matches, _ = await list_all(stub, page_size=2, **filters)
        return [m.match_id for m in matches]

    assert await ids(status=WAITING) == [waiting_kabaleo, waiting_pylos]
    assert await ids(status=ACTIVE) == [active]
    assert await ids(status=FINISHED) == [finished]
    assert await ids(game=game_pb2.GAME_KABALEO) == [waiting_kabaleo]
    assert await ids(game=game_pb2.GAME_PYLOS) == [finished, active, waiting_pylos]
    assert await ids(game=game_pb2.GAME_PYLOS, status=WAITING) == [waiting_pylos]


async def test_a_seat_sees_its_own_view_of_its_match(stub: rpc.MatchServiceStub) -> None:
    other = await create(stub, kabaleo_config(3))
    mine = await create(stub, kabaleo_config(3))
    tokens = await join_all(stub, mine, 3)
    await join_all(stub, other, 3)
    for seat, token in tokens.items():
        listed = await stub.ListMatches(spb.ListMatchesRequest(), metadata=bearer(token))
        by_id = {m.match_id: m for m in listed.matches}
        own = await stub.GetMatch(spb.GetMatchRequest(match_id=mine), metadata=bearer(token))
        public = await stub.GetMatch(spb.GetMatchRequest(match_id=other))
        assert by_id[mine] == own.match, f"seat {seat} sees its own view in the listing"
        assert by_id[other] == public.match, "other matches as a spectator sees them"
    spectator = await stub.ListMatches(spb.ListMatchesRequest())
    public_mine = await stub.GetMatch(spb.GetMatchRequest(match_id=mine))
    assert {m.match_id: m for m in spectator.matches}[mine] == public_mine.match
    seat_one = await stub.GetMatch(spb.GetMatchRequest(match_id=mine), metadata=bearer(tokens[1]))
    assert public_mine.match != seat_one.match, "a seat's view differs from the public one (its objective)"
    await refused(
        stub.ListMatches(spb.ListMatchesRequest(), metadata=bearer("not-a-token")),
        grpc.StatusCode.PERMISSION_DENIED,
        "BAD_TOKEN",
    )


async def test_finished_matches_are_listed_from_summaries_after_a_restart(tmp_path: Path) -> None:
    """After a restart, listing finished matches loads none of them; missing summaries are rebuilt."""
    db = tmp_path / "z.db"
    options = ServeOptions(host="127.0.0.1", port=0, db_path=str(db), grace_seconds=0.2)
    first = ZigguratServer(options)
    port = await first.start()
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = rpc.MatchServiceStub(channel)
        finished = []
        for seats in (2, 3, 4):
            match_id = await create(stub, kabaleo_config(seats))
            tokens = await join_all(stub, match_id, seats)
            for token in tokens.values():  # seats resign until the game is over
                await stub.Resign(spb.ResignRequest(match_id=match_id), metadata=bearer(token))
                current = await stub.GetMatch(spb.GetMatchRequest(match_id=match_id))
                if current.match.status == FINISHED:
                    break
            finished.append((match_id, tokens))
        before = await stub.ListMatches(spb.ListMatchesRequest(status=FINISHED))
    await first.stop()
    with sqlite3.connect(db) as raw:
        rows = raw.execute("SELECT COUNT(*) FROM match_summaries").fetchone()[0]
    assert rows == 3 + 4 + 5, "one summary per audience (spectators and each seat) of each match"

    second = ZigguratServer(options)
    port = await second.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = rpc.MatchServiceStub(channel)
            after = await stub.ListMatches(spb.ListMatchesRequest(status=FINISHED))
            assert after == before
            assert not second.manager._finished and not second.manager.live, "no log was replayed"
            match_id, tokens = finished[1]
            as_seat = await stub.ListMatches(
                spb.ListMatchesRequest(status=FINISHED), metadata=bearer(tokens[2])
            )
            own = await stub.GetMatch(spb.GetMatchRequest(match_id=match_id), metadata=bearer(tokens[2]))
            assert {m.match_id: m for m in as_seat.matches}[match_id] == own.match
    finally:
        await second.stop()

    with sqlite3.connect(db) as raw:
        raw.execute("DELETE FROM match_summaries")
    third = ZigguratServer(options)
    port = await third.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = rpc.MatchServiceStub(channel)
            assert await stub.ListMatches(spb.ListMatchesRequest(status=FINISHED)) == before
    finally:
        await third.stop()
    with sqlite3.connect(db) as raw:
        assert raw.execute("SELECT COUNT(*) FROM match_summaries WHERE audience = -1").fetchone()[0] == 3


async def test_live_matches_are_listed_as_they_are_now(stub: rpc.MatchServiceStub) -> None:
    """Listing caches each live match's rendering; every move and connection shows at once."""
    match_id = await create(stub)
    tokens = await join_all(stub, match_id, 2)

    async def listed_equals_get() -> match_pb2.Match:
        listed = {m.match_id: m for m in (await stub.ListMatches(spb.ListMatchesRequest())).matches}
        public = (await stub.GetMatch(spb.GetMatchRequest(match_id=match_id))).match
        assert listed[match_id] == public
        return public

    before = await listed_equals_get()
    assert await listed_equals_get() == before
    mover = before.view.to_move
    seat_view = await stub.GetMatch(spb.GetMatchRequest(match_id=match_id), metadata=bearer(tokens[mover]))
    move = seat_view.match.view.legal_moves[0]
    await stub.SubmitMove(spb.SubmitMoveRequest(match_id=match_id, move=move), metadata=bearer(tokens[mover]))
    after_move = await listed_equals_get()
    assert after_move.last_seq > before.last_seq
    play = stub.Play(metadata=bearer(tokens[1]))
    await play.write(spb.PlayRequest(match_id=match_id))
    await play.read()
    connected = await listed_equals_get()
    assert connected.seats[0].state == match_pb2.SEAT_STATE_CONNECTED
    play.cancel()
