"""Seat tokens: missing, forged and foreign tokens are refused; spectators see the public view."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import grpc
import pytest

from tests.servers import RunningServer, kabaleo_config, pylos_config
from ziggurat.v1 import match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.wire.errors import error_reason
from ziggurat_client import ZigguratClient, ZigguratError
from ziggurat_client.client import MatchHandle

UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
DENIED = grpc.StatusCode.PERMISSION_DENIED


async def started(client: ZigguratClient, seats: int = 2) -> tuple[str, list[MatchHandle]]:
    config = kabaleo_config(seats) if seats > 2 else pylos_config()
    match = await client.create_match(config)
    handles = [await client.join(match.match_id, f"bot{i}") for i in range(seats)]
    return match.match_id, sorted(handles, key=lambda h: h.seat)


async def state(client: ZigguratClient, match_id: str, handles: list[MatchHandle]) -> list[bytes]:
    views = [await client.get_match(match_id)] + [await client.get_match(match_id, h) for h in handles]
    return [v.SerializeToString(deterministic=True) for v in views]


async def refused(call: Awaitable[Any], code: grpc.StatusCode, reason: str) -> ZigguratError:
    with pytest.raises(ZigguratError) as caught:
        await call
    assert (caught.value.code, caught.value.reason) == (code, reason), str(caught.value)
    return caught.value


async def raw_refused(call: Any, code: grpc.StatusCode, reason: str) -> None:
    """A raw stub call (unary, or a response stream) that must fail with ``code``/``reason``."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        if hasattr(call, "__aiter__"):
            async for _ in call:
                pass
        else:
            await call
    assert caught.value.code() == code
    assert error_reason(caught.value) == reason


async def mover_of(
    client: ZigguratClient, match_id: str, handles: list[MatchHandle]
) -> tuple[MatchHandle, Any]:
    public = await client.get_match(match_id)
    mover = handles[public.view.to_move - 1]
    return mover, (await client.get_match(match_id, mover)).view


async def finish(client: ZigguratClient, match_id: str, handles: list[MatchHandle]) -> match_pb2.Match:
    while (public := await client.get_match(match_id)).status != match_pb2.MATCH_STATUS_FINISHED:
        mover, view = await mover_of(client, match_id, handles)
        await client.submit_move(mover, view.legal_moves[-1], ply=view.ply)
    return public


def forged_tokens(real: str) -> list[str]:
    return [
        secrets.token_urlsafe(32),
        real[:-1],
        real + "A",
        real.upper() if real.upper() != real else real.lower(),
        "x" * 4000,
        "null",
        "../../etc/passwd",
    ]


async def test_missing_token(server: RunningServer, client: ZigguratClient) -> None:
    match_id, handles = await started(client)
    before = await state(client, match_id, handles)
    mover, view = await mover_of(client, match_id, handles)
    move = view.legal_moves[0]
    stub = client.stub
    # No metadata at all.
    await raw_refused(
        stub.SubmitMove(spb.SubmitMoveRequest(match_id=match_id, move=move)), UNAUTHENTICATED, "MISSING_TOKEN"
    )
    await raw_refused(stub.Resign(spb.ResignRequest(match_id=match_id)), UNAUTHENTICATED, "MISSING_TOKEN")
    # An empty bearer token, and an empty authorization value.
    for value in ("Bearer ", "Bearer", "", "bearer    "):
        metadata = (("authorization", value),)
        await raw_refused(
            stub.SubmitMove(spb.SubmitMoveRequest(match_id=match_id, move=move), metadata=metadata),
            UNAUTHENTICATED,
            "MISSING_TOKEN",
        )
        await raw_refused(
            stub.Resign(spb.ResignRequest(match_id=match_id), metadata=metadata),
            UNAUTHENTICATED,
            "MISSING_TOKEN",
        )
    await refused(
        client.submit_move(MatchHandle(match_id, mover.seat, ""), move), UNAUTHENTICATED, "MISSING_TOKEN"
    )
    # The Play stream needs a token too.
    call = stub.Play()
    await call.write(spb.PlayRequest(match_id=match_id, move=move))
    await raw_refused(call, UNAUTHENTICATED, "MISSING_TOKEN")
    assert await state(client, match_id, handles) == before
    await finish(client, match_id, handles)


async def test_forged_token(server: RunningServer, client: ZigguratClient) -> None:
    match_id, handles = await started(client, 3)
    before = await state(client, match_id, handles)
    mover, view = await mover_of(client, match_id, handles)
    move = view.legal_moves[0]
    for token in forged_tokens(mover.token):
        forged = MatchHandle(match_id, mover.seat, token)
        await refused(client.submit_move(forged, move), DENIED, "BAD_TOKEN")
        await refused(client.resign(forged), DENIED, "BAD_TOKEN")
        # Reads with a bad token are refused too, rather than silently downgraded to a spectator.
        await refused(client.get_match(match_id, forged), DENIED, "BAD_TOKEN")
        with pytest.raises(ZigguratError) as caught:
            async for _ in client.watch(match_id, handle=forged):
                pass
        assert (caught.value.code, caught.value.reason) == (DENIED, "BAD_TOKEN")
        call = client.stub.Play(metadata=forged.metadata)
        await call.write(spb.PlayRequest(match_id=match_id, move=move))
        await raw_refused(call, DENIED, "BAD_TOKEN")
    # Other schemes do not work either.
    for value in (f"Basic {mover.token}", f"Token {mover.token}"):
        await raw_refused(
            client.stub.SubmitMove(
                spb.SubmitMoveRequest(match_id=match_id, move=move), metadata=(("authorization", value),)
            ),
            DENIED,
            "BAD_TOKEN",
        )
    assert await state(client, match_id, handles) == before
    final = await finish(client, match_id, handles)
    assert final.status == match_pb2.MATCH_STATUS_FINISHED


async def test_token_of_another_match(server: RunningServer, client: ZigguratClient) -> None:
    match_id, handles = await started(client, 3)
    other_id, others = await started(client, 3)
    before = await state(client, match_id, handles)
    before_other = await state(client, other_id, others)
    _mover, view = await mover_of(client, match_id, handles)
    other_mover, _ = await mover_of(client, other_id, others)
    for foreign in others:
        borrowed = MatchHandle(match_id, foreign.seat, foreign.token)
        for move in view.legal_moves[:3]:
            await refused(client.submit_move(borrowed, move), DENIED, "BAD_TOKEN")
        await refused(client.resign(borrowed), DENIED, "BAD_TOKEN")
        await refused(client.get_match(match_id, borrowed), DENIED, "BAD_TOKEN")
        with pytest.raises(ZigguratError) as caught:
            async for _ in client.watch(match_id, handle=borrowed):
                pass
        assert (caught.value.code, caught.value.reason) == (DENIED, "BAD_TOKEN")
        call = client.stub.Play(metadata=borrowed.metadata)
        await call.write(spb.PlayRequest(match_id=match_id, move=view.legal_moves[0]))
        await raw_refused(call, DENIED, "BAD_TOKEN")
    assert await state(client, match_id, handles) == before
    assert await state(client, other_id, others) == before_other, "the token's own match is untouched"
    assert other_mover.seat in [h.seat for h in others]
    await finish(client, match_id, handles)
    await finish(client, other_id, others)
    # After the end, tokens still do not cross matches.
    await refused(client.get_match(match_id, MatchHandle(match_id, 1, others[0].token)), DENIED, "BAD_TOKEN")


async def _collect(events: AsyncIterator[match_pb2.Event]) -> list[match_pb2.Event]:
    return [event async for event in events]


async def test_spectator_sees_the_public_view(server: RunningServer, client: ZigguratClient) -> None:
    match_id, handles = await started(client, 4)
    spectator_events = asyncio.create_task(_collect(client.watch(match_id)))
    mover, _view = await mover_of(client, match_id, handles)
    public = await client.get_match(match_id)
    assert public.view.viewer_seat == 0
    assert list(public.view.kabaleo.objectives) == ["?"] * 4
    assert list(public.view.kabaleo.unheld) == ["?", "?"]
    assert not public.view.legal_moves
    assert public.view.position.endswith(" ????+??")
    assert not public.revealed_seed
    for handle in handles:
        own = (await client.get_match(match_id, handle)).view
        assert own.viewer_seat == handle.seat
        objectives = list(own.kabaleo.objectives)
        assert objectives[handle.seat - 1] != "?"
        assert [o for i, o in enumerate(objectives) if i != handle.seat - 1] == ["?"] * 3
        assert bool(own.legal_moves) == (handle.seat == mover.seat)
        # A seat's view differs from the public one only by what that seat may know.
        assert own.kabaleo.stacks == public.view.kabaleo.stacks
        assert own.kabaleo.hands == public.view.kabaleo.hands
    # The spectator's stream shows public views only, to the end.
    await finish(client, match_id, handles)
    events = await asyncio.wait_for(spectator_events, 10)
    assert events[-1].WhichOneof("kind") == "match_ended"
    for event in events:
        kind = event.WhichOneof("kind")
        if kind == "turn_started":
            assert not event.turn_started.legal_moves
        elif kind == "move_played":
            assert event.move_played.view.viewer_seat == 0
            if not event.move_played.view.HasField("outcome"):
                assert set(event.move_played.view.kabaleo.objectives) == {"?"}
            assert not event.move_played.view.legal_moves
        elif kind == "match_started":
            assert event.match_started.view.viewer_seat == 0
            assert set(event.match_started.view.kabaleo.objectives) == {"?"}
    ended = events[-1].match_ended
    assert "?" not in "".join(ended.view.kabaleo.objectives), "the end reveals every objective"


async def test_spectator_cannot_act(server: RunningServer, client: ZigguratClient) -> None:
    """A spectator stream of a match does not make its watcher a seat."""
    match_id, handles = await started(client)
    before = await state(client, match_id, handles)
    mover, view = await mover_of(client, match_id, handles)
    watcher = asyncio.create_task(_collect(client.watch(match_id)))
    await asyncio.sleep(0.05)
    await refused(
        client.submit_move(MatchHandle(match_id, mover.seat, ""), view.legal_moves[0]),
        UNAUTHENTICATED,
        "MISSING_TOKEN",
    )
    assert await state(client, match_id, handles) == before, "a spectator stream is not a seat event"
    await finish(client, match_id, handles)
    assert (await asyncio.wait_for(watcher, 10))[-1].WhichOneof("kind") == "match_ended"
