"""One API on both ports: every refusal of the gRPC suite, replayed over Connect in binary and JSON.

Each row of :data:`CASES` is a bad request (the refusals of ``tests/api/test_bad_input.py``
and ``test_decode_errors.py``, the sizes of ``--max-message-bytes``): it is sent to a real
server's gRPC port as raw bytes and to its web port as ``application/proto`` and as
``application/json`` (``application/connect+…`` for WatchMatch), and the three answers must
be the same status, the same ErrorInfo reason and the same message — and the matches the
request named must be byte for byte what they were. :data:`JSON_ONLY` holds what only JSON
can say (a misspelt enum name, a body that is no JSON object): refused with the reason gRPC
gives the nearest thing it can be sent (an enum number it does not know, corrupt bytes).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from tests.servers import kabaleo_config, pylos_config
from tests.web.connect_wire import Http, Refusal, envelope, refusal
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import bot_service_pb2 as bpb
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.wire.errors import error_reason
from ziggurat_client import ZigguratClient
from ziggurat_client.client import MatchHandle

MATCH = "/ziggurat.v1.MatchService/"
BOT = "/ziggurat.v1.BotService/"
STREAMS = {"WatchMatch"}


@dataclass
class World:
    """Matches in known states, made over gRPC when a case first needs them."""

    client: ZigguratClient
    made: dict[str, Any] = field(default_factory=dict)

    async def _once(self, key: str, make: Callable[[], Awaitable[Any]]) -> Any:
        if key not in self.made:
            self.made[key] = await make()
        return self.made[key]

    async def waiting(self) -> tuple[str, MatchHandle, str]:
        """A chosen-seat Kabaleo match for 3 with seat 2 taken: (id, seat 2's handle, creator token)."""

        async def make() -> tuple[str, MatchHandle, str]:
            created = await self.client.stub.CreateMatch(
                spb.CreateMatchRequest(
                    config=kabaleo_config(3), seat_assignment=match_pb2.SEAT_ASSIGNMENT_CHOSEN
                )
            )
            second = await self.client.join(created.match.match_id, "second", 2)
            return created.match.match_id, second, created.creator_token

        result: tuple[str, MatchHandle, str] = await self._once("waiting", make)
        return result

    async def by_lot(self) -> tuple[str]:
        """A Pylos match whose seats are drawn by lot, nobody seated: (id,)."""

        async def make() -> tuple[str]:
            created = await self.client.stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
            return (created.match.match_id,)

        result: tuple[str] = await self._once("by_lot", make)
        return result

    async def started(self) -> tuple[str, MatchHandle, MatchHandle, spb.GetMatchResponse, str]:
        """A started Pylos match: (id, the mover, the other seat, the mover's view, creator token)."""

        async def make() -> tuple[str, MatchHandle, MatchHandle, Any, str]:
            created = await self.client.stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
            match_id = created.match.match_id
            handles = [await self.client.join(match_id, f"p{i}") for i in range(2)]
            to_move = (await self.client.get_match(match_id)).view.to_move
            mover = next(h for h in handles if h.seat == to_move)
            other = next(h for h in handles if h.seat != to_move)
            view = (await self.client.get_match(match_id, mover)).view
            return match_id, mover, other, view, created.creator_token

        result: tuple[str, MatchHandle, MatchHandle, Any, str] = await self._once("started", make)
        return result

    async def finished(self) -> tuple[str, MatchHandle]:
        """A Pylos match its first seat resigned: (id, a seat's handle)."""

        async def make() -> tuple[str, MatchHandle]:
            created = await self.client.stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
            match_id = created.match.match_id
            handles = [await self.client.join(match_id, f"f{i}") for i in range(2)]
            await self.client.resign(handles[0])
            return match_id, handles[1]

        result: tuple[str, MatchHandle] = await self._once("finished", make)
        return result

    def match_ids(self) -> list[str]:
        return [value[0] for value in self.made.values()]


Request = Message | bytes  # a message, or raw bytes that are not one
Build = Callable[[World], Awaitable[tuple[Request, str | None]]]  # (request, token)


@dataclass(frozen=True)
class Case:
    method: str
    build: Build
    code: grpc.StatusCode
    reason: str | None


def plain(request: Request, token: str | None = None) -> Build:
    async def build(world: World) -> tuple[Request, str | None]:
        return request, token

    return build


def create(config: game_pb2.GameConfig | None = None, **fields: Any) -> Build:
    return plain(spb.CreateMatchRequest(config=config or pylos_config(), **fields))


def join_waiting(name: str = "third", seat: int = 0) -> Build:
    async def build(world: World) -> tuple[Request, str | None]:
        match_id, _, _ = await world.waiting()
        return spb.JoinMatchRequest(match_id=match_id, player_name=name, seat=seat), None

    return build


def join_by_lot(seat: int) -> Build:
    async def build(world: World) -> tuple[Request, str | None]:
        (match_id,) = await world.by_lot()
        return spb.JoinMatchRequest(match_id=match_id, player_name="picky", seat=seat), None

    return build


def join_started(seat: int = 0) -> Build:
    async def build(world: World) -> tuple[Request, str | None]:
        match_id, *_ = await world.started()
        return spb.JoinMatchRequest(match_id=match_id, player_name="late", seat=seat), None

    return build


def move(text: Callable[[Any], str], *, who: str = "mover", ply: Callable[[Any], int] = lambda v: 0) -> Build:
    """A SubmitMove in the started match, by the mover, the other seat, nobody or a forger."""

    async def build(world: World) -> tuple[Request, str | None]:
        match_id, mover, other, view, _ = await world.started()
        token = {"mover": mover.token, "other": other.token, "nobody": None, "forger": "forged"}[who]
        return spb.SubmitMoveRequest(match_id=match_id, move=text(view), ply=ply(view)), token

    return build


def in_waiting(make: Callable[[str], Message], *, seat_token: bool = True) -> Build:
    async def build(world: World) -> tuple[Request, str | None]:
        match_id, second, _ = await world.waiting()
        return make(match_id), second.token if seat_token else None

    return build


def in_waiting_as_creator(make: Callable[[str], Message]) -> Build:
    """A request about the waiting match, with its creator token (InviteBot's credential)."""

    async def build(world: World) -> tuple[Request, str | None]:
        match_id, _, creator = await world.waiting()
        return make(match_id), creator

    return build


def in_finished(make: Callable[[str], Message]) -> Build:
    async def build(world: World) -> tuple[Request, str | None]:
        match_id, handle = await world.finished()
        return make(match_id), handle.token

    return build


def cancel_started() -> Build:
    async def build(world: World) -> tuple[Request, str | None]:
        match_id, *_, creator = await world.started()
        return spb.CancelMatchRequest(match_id=match_id), creator

    return build


def watch_past_the_end() -> Build:
    async def build(world: World) -> tuple[Request, str | None]:
        match_id, *_ = await world.started()
        return spb.WatchMatchRequest(match_id=match_id, after_seq=10**9), None

    return build


INVALID = grpc.StatusCode.INVALID_ARGUMENT
PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION
EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED
NOT_FOUND = grpc.StatusCode.NOT_FOUND
UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
DENIED = grpc.StatusCode.PERMISSION_DENIED
KABALEO = game_pb2.GAME_KABALEO
PYLOS = game_pb2.GAME_PYLOS
INVALID_UTF8 = b"\x0a\x02\xff\xfe"  # field 1 (a string) holding bytes that are not UTF-8
TRUNCATED = b"\x0a\x40abc"  # a length running past the end
BAD_WIRE_TYPE = b"\x0f\x01"  # wire type 7 does not exist

CASES: dict[str, Case] = {
    # configurations (test_bad_input.py::test_invalid_config_is_refused and its neighbours)
    "pylos-3-seats": Case(
        "CreateMatch", create(game_pb2.GameConfig(game=PYLOS, seats=3)), INVALID, "INVALID_CONFIG"
    ),
    "pylos-0-seats": Case("CreateMatch", create(game_pb2.GameConfig(game=PYLOS)), INVALID, "INVALID_CONFIG"),
    "kabaleo-0-seats": Case(
        "CreateMatch", create(game_pb2.GameConfig(game=KABALEO)), INVALID, "INVALID_CONFIG"
    ),
    "kabaleo-5-seats": Case("CreateMatch", create(kabaleo_config(5)), INVALID, "INVALID_CONFIG"),
    "game-unspecified": Case("CreateMatch", create(game_pb2.GameConfig(seats=2)), INVALID, "INVALID_CONFIG"),
    "game-unknown": Case(
        "CreateMatch", create(game_pb2.GameConfig(game=99, seats=2)), INVALID, "INVALID_CONFIG"
    ),
    "variant-unknown": Case(
        "CreateMatch",
        create(game_pb2.GameConfig(game=PYLOS, seats=2, pylos=game_pb2.PylosConfig(variant=9))),
        INVALID,
        "INVALID_CONFIG",
    ),
    "deal-unknown": Case(
        "CreateMatch",
        create(game_pb2.GameConfig(game=KABALEO, seats=2, kabaleo=game_pb2.KabaleoConfig(deal=7))),
        INVALID,
        "INVALID_CONFIG",
    ),
    "colours-repeat": Case(
        "CreateMatch",
        create(game_pb2.GameConfig(game=KABALEO, seats=2, kabaleo=game_pb2.KabaleoConfig(colours="RRGB"))),
        INVALID,
        "INVALID_CONFIG",
    ),
    "options-of-the-other-game": Case(
        "CreateMatch",
        create(game_pb2.GameConfig(game=KABALEO, seats=2, pylos=game_pb2.PylosConfig())),
        INVALID,
        "INVALID_CONFIG",
    ),
    "increment-without-base": Case(
        "CreateMatch",
        create(time_control=match_pb2.TimeControl(increment_ms=1000)),
        INVALID,
        "INVALID_CONFIG",
    ),
    "on-timeout-unknown": Case(
        "CreateMatch",
        create(time_control=match_pb2.TimeControl(on_timeout=42)),
        INVALID,
        "INVALID_CONFIG",
    ),
    "seat-assignment-unknown": Case("CreateMatch", create(seat_assignment=3), INVALID, "INVALID_CONFIG"),
    # listing
    "status-filter-unknown": Case(
        "ListMatches", plain(spb.ListMatchesRequest(status=99)), INVALID, "BAD_FILTER"
    ),
    "game-filter-unknown": Case("ListMatches", plain(spb.ListMatchesRequest(game=42)), INVALID, "BAD_FILTER"),
    "page-token-forged": Case(
        "ListMatches", plain(spb.ListMatchesRequest(page_token="not-a-token")), INVALID, "BAD_PAGE_TOKEN"
    ),
    # unknown matches
    "get-unknown-match": Case(
        "GetMatch", plain(spb.GetMatchRequest(match_id="0000000000000000")), NOT_FOUND, "MATCH_NOT_FOUND"
    ),
    "get-long-id": Case(
        "GetMatch", plain(spb.GetMatchRequest(match_id="x" * 10_000)), NOT_FOUND, "MATCH_NOT_FOUND"
    ),
    "join-unknown-match": Case(
        "JoinMatch",
        plain(spb.JoinMatchRequest(match_id="nope", player_name="a")),
        NOT_FOUND,
        "MATCH_NOT_FOUND",
    ),
    "watch-unknown-match": Case(
        "WatchMatch", plain(spb.WatchMatchRequest(match_id="nope")), NOT_FOUND, "MATCH_NOT_FOUND"
    ),
    "record-unknown-match": Case(
        "GetMatchRecord", plain(spb.GetMatchRecordRequest(match_id="nope")), NOT_FOUND, "MATCH_NOT_FOUND"
    ),
    # names and seats (test_bad_player_name, test_chosen_seat_taken_and_out_of_range, ...)
    "name-empty": Case("JoinMatch", join_waiting(""), INVALID, "BAD_NAME"),
    "name-blank": Case("JoinMatch", join_waiting("   "), INVALID, "BAD_NAME"),
    "name-too-long": Case("JoinMatch", join_waiting("x" * 65), INVALID, "BAD_NAME"),
    "name-nul": Case("JoinMatch", join_waiting("bad\x00name"), INVALID, "BAD_NAME"),
    "name-bidi": Case("JoinMatch", join_waiting("evil\u202ename"), INVALID, "BAD_NAME"),
    "seat-out-of-range": Case("JoinMatch", join_waiting(seat=4), INVALID, "BAD_SEAT"),
    "seat-taken": Case("JoinMatch", join_waiting(seat=2), PRECONDITION, "SEAT_TAKEN"),
    "seat-by-lot": Case("JoinMatch", join_by_lot(seat=1), INVALID, "SEAT_BY_LOT"),
    "match-full": Case("JoinMatch", join_started(), PRECONDITION, "MATCH_FULL"),
    # moves (test_bad_moves_are_refused_and_change_nothing)
    "move-without-token": Case(
        "SubmitMove",
        move(lambda v: v.legal_moves[0], who="nobody"),
        grpc.StatusCode.UNAUTHENTICATED,
        "MISSING_TOKEN",
    ),
    "move-forged-token": Case(
        "SubmitMove",
        move(lambda v: v.legal_moves[0], who="forger"),
        grpc.StatusCode.PERMISSION_DENIED,
        "BAD_TOKEN",
    ),
    "move-malformed": Case("SubmitMove", move(lambda v: "1e1"), INVALID, "MALFORMED_MOVE"),
    "move-60000-characters": Case("SubmitMove", move(lambda v: "1" * 60_000), INVALID, "MALFORMED_MOVE"),
    "move-illegal": Case("SubmitMove", move(lambda v: "2a1"), PRECONDITION, "ILLEGAL_MOVE"),
    "move-out-of-turn": Case(
        "SubmitMove", move(lambda v: v.legal_moves[0], who="other"), PRECONDITION, "NOT_YOUR_TURN"
    ),
    "move-stale-ply": Case(
        "SubmitMove", move(lambda v: v.legal_moves[0], ply=lambda v: v.ply + 2), PRECONDITION, "STALE_PLY"
    ),
    "move-not-started": Case(
        "SubmitMove",
        in_waiting(lambda m: spb.SubmitMoveRequest(match_id=m, move="R1")),
        PRECONDITION,
        "NOT_STARTED",
    ),
    "resign-not-started": Case(
        "Resign", in_waiting(lambda m: spb.ResignRequest(match_id=m)), PRECONDITION, "NOT_STARTED"
    ),
    "move-game-over": Case(
        "SubmitMove",
        in_finished(lambda m: spb.SubmitMoveRequest(match_id=m, move="1a1")),
        PRECONDITION,
        "GAME_OVER",
    ),
    "record-not-finished": Case(
        "GetMatchRecord",
        in_waiting(lambda m: spb.GetMatchRecordRequest(match_id=m), seat_token=False),
        PRECONDITION,
        "NOT_FINISHED",
    ),
    "watch-past-the-log": Case("WatchMatch", watch_past_the_end(), grpc.StatusCode.OUT_OF_RANGE, "BAD_SEQ"),
    # cancelling, bots
    "cancel-without-token": Case(
        "CancelMatch",
        in_waiting(lambda m: spb.CancelMatchRequest(match_id=m), seat_token=False),
        grpc.StatusCode.UNAUTHENTICATED,
        "MISSING_TOKEN",
    ),
    "cancel-with-a-seat-token": Case(
        "CancelMatch",
        in_waiting(lambda m: spb.CancelMatchRequest(match_id=m)),
        grpc.StatusCode.PERMISSION_DENIED,
        "BAD_TOKEN",
    ),
    "cancel-started": Case("CancelMatch", cancel_started(), PRECONDITION, "NOT_WAITING"),
    "add-unknown-bot": Case(
        "AddBot",
        in_waiting(lambda m: spb.AddBotRequest(match_id=m, bot="nobody"), seat_token=False),
        INVALID,
        "UNKNOWN_BOT",
    ),
    "invite-unconnected-bot": Case(
        "BotService/InviteBot",
        in_waiting_as_creator(lambda m: bpb.InviteBotRequest(match_id=m, bot_name="nobody")),
        PRECONDITION,
        "BOT_NOT_CONNECTED",
    ),
    "invite-without-the-creator-token": Case(
        "BotService/InviteBot",
        in_waiting(lambda m: bpb.InviteBotRequest(match_id=m, bot_name="nobody"), seat_token=False),
        UNAUTHENTICATED,
        "MISSING_TOKEN",
    ),
    "invite-with-a-seat-token": Case(
        "BotService/InviteBot",
        in_waiting(lambda m: bpb.InviteBotRequest(match_id=m, bot_name="nobody")),
        DENIED,
        "BAD_TOKEN",
    ),
    # sizes (test_oversized_messages): gRPC's own status, no reason
    "move-over-64-kib": Case("SubmitMove", move(lambda v: "B" * (100 * 1024)), EXHAUSTED, None),
    "match-id-over-64-kib": Case(
        "GetMatch", plain(spb.GetMatchRequest(match_id="x" * 70_000)), EXHAUSTED, None
    ),
    "watch-over-64-kib": Case(
        "WatchMatch", plain(spb.WatchMatchRequest(match_id="x" * 70_000)), EXHAUSTED, None
    ),
    # bytes that are not a message (test_decode_errors.py): binary only, JSON cannot carry them
    "join-invalid-utf8": Case("JoinMatch", plain(INVALID_UTF8), INVALID, "MALFORMED_REQUEST"),
    "get-truncated": Case("GetMatch", plain(TRUNCATED), INVALID, "MALFORMED_REQUEST"),
    "create-bad-wire-type": Case("CreateMatch", plain(BAD_WIRE_TYPE), INVALID, "MALFORMED_REQUEST"),
    "list-truncated": Case("ListMatches", plain(TRUNCATED), INVALID, "MALFORMED_REQUEST"),
    "watch-invalid-utf8": Case("WatchMatch", plain(INVALID_UTF8), INVALID, "MALFORMED_REQUEST"),
}


@dataclass
class Ports:
    server: ZigguratServer
    channel: grpc.aio.Channel
    world: World
    http: Http


@pytest.fixture
async def ports(tmp_path: Path) -> AsyncIterator[Ports]:
    server = ZigguratServer(
        ServeOptions(host="127.0.0.1", port=0, http_port=0, db_path=str(tmp_path / "z.db"), grace_seconds=0.3)
    )
    port = await server.start()
    http = Http(f"http://127.0.0.1:{server.http_port}")
    async with (
        grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel,
        ZigguratClient(f"127.0.0.1:{port}") as client,
    ):
        try:
            yield Ports(server, channel, World(client), http)
        finally:
            http.close()
            await server.stop()


def _path(method: str) -> str:
    return BOT + method.split("/")[1] if method.startswith("BotService/") else MATCH + method


async def over_grpc(ports: Ports, method: str, data: bytes, token: str | None) -> Refusal | None:
    """The call on the gRPC port with raw bytes."""
    metadata = (("authorization", f"Bearer {token}"),) if token else None
    try:
        if method in STREAMS:
            call = ports.channel.unary_stream(_path(method))(data, metadata=metadata)
            async for _ in call:
                pass
        else:
            await ports.channel.unary_unary(_path(method))(data, metadata=metadata)
    except grpc.aio.AioRpcError as error:
        return Refusal(error.code().name, error.details() or "", error_reason(error))
    return None


async def over_connect(
    ports: Ports, method: str, body: bytes, codec: str, token: str | None
) -> Refusal | None:
    """The call on the web port, unary or streamed, in ``codec`` (``proto`` or ``json``)."""
    headers = {"authorization": f"Bearer {token}"} if token else None
    stream = method in STREAMS
    kind = f"application/connect+{codec}" if stream else f"application/{codec}"
    answer = await ports.http.post(_path(method), envelope(body) if stream else body, kind, headers)
    return refusal(answer, stream=stream)


async def snapshot(ports: Ports) -> list[bytes]:
    client = ports.world.client
    return [
        (await client.get_match(match_id)).SerializeToString(deterministic=True)
        for match_id in ports.world.match_ids()
    ]


@pytest.mark.parametrize("name", list(CASES))
async def test_the_web_port_refuses_as_the_grpc_port_does(ports: Ports, name: str) -> None:
    case = CASES[name]
    request, token = await case.build(ports.world)
    data = request if isinstance(request, bytes) else request.SerializeToString()
    before = await snapshot(ports)
    grpc_answer = await over_grpc(ports, case.method, data, token)
    assert grpc_answer is not None and (grpc_answer.code, grpc_answer.reason) == (
        case.code.name,
        case.reason,
    ), grpc_answer
    assert grpc_answer.message
    binary = await over_connect(ports, case.method, data, "proto", token)
    assert binary == grpc_answer, f"binary Connect: {binary} vs gRPC: {grpc_answer}"
    if isinstance(request, Message):
        text = json_format.MessageToJson(request).encode()
        over_json = await over_connect(ports, case.method, text, "json", token)
        assert over_json is not None, "JSON Connect accepted what gRPC refused"
        assert (over_json.code, over_json.reason) == (grpc_answer.code, grpc_answer.reason), over_json
        if case.code != EXHAUSTED:  # the size there is the JSON text's, not the protobuf's
            assert over_json.message == grpc_answer.message, over_json
        else:
            assert over_json.message.startswith("SERVER: Received message larger than max ("), over_json
    assert await snapshot(ports) == before, "a refusal changed a match"


@dataclass(frozen=True)
class JsonCase:
    method: str
    body: bytes
    reason: str
    grpc_twin: Request  # what gRPC is sent instead: it must get the same reason
    enum_field: str | None = None  # the field path whose enum name is misspelt


def _config(**fields: Any) -> bytes:
    return json.dumps({"config": {"game": "GAME_PYLOS", "seats": 2, **fields}}).encode()


DEEP = b'{"unknownField": ' + b"[" * 40 + b"]" * 40 + b"}"
JSON_ONLY: dict[str, JsonCase] = {
    "variant-misspelt": JsonCase(
        "CreateMatch",
        _config(pylos={"variant": "PYLOS_VARIANT_ADVANCD"}),
        "INVALID_CONFIG",
        spb.CreateMatchRequest(config=pylos_config(variant=9)),
        "config.pylos.variant",
    ),
    "deal-misspelt": JsonCase(
        "CreateMatch",
        json.dumps(
            {"config": {"game": "GAME_KABALEO", "seats": 2, "kabaleo": {"deal": "KABALEO_DEAL_EQAUL"}}}
        ).encode(),
        "INVALID_CONFIG",
        spb.CreateMatchRequest(config=kabaleo_config(2, deal=7)),
        "config.kabaleo.deal",
    ),
    "game-misspelt": JsonCase(
        "CreateMatch",
        b'{"config": {"game": "GAME_PYLSO", "seats": 2}}',
        "INVALID_CONFIG",
        spb.CreateMatchRequest(config=game_pb2.GameConfig(game=99, seats=2)),
        "config.game",
    ),
    "on-timeout-misspelt": JsonCase(
        "CreateMatch",
        b'{"config": {"game": "GAME_PYLOS", "seats": 2},'
        b' "timeControl": {"perMoveMs": 1000, "onTimeout": "TIMEOUT_POLICY_RANDOM"}}',
        "INVALID_CONFIG",
        spb.CreateMatchRequest(config=pylos_config(), time_control=match_pb2.TimeControl(on_timeout=42)),
        "time_control.on_timeout",
    ),
    "seat-assignment-misspelt (proto field names)": JsonCase(
        "CreateMatch",
        b'{"config": {"game": "GAME_PYLOS", "seats": 2}, "seat_assignment": "SEAT_ASSIGNMENT_CHOOSE"}',
        "INVALID_CONFIG",
        spb.CreateMatchRequest(config=pylos_config(), seat_assignment=3),
        "seat_assignment",
    ),
    "status-filter-misspelt": JsonCase(
        "ListMatches",
        b'{"status": "MATCH_STATUS_NOSUCH"}',
        "BAD_FILTER",
        spb.ListMatchesRequest(status=99),
        "status",
    ),
    "game-filter-misspelt": JsonCase(
        "ListMatches",
        b'{"game": "GAME_GO"}',
        "BAD_FILTER",
        spb.ListMatchesRequest(game=42),
        "game",
    ),
    "json-array": JsonCase("ListMatches", b"[]", "MALFORMED_REQUEST", TRUNCATED),
    "json-string": JsonCase("GetMatch", b'"abc"', "MALFORMED_REQUEST", TRUNCATED),
    "json-null": JsonCase("GetMatch", b"null", "MALFORMED_REQUEST", TRUNCATED),
    "not-json": JsonCase("GetMatch", b"{matchId: 1", "MALFORMED_REQUEST", TRUNCATED),
    "empty-body": JsonCase("ListMatches", b"", "MALFORMED_REQUEST", TRUNCATED),
    "nested-past-python's-limit": JsonCase("ListMatches", b"[" * 60_000, "MALFORMED_REQUEST", TRUNCATED),
    "nested-40-deep": JsonCase("ListMatches", DEEP, "MALFORMED_REQUEST", TRUNCATED),
    "invalid-utf8": JsonCase("GetMatch", b'{"matchId": "\xff\xfe"}', "MALFORMED_REQUEST", INVALID_UTF8),
    "utf16": JsonCase("GetMatch", '{"matchId": "x"}'.encode("utf-16"), "MALFORMED_REQUEST", INVALID_UTF8),
    "wrong-type": JsonCase("ListMatches", b'{"pageSize": "many"}', "MALFORMED_REQUEST", TRUNCATED),
    "number-for-a-string": JsonCase("GetMatch", b'{"matchId": 5}', "MALFORMED_REQUEST", TRUNCATED),
}


@pytest.mark.parametrize("name", list(JSON_ONLY))
async def test_json_that_means_no_request_is_refused_with_the_grpc_reason(ports: Ports, name: str) -> None:
    """A misspelt enum name gets the reason gRPC gives an unknown number (a typo never changes
    the rules); a body that is no request gets MALFORMED_REQUEST with no parser's own text."""
    case = JSON_ONLY[name]
    before = await ports.world.client.stub.ListMatches(spb.ListMatchesRequest())
    twin = case.grpc_twin if isinstance(case.grpc_twin, bytes) else case.grpc_twin.SerializeToString()
    grpc_answer = await over_grpc(ports, case.method, twin, None)
    assert grpc_answer is not None and grpc_answer.reason == case.reason, grpc_answer
    answer = await over_connect(ports, case.method, case.body, "json", None)
    assert answer is not None and (answer.code, answer.reason) == ("INVALID_ARGUMENT", case.reason), answer
    for internal in ("Traceback", "Error", "Failed to parse", "recursion", "unmarshal", "Expecting"):
        assert internal not in answer.message, answer
    if case.enum_field is not None:
        assert answer.message.startswith(f"{case.enum_field}: '") and " is not a " in answer.message, answer
        named = answer.message.split("'")[1]
        assert f'"{named}"'.encode() in case.body, "the message names the misspelling"
    assert await ports.world.client.stub.ListMatches(spb.ListMatchesRequest()) == before, (
        "a match was created"
    )


def test_every_enum_of_a_served_request_has_a_misspelt_case() -> None:
    """A new enum field in a request served on the web port needs its row in JSON_ONLY."""
    from google.protobuf.descriptor import Descriptor

    from ziggurat.web.connect import BOT_METHODS, BOT_SERVICE, method_infos

    def enums(descriptor: Descriptor, prefix: str = "") -> set[str]:
        found = set()
        for f in descriptor.fields:
            if f.enum_type is not None:
                found.add(prefix + f.name)
            elif f.message_type is not None and not f.message_type.GetOptions().map_entry:
                found |= enums(f.message_type, prefix + f.name + ".")
        return found

    served = {**method_infos(), **method_infos(BOT_SERVICE, BOT_METHODS)}
    fields = {(name, path) for name, info in served.items() for path in enums(info.input.DESCRIPTOR)}
    covered = {(case.method, case.enum_field) for case in JSON_ONLY.values() if case.enum_field}
    assert fields == covered
