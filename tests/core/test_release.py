"""Release is the match's decision: a decided game whose match holds its end (a rotation of a
duplicate deal) shows nothing of that end on any read path, on either port, until the match
releases it; then every snapshot shows it, and the ``match_ended`` event carries it.

Checked on the fields that hold the secrets — every objective other than the viewer's own,
the unheld colours, the outcome, the revealed seed, the position text — for every audience
(a spectator, every seat by its token) at every ply, through every read call a client can
make: GetMatch, ListMatches, WatchMatch, Play's catch-up and GetMatchRecord over gRPC, and
GetMatch, ListMatches, WatchMatch and GetMatchRecord over Connect (JSON and binary) on the web
port. The reveal at the end is the control: the same checks see the secrets once released.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from connectrpc.errors import ConnectError

from tests.web.test_connect import Web
from ziggurat.core.match import Match
from ziggurat.core.timecontrol import TimeControl
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as sgrpc


def _metadata(token: str | None) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


def check_view(view: game_pb2.GameView, seat: int | None, released: bool, where: str) -> None:
    """``view`` (for ``seat``, 0-based, None = spectator) shows the end only when ``released``."""
    kabaleo = view.kabaleo
    secrets = view.position.split()[-1]  # the objectives + unheld field of the position text
    if released:
        assert "?" not in "".join(kabaleo.objectives) + "".join(kabaleo.unheld), where
        assert "?" not in secrets and view.HasField("outcome"), where
        return
    for index, letter in enumerate(kabaleo.objectives):
        assert (letter != "?") == (index == seat), f"{where}: objective of seat {index + 1} is {letter!r}"
        assert secrets[index] == letter, where
    assert list(kabaleo.unheld) == ["?", "?"] and secrets.endswith("+??"), where
    assert not view.HasField("outcome"), f"{where}: outcome {view.outcome}"


def check_match(match: match_pb2.Match, seat: int | None, released: bool, where: str) -> None:
    assert bool(match.revealed_seed) == released, f"{where}: revealed_seed {match.revealed_seed!r}"
    finished = match.status == match_pb2.MATCH_STATUS_FINISHED
    assert finished == released, f"{where}: status {match.status}"
    check_view(match.view, seat, released, where)


def check_event(event: match_pb2.Event, seat: int | None, released: bool, where: str) -> None:
    kind = event.WhichOneof("kind")
    where = f"{where} event {event.seq} {kind}"
    if kind == "match_ended":
        assert released, where
        assert event.match_ended.revealed_seed, where
        check_view(event.match_ended.view, seat, True, where)
    elif kind in ("move_played", "match_started"):
        # Views in events are never the released one: the same entry renders the same bytes
        # for an audience whenever it is sent, and only match_ended publishes the end.
        check_view(getattr(event, kind).view, seat, False, where)


class Reader:
    """Every read call of both ports for one match, checked for one audience."""

    def __init__(self, stub: sgrpc.MatchServiceStub, webs: list[tuple[str, Web]], match: Match) -> None:
        self.stub = stub
        self.webs = webs
        self.match = match
        self.calls = 0

    async def check(self, seat: int | None, token: str | None, released: bool) -> None:
        match_id = self.match.match_id
        last = self.match.last_seq
        metadata = _metadata(token)
        name = "spectator" if seat is None else f"seat {seat + 1}"
        got = await self.stub.GetMatch(spb.GetMatchRequest(match_id=match_id), metadata=metadata)
        check_match(got.match, seat, released, f"gRPC GetMatch as {name}")
        listed = await self.stub.ListMatches(spb.ListMatchesRequest(), metadata=metadata)
        check_match(_find(listed.matches, match_id), seat, released, f"gRPC ListMatches as {name}")
        watch = self.stub.WatchMatch(spb.WatchMatchRequest(match_id=match_id), metadata=metadata)
        await _events(_grpc_events(watch), last, seat, released, f"gRPC WatchMatch as {name}")
        if token is not None:
            play = self.stub.Play(metadata=metadata)
            await play.write(spb.PlayRequest(match_id=match_id))
            await _events(_grpc_events(play), last, seat, released, f"gRPC Play as {name}")
        await self._record(released, token)
        for kind, web in self.webs:
            where = f"Connect {kind} %s as {name}"
            got = await web.call("GetMatch", spb.GetMatchRequest(match_id=match_id), token)
            check_match(got.match, seat, released, where % "GetMatch")
            listed = await web.call("ListMatches", spb.ListMatchesRequest(), token)
            check_match(_find(listed.matches, match_id), seat, released, where % "ListMatches")
            stream = web.stream("WatchMatch", spb.WatchMatchRequest(match_id=match_id), token)
            await _events(_web_events(stream), last, seat, released, where % "WatchMatch")
            try:
                record = await web.call("GetMatchRecord", spb.GetMatchRecordRequest(match_id=match_id), token)
            except ConnectError:
                assert not released, where % "GetMatchRecord"
            else:
                assert released and record.record.revealed_seed, where % "GetMatchRecord"
        self.calls += 4 + (1 if token else 0) + 4 * len(self.webs)

    async def _record(self, released: bool, token: str | None) -> None:
        request = spb.GetMatchRecordRequest(match_id=self.match.match_id)
        try:
            record = await self.stub.GetMatchRecord(request, metadata=_metadata(token))
        except grpc.aio.AioRpcError as error:
            assert not released and error.code() == grpc.StatusCode.FAILED_PRECONDITION, error
        else:
            assert released and record.record.revealed_seed and record.record.outcome.ranks


def _find(matches: Any, match_id: str) -> match_pb2.Match:
    found = [m for m in matches if m.match_id == match_id]
    assert len(found) == 1, f"{match_id} listed {len(found)} times"
    return found[0]


async def _grpc_events(call: Any) -> AsyncIterator[match_pb2.Event]:
    try:
        async for response in call:
            for event in response.events:
                yield event
    finally:
        call.cancel()


async def _web_events(stream: AsyncIterator[Any]) -> AsyncIterator[match_pb2.Event]:
    async for response in stream:
        for event in response.events:
            yield event


async def _events(
    events: AsyncIterator[match_pb2.Event], last: int, seat: int | None, released: bool, where: str
) -> None:
    """Read a stream's catch-up up to ``last`` (or its end), checking every event."""
    seen = 0
    async with asyncio.timeout(10):
        async for event in events:
            check_event(event, seat, released, where)
            seen = event.seq
            if seen >= last:
                break
    await events.aclose()  # type: ignore[attr-defined]
    assert seen == last, f"{where}: caught up to {seen} of {last}"


@pytest.mark.slow
@pytest.mark.parametrize("seats", [3, 4])
async def test_a_held_end_shows_nothing_on_any_read_path_until_released(tmp_path: Path, seats: int) -> None:
    server = ZigguratServer(
        ServeOptions(host="127.0.0.1", port=0, http_port=0, db_path=str(tmp_path / "z.db"), grace_seconds=0.5)
    )
    port = await server.start()
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    base = f"http://127.0.0.1:{server.http_port}"
    webs = [("JSON", Web(base, json=True)), ("binary", Web(base))]
    try:
        match = server.manager.create(
            "kabaleo",
            seats,
            {},
            TimeControl(),
            "chosen",
            seed=bytes([seats]) * 32,
            held=True,
            end_held=True,
        )
        tokens = [match.join(f"p{seat}", seat)[0] for seat in range(seats)]
        match.begin()
        stub = sgrpc.MatchServiceStub(channel)
        reader = Reader(stub, webs, match)
        audiences: list[tuple[int | None, str | None]] = [(None, None), *enumerate(tokens)]
        rng = random.Random(seats)
        while not match.decided:
            for seat, token in audiences:
                await reader.check(seat, token, released=False)
            mover = match.rules.to_move(match.state)
            assert mover is not None
            request = spb.GetMatchRequest(match_id=match.match_id)
            view = (await stub.GetMatch(request, metadata=_metadata(tokens[mover]))).match.view
            move = rng.choice(list(view.legal_moves))
            await stub.SubmitMove(
                spb.SubmitMoveRequest(match_id=match.match_id, move=move), metadata=_metadata(tokens[mover])
            )
        # decided, its end held: still nothing on any path
        for seat, token in audiences:
            await reader.check(seat, token, released=False)
        match.reveal()
        for seat, token in audiences:
            await reader.check(seat, token, released=True)
        assert reader.calls > 500
    finally:
        for _, web in webs:
            await web.close()
        await channel.close()
        await server.stop()
