"""MatchService over Connect on the server's HTTP port: a real server, a real Connect client.

The Connect client is connectrpc's own (the protocol a browser's connect-web speaks),
pointed at ``ZigguratServer``'s web port on loopback; the same match is driven over
gRPC at the same time, which shows there is one match manager behind both.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from connectrpc.client import ConnectClient
from connectrpc.code import Code
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from connectrpc.errors import ConnectError
from google.rpc import error_details_pb2

from ziggurat.bots.house import HouseBots
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import admin_service_pb2 as apb
from ziggurat.v1 import bot_service_pb2 as bpb
from ziggurat.v1 import bot_service_pb2_grpc as bgrpc
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import tournament_service_pb2 as tpb
from ziggurat.v1 import tournament_service_pb2_grpc as tgrpc
from ziggurat.web.connect import BOT_METHODS, BOT_SERVICE, PATH, TOURNAMENT_SERVICE, method_infos
from ziggurat_client import ZigguratClient

METHODS = {**method_infos(), **method_infos(BOT_SERVICE, BOT_METHODS)}


class Web:
    """A tiny Connect caller: ``await web.call("GetMatch", request, token)``."""

    def __init__(self, base: str, *, json: bool = False) -> None:
        codec = google_protobuf_json_codec() if json else google_protobuf_binary_codec()
        self.client = ConnectClient(base, codec=codec)

    async def call(self, name: str, request: Any, token: str | None = None) -> Any:
        headers = {"authorization": f"Bearer {token}"} if token else None
        return await self.client.execute_unary(request=request, method=METHODS[name], headers=headers)

    def stream(self, name: str, request: Any, token: str | None = None) -> AsyncIterator[Any]:
        headers = {"authorization": f"Bearer {token}"} if token else None
        return self.client.execute_server_stream(request=request, method=METHODS[name], headers=headers)

    async def close(self) -> None:
        await self.client.close()


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[ZigguratServer, str, str]]:
    server = ZigguratServer(
        ServeOptions(
            host="127.0.0.1", port=0, http_port=0, db_path=str(tmp_path / "z.db"), grace_seconds=0.5
        ),
        house_bots=HouseBots,
    )
    port = await server.start()
    assert server.http_port
    yield server, f"127.0.0.1:{port}", f"http://127.0.0.1:{server.http_port}"
    await server.stop()


def _reason(error: ConnectError) -> str:
    for detail in error.details:
        if detail.type_name == "google.rpc.ErrorInfo":
            info = error_details_pb2.ErrorInfo.FromString(detail.message_bytes)
            assert info.domain == "ziggurat"
            return info.reason
    raise AssertionError(f"no ErrorInfo in {error!r}")


PYLOS = game_pb2.GameConfig(game=game_pb2.GAME_PYLOS, seats=2)


def test_every_unary_and_server_streaming_rpc_is_served_and_play_is_not() -> None:
    descriptor = spb.DESCRIPTOR.services_by_name["MatchService"]
    expected = {m.name for m in descriptor.methods if not m.client_streaming}
    assert set(method_infos()) == expected
    assert "Play" not in METHODS and "WatchMatch" in METHODS
    assert PATH == "/ziggurat.v1.MatchService"
    # BotService: what a browser needs to invite a connected bot; ConnectBot stays gRPC-only.
    assert set(method_infos(BOT_SERVICE, BOT_METHODS)) == {"ListBots", "InviteBot"}


async def test_a_match_played_over_connect_and_grpc_at_once(served: tuple[ZigguratServer, str, str]) -> None:
    _, address, base = served
    web = Web(base)
    try:
        created = await web.call("CreateMatch", spb.CreateMatchRequest(config=PYLOS))
        match_id = created.match.match_id
        browser = await web.call("JoinMatch", spb.JoinMatchRequest(match_id=match_id, player_name="browser"))
        async with ZigguratClient(address) as grpc_client:
            bot = await grpc_client.join(match_id, "grpc")
            # The browser's stream and the same seat's gRPC stream carry the same events.
            stream = web.stream("WatchMatch", spb.WatchMatchRequest(match_id=match_id), browser.token)
            seen: list[match_pb2.Event] = []
            while True:
                state = await grpc_client.get_match(match_id, bot)
                if state.status != match_pb2.MATCH_STATUS_ACTIVE:
                    continue
                to_move = state.view.to_move
                moves = list(
                    (
                        await web.call("GetMatch", spb.GetMatchRequest(match_id=match_id), browser.token)
                    ).match.view.legal_moves
                    if to_move == browser.seat
                    else state.view.legal_moves
                )
                if to_move == browser.seat:
                    await web.call(
                        "SubmitMove", spb.SubmitMoveRequest(match_id=match_id, move=moves[0]), browser.token
                    )
                    break
                await grpc_client.submit_move(bot, moves[0])
            # A refusal over Connect: the same code and ErrorInfo reason as over gRPC.
            with pytest.raises(ConnectError) as refused:
                await web.call(
                    "SubmitMove", spb.SubmitMoveRequest(match_id=match_id, move="1a1"), browser.token
                )
            assert refused.value.code == Code.FAILED_PRECONDITION
            assert _reason(refused.value) == "NOT_YOUR_TURN"
            await web.call("Resign", spb.ResignRequest(match_id=match_id), browser.token)
            async for response in stream:
                seen.extend(response.events)
            assert seen[-1].WhichOneof("kind") == "match_ended"
            over_grpc = [
                e async for e in grpc_client.watch(match_id, handle=browser_handle(browser, match_id))
            ]
            assert [e.SerializeToString() for e in seen] == [e.SerializeToString() for e in over_grpc]
    finally:
        await web.close()


def browser_handle(joined: spb.JoinMatchResponse, match_id: str) -> Any:
    from ziggurat_client.client import MatchHandle

    return MatchHandle(match_id=match_id, seat=joined.seat, token=joined.token)


async def test_refusals_carry_status_and_reason(served: tuple[ZigguratServer, str, str]) -> None:
    _, _, base = served
    web = Web(base, json=True)
    try:
        cases: list[tuple[str, Any, str | None, Code, str]] = [
            ("GetMatch", spb.GetMatchRequest(match_id="nope"), None, Code.NOT_FOUND, "MATCH_NOT_FOUND"),
            (
                "CreateMatch",
                spb.CreateMatchRequest(config=game_pb2.GameConfig(game=game_pb2.GAME_PYLOS, seats=3)),
                None,
                Code.INVALID_ARGUMENT,
                "INVALID_CONFIG",
            ),
        ]
        created = await web.call("CreateMatch", spb.CreateMatchRequest(config=PYLOS))
        match_id = created.match.match_id
        cases += [
            (
                "SubmitMove",
                spb.SubmitMoveRequest(match_id=match_id, move="1a1"),
                None,
                Code.UNAUTHENTICATED,
                "MISSING_TOKEN",
            ),
            (
                "SubmitMove",
                spb.SubmitMoveRequest(match_id=match_id, move="1a1"),
                "forged",
                Code.PERMISSION_DENIED,
                "BAD_TOKEN",
            ),
            (
                "AddBot",
                spb.AddBotRequest(match_id=match_id, bot="nobody"),
                None,
                Code.INVALID_ARGUMENT,
                "UNKNOWN_BOT",
            ),
            (
                "GetMatchRecord",
                spb.GetMatchRecordRequest(match_id=match_id),
                None,
                Code.FAILED_PRECONDITION,
                "NOT_FINISHED",
            ),
        ]
        for name, request, token, code, reason in cases:
            with pytest.raises(ConnectError) as refused:
                await web.call(name, request, token)
            assert (refused.value.code, _reason(refused.value)) == (code, reason), name
        # A stream refused before its first message: the error ends the stream.
        with pytest.raises(ConnectError) as refused:
            async for _ in web.stream("WatchMatch", spb.WatchMatchRequest(match_id="nope")):
                pass
        assert (refused.value.code, _reason(refused.value)) == (Code.NOT_FOUND, "MATCH_NOT_FOUND")
        # Nothing changed: the match still waits with both seats open.
        match = (await web.call("GetMatch", spb.GetMatchRequest(match_id=match_id))).match
        assert match.status == match_pb2.MATCH_STATUS_WAITING
        assert [s.state for s in match.seats] == [match_pb2.SEAT_STATE_OPEN] * 2
    finally:
        await web.close()


async def test_a_server_with_no_tournament_says_so_to_the_lobby(
    served: tuple[ZigguratServer, str, str],
) -> None:
    """The lobby asks every server for its tournament: ``ziggurat serve`` answers with none
    (not ``unimplemented``, an HTTP 404 in every browser's console); gRPC is unchanged."""
    _, address, base = served
    infos = method_infos(TOURNAMENT_SERVICE)
    for codec in (google_protobuf_binary_codec(), google_protobuf_json_codec()):
        web = ConnectClient(base, codec=codec)
        try:
            listed = await web.execute_unary(
                request=tpb.ListTournamentsRequest(), method=infos["ListTournaments"]
            )
            assert list(listed.tournaments) == []
            with pytest.raises(ConnectError) as refused:
                await web.execute_unary(
                    request=tpb.GetTournamentRequest(tournament_id="t1"), method=infos["GetTournament"]
                )
            assert (refused.value.code, _reason(refused.value)) == (Code.NOT_FOUND, "TOURNAMENT_NOT_FOUND")
        finally:
            await web.close()
    async with grpc.aio.insecure_channel(address) as channel:
        with pytest.raises(grpc.aio.AioRpcError) as unserved:
            await tgrpc.TournamentServiceStub(channel).ListTournaments(tpb.ListTournamentsRequest())
        assert unserved.value.code() == grpc.StatusCode.UNIMPLEMENTED


async def test_a_browser_stream_counts_as_a_connected_seat(served: tuple[ZigguratServer, str, str]) -> None:
    server, _, base = served
    web = Web(base)
    try:
        created = await web.call("CreateMatch", spb.CreateMatchRequest(config=PYLOS))
        match_id = created.match.match_id
        joined = await web.call("JoinMatch", spb.JoinMatchRequest(match_id=match_id, player_name="tab"))
        first = asyncio.Event()

        async def watch() -> None:
            async for _ in web.stream("WatchMatch", spb.WatchMatchRequest(match_id=match_id), joined.token):
                first.set()

        watching = asyncio.create_task(watch())
        await asyncio.wait_for(first.wait(), 10)
        match = server.manager.get(match_id)
        assert match.presence(joined.seat - 1) == "connected"
        watching.cancel()  # the tab goes away: the HTTP request is dropped
        with contextlib.suppress(asyncio.CancelledError, ConnectError):  # the client says CANCELED
            await watching
        for _ in range(250):
            if match.presence(joined.seat - 1) != "connected":
                break
            await asyncio.sleep(0.02)
        assert match.presence(joined.seat - 1) == "disconnected"
    finally:
        await web.close()


async def test_list_matches_over_connect_in_both_codecs(served: tuple[ZigguratServer, str, str]) -> None:
    """ListMatches answers with summaries serialized once for gRPC; Connect sends them too."""
    _, _, base = served
    for json_codec in (False, True):
        web = Web(base, json=json_codec)
        try:
            created = await web.call("CreateMatch", spb.CreateMatchRequest(config=PYLOS))
            listed = await web.call("ListMatches", spb.ListMatchesRequest(page_size=10))
            assert created.match.match_id in [m.match_id for m in listed.matches]
            mine = next(m for m in listed.matches if m.match_id == created.match.match_id)
            assert mine.status == match_pb2.MATCH_STATUS_WAITING and len(mine.seats) == 2
        finally:
            await web.close()


async def test_a_browser_invites_a_connected_remote_bot(served: tuple[ZigguratServer, str, str]) -> None:
    """ListBots and InviteBot over Connect reach the gRPC-connected bot (one registry); the bot
    gets its Assignment on its ConnectBot stream; a refusal carries the reason; ConnectBot itself
    is not served to browsers."""
    _, address, base = served
    web = Web(base)
    channel = grpc.aio.insecure_channel(address)
    try:
        bot_stream = bgrpc.BotServiceStub(channel).ConnectBot(
            bpb.ConnectBotRequest(name="robo", games=[game_pb2.GAME_PYLOS]),
            metadata=(("authorization", "Bearer robo-token"),),
        )
        first = await bot_stream.read()
        assert first.registered.name == "robo"
        listed = await web.call("ListBots", bpb.ListBotsRequest())
        assert [(b.name, list(b.games), b.active_matches) for b in listed.bots] == [
            ("robo", [game_pb2.GAME_PYLOS], 0)
        ]
        created = await web.call("CreateMatch", spb.CreateMatchRequest(config=PYLOS))
        match_id = created.match.match_id
        person = await web.call("JoinMatch", spb.JoinMatchRequest(match_id=match_id, player_name="ada"))
        creator = created.creator_token
        invite = bpb.InviteBotRequest(match_id=match_id, bot_name="robo")
        for token, refusal in [
            (None, (Code.UNAUTHENTICATED, "MISSING_TOKEN")),  # only the match's creator invites
            (person.token, (Code.PERMISSION_DENIED, "BAD_TOKEN")),
        ]:
            with pytest.raises(ConnectError) as refused:
                await web.call("InviteBot", invite, token)
            assert (refused.value.code, _reason(refused.value)) == refusal
        with pytest.raises(ConnectError) as refused:
            await web.call("InviteBot", bpb.InviteBotRequest(match_id=match_id, bot_name="nobody"), creator)
        assert (refused.value.code, _reason(refused.value)) == (Code.FAILED_PRECONDITION, "BOT_NOT_CONNECTED")
        invited = await web.call("InviteBot", invite, creator)
        assert invited.seat == 3 - person.seat
        assert invited.match.status == match_pb2.MATCH_STATUS_ACTIVE
        assignment = (await asyncio.wait_for(bot_stream.read(), 10)).assignment
        assert (assignment.match_id, assignment.seat) == (match_id, invited.seat)
        assert assignment.token and assignment.token != person.token
        # The answer to the browser never carries the bot's seat token.
        assert assignment.token.encode() not in invited.SerializeToString()
        listed = await web.call("ListBots", bpb.ListBotsRequest())
        assert listed.bots[0].active_matches == 1
        # A bot's own stream is gRPC only: over Connect it is not there.
        connect_bot = method_infos(BOT_SERVICE)["ConnectBot"]
        with pytest.raises(ConnectError) as missing:
            async for _ in web.client.execute_server_stream(
                request=bpb.ConnectBotRequest(name="other"), method=connect_bot
            ):
                pass
        assert missing.value.code == Code.UNIMPLEMENTED
        # Nor is the operator's AdminService.
        admin = apb.DESCRIPTOR.services_by_name["AdminService"]
        abort = method_infos(admin)["AbortMatch"]
        with pytest.raises(ConnectError) as missing:
            await web.client.execute_unary(request=apb.AbortMatchRequest(match_id=match_id), method=abort)
        assert missing.value.code == Code.UNIMPLEMENTED
        assert (await web.call("GetMatch", spb.GetMatchRequest(match_id=match_id))).match.status == (
            match_pb2.MATCH_STATUS_ACTIVE
        )
        bot_stream.cancel()
    finally:
        await channel.close()
        await web.close()
