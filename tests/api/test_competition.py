"""Competition mode on a real server: every method on every listener, with every credential.

A ``ZigguratServer`` started with ``competition=True`` serves a Unix socket, a gRPC port and a
web port on loopback; two finished matches (their seats taken in-process, as a tournament's
organiser does) and a pre-registered bot name give the credentials: no token, a seat token of
the match asked about, a seat token of another match, a bot token. Each call of each method
of :data:`ziggurat.api.competition.POLICY` is made on each listener with each credential,
and its answer is checked against the cell's rule — so the table that ``docs/tournaments.md``
prints (checked against ``POLICY`` at the end of this file) is what the server does.
"""

from __future__ import annotations

import asyncio
import re
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from connectrpc.client import ConnectClient
from connectrpc.compat import google_protobuf_binary_codec
from connectrpc.errors import ConnectError
from google.protobuf import symbol_database
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import Message
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2

from ziggurat.api.competition import POLICY, Listener, Rule
from ziggurat.core.match import Match, hash_token
from ziggurat.core.timecontrol import TimeControl
from ziggurat.hosting.server import ExtraService, ServeOptions, ZigguratServer
from ziggurat.v1 import admin_service_pb2, bot_service_pb2, game_pb2, match_service_pb2
from ziggurat.v1 import arena_service_pb2 as apb
from ziggurat.v1 import arena_service_pb2_grpc as agrpc
from ziggurat.v1 import tournament_service_pb2 as tpb
from ziggurat.v1 import tournament_service_pb2_grpc as tgrpc
from ziggurat.web.connect import method_infos
from ziggurat.wire.errors import error_reason

ROOT = Path(__file__).resolve().parents[2]
REASON = "NOT_ALLOWED_IN_COMPETITION"
BOT_NAME = "house/greedy"
BOT_TOKEN = "a-bot-token-the-organiser-issued"
TOURNAMENT = tpb.DESCRIPTOR.services_by_name["TournamentService"]
ARENA = apb.DESCRIPTOR.services_by_name["ArenaService"]
SERVICES: list[ServiceDescriptor] = [
    match_service_pb2.DESCRIPTOR.services_by_name["MatchService"],
    bot_service_pb2.DESCRIPTOR.services_by_name["BotService"],
    admin_service_pb2.DESCRIPTOR.services_by_name["AdminService"],
    TOURNAMENT,
    ARENA,
    health_pb2.DESCRIPTOR.services_by_name["Health"],
    reflection_pb2.DESCRIPTOR.services_by_name["ServerReflection"],
]
CALL_SECONDS = 5.0


class _Tournaments(tgrpc.TournamentServiceServicer):
    """A stand-in TournamentService: the policy, not the service, is under test here."""

    async def ListTournaments(self, request: Any, context: Any) -> tpb.ListTournamentsResponse:
        return tpb.ListTournamentsResponse()

    async def GetTournament(self, request: Any, context: Any) -> tpb.GetTournamentResponse:
        return tpb.GetTournamentResponse()


class _Arena(agrpc.ArenaServiceServicer):
    """A stand-in ArenaService: the policy, not the service, is under test here."""

    async def GetArena(self, request: Any, context: Any) -> apb.GetArenaResponse:
        return apb.GetArenaResponse()

    async def GetEntrant(self, request: Any, context: Any) -> apb.GetEntrantResponse:
        return apb.GetEntrantResponse()

    async def ListArenaGames(self, request: Any, context: Any) -> apb.ListArenaGamesResponse:
        return apb.ListArenaGamesResponse()

    async def RegisterEntrant(self, request: Any, context: Any) -> apb.RegisterEntrantResponse:
        return apb.RegisterEntrantResponse()


@dataclass
class Competing:
    server: ZigguratServer
    socket: str
    port: str
    web: str
    target: str  # the match every call asks about
    own: str  # a seat token of the target match
    other: str  # a seat token of another match


def _finished_match(server: ZigguratServer) -> tuple[Match, str]:
    """A match created and seated in-process (as the organiser does), then resigned: one token."""
    match = server.manager.create("pylos", 2, {}, TimeControl(), "lot")
    token, _ = match.join("one", None)
    match.join("two", None)
    match.resign(0)
    assert match.status == "finished"
    return match, token


@pytest.fixture
async def competing(tmp_path: Path) -> AsyncIterator[Competing]:
    socket = str(tmp_path / "s.sock")
    server = ZigguratServer(
        ServeOptions(
            host="127.0.0.1",
            port=0,
            http_port=0,
            db_path=str(tmp_path / "c.db"),
            unix_socket=socket,
            grace_seconds=0.2,
            competition=True,
        )
    )
    server.add_service(
        ExtraService(TOURNAMENT, _Tournaments(), tgrpc.add_TournamentServiceServicer_to_server)
    )
    server.add_service(ExtraService(ARENA, _Arena(), agrpc.add_ArenaServiceServicer_to_server))
    port = await server.start()
    server.preregister_bot(BOT_NAME, hash_token(BOT_TOKEN))
    target, own = _finished_match(server)
    _, other = _finished_match(server)
    yield Competing(
        server,
        f"unix:{socket}",
        f"127.0.0.1:{port}",
        f"http://127.0.0.1:{server.http_port}",
        target.match_id,
        own,
        other,
    )
    await server.stop()


def _request(method: str, match_id: str, bot_name: str) -> Message:
    """A request for ``method`` that would do its work if nothing stood in the way."""
    service, name = method.lstrip("/").split("/")
    descriptor = next(m for s in SERVICES if s.full_name == service for m in s.methods if m.name == name)
    message: Message = symbol_database.Default().GetSymbol(descriptor.input_type.full_name)()
    fields = message.DESCRIPTOR.fields_by_name
    if "match_id" in fields:
        setattr(message, "match_id", match_id)  # noqa: B010 - a generic Message to mypy
    if isinstance(message, match_service_pb2.CreateMatchRequest):
        message.config.CopyFrom(game_pb2.GameConfig(game=game_pb2.GAME_PYLOS, seats=2))
    if isinstance(message, match_service_pb2.JoinMatchRequest):
        message.player_name = "intruder"
    if isinstance(message, match_service_pb2.AddBotRequest):
        message.bot = "random"
    if isinstance(message, bot_service_pb2.ConnectBotRequest):
        message.name = bot_name
    if isinstance(message, bot_service_pb2.InviteBotRequest):
        message.bot_name = BOT_NAME
    if isinstance(message, match_service_pb2.SubmitMoveRequest):
        message.move = "a1"
    if isinstance(message, tpb.GetTournamentRequest):
        message.tournament_id = "t"
    if isinstance(message, reflection_pb2.ServerReflectionRequest):
        message.list_services = ""
    return message


def _is_stream(method: str) -> tuple[bool, bool]:
    service, name = method.lstrip("/").split("/")
    descriptor = next(m for s in SERVICES if s.full_name == service for m in s.methods if m.name == name)
    return descriptor.client_streaming, descriptor.server_streaming


async def _grpc_call(target: str, method: str, request: Message, token: str | None) -> str | None:
    """The call on a gRPC listener: None when it was answered (first message or OK), else its
    reason (or the status name when it has none)."""
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    serialize = type(request).SerializeToString
    client_streaming, server_streaming = _is_stream(method)
    async with grpc.aio.insecure_channel(target) as channel:
        call: Any
        if client_streaming:
            call = channel.stream_stream(method, request_serializer=serialize)(
                iter([request]), metadata=metadata
            )
        elif server_streaming:
            call = channel.unary_stream(method, request_serializer=serialize)(request, metadata=metadata)
        else:
            call = channel.unary_unary(method, request_serializer=serialize)(request, metadata=metadata)
        try:
            if client_streaming or server_streaming:
                await asyncio.wait_for(call.read(), CALL_SECONDS)
            else:
                await asyncio.wait_for(call, CALL_SECONDS)
        except grpc.aio.AioRpcError as error:
            return error_reason(error) or error.code().name
        finally:
            call.cancel()
    return None


def _connect_reason(error: ConnectError) -> str:
    for detail in error.details:
        if detail.type_name == "google.rpc.ErrorInfo":
            return str(error_details_pb2.ErrorInfo.FromString(detail.message_bytes).reason)
    return error.code.name


async def _web_call(base: str, method: str, request: Message, token: str | None) -> str | None:
    """The call over Connect on the web port, answered as :func:`_grpc_call` answers."""
    service, name = method.lstrip("/").split("/")
    descriptor = next(s for s in SERVICES if s.full_name == service)
    info = method_infos(descriptor)[name]
    headers = {"authorization": f"Bearer {token}"} if token else None
    client = ConnectClient(base, codec=google_protobuf_binary_codec())
    try:
        if info.stream_type.name == "SERVER_STREAM":
            stream = client.execute_server_stream(request=request, method=info, headers=headers)
            async with asyncio.timeout(CALL_SECONDS):
                async for _ in stream:
                    break
            await stream.aclose()  # type: ignore[attr-defined]
        else:
            await asyncio.wait_for(
                client.execute_unary(request=request, method=info, headers=headers), CALL_SECONDS
            )
    except ConnectError as error:
        return _connect_reason(error)
    finally:
        await client.close()
    return None


def _web_status(base: str, method: str) -> int:
    """The HTTP status of a Connect POST to ``method`` on the web port (404/405: not served)."""
    post = urllib.request.Request(
        base + method, data=b"{}", method="POST", headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(post, timeout=CALL_SECONDS) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def _expect_refused(rule: Rule, credential: str) -> bool:
    """Whether the cell's rule refuses a call carrying ``credential`` (none/own/other/bot)."""
    if rule in (Rule.OPEN, Rule.SEAT):
        return False
    if rule == Rule.OWN_SEAT:
        return credential != "own"
    if rule == Rule.SEAT_OR_AUDIENCE:
        return credential not in ("none", "own")
    if rule == Rule.AUDIENCE:
        return credential != "none"
    if rule == Rule.ANY_SEAT:
        return credential not in ("own", "other")
    assert rule == Rule.REFUSED, rule
    return True


async def test_every_cell_of_the_policy_is_what_the_server_does(competing: Competing) -> None:
    c = competing
    tokens = {"none": None, "own": c.own, "other": c.other, "bot": BOT_TOKEN}
    matches_before = len(c.server.store.match_ids())
    checked = 0
    for method, row in POLICY.items():
        for listener, rule in row.items():
            if rule == Rule.NOT_SERVED:
                assert listener == Listener.WEB, (method, listener)
                assert await asyncio.to_thread(_web_status, c.web, method) in (404, 405), method
                checked += 1
                continue
            if rule == Rule.REGISTERED_BOT:
                # its own name with its token: registered; a name the tournament did not register
                # (also with a token the server has never seen): refused before the registry
                assert await _grpc_call(c.socket if listener == Listener.SOCKET else c.port, method,
                                        _request(method, c.target, BOT_NAME), BOT_TOKEN) is None  # fmt: skip
                squatter = _request(method, c.target, "squatter")
                target = c.socket if listener == Listener.SOCKET else c.port
                assert await _grpc_call(target, method, squatter, "a-fresh-token-0123456789") == REASON
                checked += 2
                continue
            for credential, token in tokens.items():
                request = _request(method, c.target, BOT_NAME)
                if listener == Listener.WEB:
                    answer = await _web_call(c.web, method, request, token)
                else:
                    answer = await _grpc_call(
                        c.socket if listener == Listener.SOCKET else c.port, method, request, token
                    )
                where = f"{method} on the {listener.value} with {credential} token: {answer}"
                if _expect_refused(rule, credential):
                    assert answer == REASON, where
                else:
                    assert answer != REASON, where
                checked += 1
    assert checked > 250
    # Nothing a refused call asked for happened.
    assert len(c.server.store.match_ids()) == matches_before
    assert c.server.bots.connected.keys() <= {BOT_NAME}


async def test_allowed_calls_answer_in_full(competing: Competing) -> None:
    """What the table allows works: a participant reads its own seat on the socket, the
    audience reads on the ports, a refusal says why."""
    c = competing
    get = match_service_pb2.GetMatchRequest(match_id=c.target)
    own = (("authorization", f"Bearer {c.own}"),)
    async with grpc.aio.insecure_channel(c.socket) as channel:
        stub = channel.unary_unary(
            "/ziggurat.v1.MatchService/GetMatch",
            request_serializer=match_service_pb2.GetMatchRequest.SerializeToString,
            response_deserializer=match_service_pb2.GetMatchResponse.FromString,
        )
        seen = await stub(get, metadata=own)
        assert seen.match.match_id == c.target and seen.match.revealed_seed  # finished: its seed is out
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub(get)
        assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert error_reason(refused.value) == REASON
        assert "seat token of that match" in (refused.value.details() or "")
    async with grpc.aio.insecure_channel(c.port) as channel:
        listing = channel.unary_unary(
            "/ziggurat.v1.MatchService/ListMatches",
            request_serializer=match_service_pb2.ListMatchesRequest.SerializeToString,
            response_deserializer=match_service_pb2.ListMatchesResponse.FromString,
        )
        page = await listing(match_service_pb2.ListMatchesRequest())
        assert c.target in {m.match_id for m in page.matches}
        create = channel.unary_unary(
            "/ziggurat.v1.MatchService/CreateMatch",
            request_serializer=match_service_pb2.CreateMatchRequest.SerializeToString,
        )
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await create(_request("/ziggurat.v1.MatchService/CreateMatch", "", ""))
        assert "organiser creates and seats every match" in (refused.value.details() or "")


async def test_a_server_not_in_competition_mode_keeps_every_call(tmp_path: Path) -> None:
    """``ziggurat serve`` is not a competition server: the same socket creates and lists."""
    socket = str(tmp_path / "s.sock")
    server = ZigguratServer(
        ServeOptions(
            host="127.0.0.1", port=0, db_path=str(tmp_path / "z.db"), unix_socket=socket, grace_seconds=0.2
        )
    )
    await server.start()
    try:
        assert server.competition is None
        for method in ("/ziggurat.v1.MatchService/CreateMatch", "/ziggurat.v1.MatchService/ListMatches",
                       "/ziggurat.v1.BotService/ListBots"):  # fmt: skip
            assert await _grpc_call(f"unix:{socket}", method, _request(method, "", ""), None) is None
    finally:
        await server.stop()


def test_the_table_names_every_method_served() -> None:
    """A method the table does not name is refused: every method served must be a decision."""
    served = {f"/{service.full_name}/{method.name}" for service in SERVICES for method in service.methods}
    assert set(POLICY) == served


def _doc_table() -> dict[str, dict[str, str]]:
    """docs/tournaments.md's table under "What a participant can do": call -> column -> cell."""
    text = (ROOT / "docs" / "tournaments.md").read_text()
    section = text.split("## What a participant can do", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows: dict[str, dict[str, str]] = {}
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = dict(zip(header[1:], cells[1:], strict=True))
    return rows


def test_the_docs_table_is_the_policy() -> None:
    documented = _doc_table()
    expected = {
        re.sub(r"^/(?:[a-z0-9]+\.)+", "", method).replace("/", "."): {
            listener.value: rule.value for listener, rule in row.items()
        }
        for method, row in POLICY.items()
    }
    assert documented == expected


def _live_match(server: ZigguratServer) -> tuple[Match, dict[int, str]]:
    """A match created and seated in-process, not yet played: its seat tokens by seat."""
    match = server.manager.create("pylos", 2, {}, TimeControl(), "lot")
    tokens = [match.join(name, None)[0] for name in ("one", "two")]
    return match, {match.seat_for_token(token): token for token in tokens}


async def test_one_participant_cannot_spend_another_s_budget(tmp_path: Path) -> None:
    """Every sandboxed program calls from the same socket peer: counted by address, one of them
    held the budget of all (issue 21). Counted by credential, a hog opening streams with its own
    seat token stops at 32 — below the address cap, which would otherwise let it take everything
    — while another participant plays its seat beside it, and a hog polling reads is slowed down
    alone."""
    socket = str(tmp_path / "s.sock")
    server = ZigguratServer(
        ServeOptions(
            host="127.0.0.1",
            port=0,
            db_path=str(tmp_path / "c.db"),
            unix_socket=socket,
            grace_seconds=0.2,
            competition=True,
            max_streams_per_address=40,
        )
    )
    await server.start()
    hogs_match, hog_tokens = _live_match(server)
    players_match, player_tokens = _live_match(server)
    hog = (("authorization", f"Bearer {hog_tokens[0]}"),)
    async with grpc.aio.insecure_channel(f"unix:{socket}") as channel:
        # Health.Watch: no per-seat or per-match cap of its own, unlike WatchMatch and Play.
        watch = channel.unary_stream(
            "/grpc.health.v1.Health/Watch",
            request_serializer=health_pb2.HealthCheckRequest.SerializeToString,
            response_deserializer=health_pb2.HealthCheckResponse.FromString,
        )
        held: list[Any] = []
        refusals: list[str | None] = []
        try:
            for _ in range(60):
                call = watch(health_pb2.HealthCheckRequest(), metadata=hog)
                try:
                    await asyncio.wait_for(call.read(), CALL_SECONDS)
                    held.append(call)
                except grpc.aio.AioRpcError as error:
                    refusals.append(error_reason(error))
            assert len(held) == 32
            assert set(refusals) == {"TOO_MANY_STREAMS"}

            # Another participant plays its seat on the same socket meanwhile.
            mover = players_match.rules.to_move(players_match.state)
            assert mover is not None
            token = player_tokens[mover]
            play = channel.stream_stream(
                "/ziggurat.v1.MatchService/Play",
                request_serializer=match_service_pb2.PlayRequest.SerializeToString,
                response_deserializer=match_service_pb2.PlayResponse.FromString,
            )
            move = players_match.rules.legal_moves(players_match.state)[0]
            requests: asyncio.Queue[match_service_pb2.PlayRequest | None] = asyncio.Queue()
            await requests.put(match_service_pb2.PlayRequest(match_id=players_match.match_id, move=move))

            async def sent() -> AsyncIterator[match_service_pb2.PlayRequest]:
                while (request := await requests.get()) is not None:
                    yield request

            stream = play(sent(), metadata=(("authorization", f"Bearer {token}"),))
            async with asyncio.timeout(CALL_SECONDS):
                while players_match.moves == 0:
                    response = await stream.read()
                    assert not response.move_rejected.reason, response
            await requests.put(None)
            stream.cancel()
            assert players_match.moves == 1

            # A hog polling its match (its streams closed) is slowed down alone.
            for call in held:
                call.cancel()
            async with asyncio.timeout(CALL_SECONDS):
                while server.guard.open_calls():
                    await asyncio.sleep(0.01)
            get = channel.unary_unary(
                "/ziggurat.v1.MatchService/GetMatch",
                request_serializer=match_service_pb2.GetMatchRequest.SerializeToString,
                response_deserializer=match_service_pb2.GetMatchResponse.FromString,
            )
            polled: list[str | None] = []
            for _ in range(150):
                try:
                    await get(match_service_pb2.GetMatchRequest(match_id=hogs_match.match_id), metadata=hog)
                    polled.append(None)
                except grpc.aio.AioRpcError as error:
                    polled.append(error_reason(error))
            assert polled[0] is None and set(polled) == {None, "RATE_LIMITED"}
            other = (("authorization", f"Bearer {player_tokens[mover]}"),)
            seen = await get(
                match_service_pb2.GetMatchRequest(match_id=players_match.match_id), metadata=other
            )
            assert seen.match.match_id == players_match.match_id
        finally:
            for call in held:
                call.cancel()
            await server.stop()
