"""The API over the Connect protocol, for browsers: the same servicers, another transport.

Why no second implementation: every Connect call is handed to the very servicer method the
gRPC server calls (:class:`~ziggurat.api.servicer.MatchServicer`, the bot and tournament
servicers), with a small adapter in place of the gRPC call context (metadata, peer, abort).
What reaches a browser is therefore built by the same handlers from the same per-seat view
(:mod:`ziggurat.core.render`), and a refusal carries the same status code and
``google.rpc.ErrorInfo`` (reason, domain ``ziggurat``) as a Connect error detail, readable as
JSON too (:mod:`ziggurat.web.details`). Requests are decoded as strictly as the gRPC port
decodes them (:mod:`ziggurat.web.codecs`), and held to the same size limit; a gRPC content
type is refused as a gRPC client understands (:mod:`ziggurat.web.requests`).

The endpoint table is derived from the service descriptors instead of generated Python
stubs: each served method is under its usual path (``/ziggurat.v1.MatchService/GetMatch``,
...). What a browser needs is served, nothing more (:func:`browser_bindings`): every unary
and server-streaming method of ``MatchService`` — ``Play`` is left out, a bidirectional
stream needs HTTP/2 end to end, which browsers cannot open with ``fetch`` (browsers watch
with ``WatchMatch`` and move with ``SubmitMove``) — and ``BotService``'s ``ListBots`` and
``InviteBot``, so a person can invite a connected remote bot; ``ConnectBot`` (a bot's own
long-lived stream) stays gRPC-only. A server that runs no tournament answers the lobby's
``TournamentService.ListTournaments`` with an empty list (:class:`NoTournaments`) rather than
``unimplemented``, which a browser reports as a failed request (HTTP 404) on every lobby.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.request import RequestContext
from connectrpc.server import ConnectASGIApplication, Endpoint
from google.protobuf import symbol_database
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import Message

from ziggurat.api.peer import grpc_peer, is_gate_key
from ziggurat.api.servicer import api
from ziggurat.v1 import bot_service_pb2 as bpb
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import tournament_service_pb2 as tpb
from ziggurat.web.codecs import BinaryCodec, JsonCodec, Raw
from ziggurat.web.details import to_connect_error
from ziggurat.web.requests import Gzip, Receive, Scope, Send, limited_body, refuse_grpc, wants_grpc
from ziggurat.wire import errors
from ziggurat.wire.reasons import Reason

SERVICE = spb.DESCRIPTOR.services_by_name["MatchService"]
BOT_SERVICE = bpb.DESCRIPTOR.services_by_name["BotService"]
PATH = f"/{SERVICE.full_name}"
BOT_PATH = f"/{BOT_SERVICE.full_name}"
# The BotService methods a browser needs: who is connected, and inviting one into a match.
BOT_METHODS = frozenset({"ListBots", "InviteBot"})
TOURNAMENT_SERVICE = tpb.DESCRIPTOR.services_by_name["TournamentService"]


class CallContext:
    """What the servicer asks of a gRPC call context, answered from a Connect request."""

    def __init__(self, ctx: RequestContext[Any, Any]) -> None:
        self._ctx = ctx

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        """The request headers as gRPC metadata (lower-case keys), less the keys only the gate may
        set (``x-ziggurat-peer``, ``x-ziggurat-gate*``): the gate does not front this port, so a
        browser's word for them is never believed (ziggurat.api.peer)."""
        headers = ((key.lower(), value) for key, value in self._ctx.request_headers.allitems())
        return tuple((key, value) for key, value in headers if not is_gate_key(key))

    def peer(self) -> str:
        """The client's address in gRPC's ``ipv4:HOST:PORT`` / ``ipv6:[HOST]:PORT`` spelling."""
        address = self._ctx.client_address
        return grpc_peer(address) if address else "unknown"

    async def abort(
        self, code: grpc.StatusCode, details: str = "", trailing_metadata: Iterable[tuple[str, Any]] = ()
    ) -> None:
        """Refuse the call: the gRPC status becomes a Connect error with the same details."""
        raise to_connect_error(code, details, trailing_metadata)


@dataclass(frozen=True)
class Binding:
    """One service served over Connect: its descriptor, the servicer, and which methods."""

    service: ServiceDescriptor
    servicer: Any
    # None = every unary and server-streaming method; client streams are never served
    methods: frozenset[str] | None = None

    @property
    def path(self) -> str:
        """The service's path prefix (``/ziggurat.v1.MatchService``)."""
        return f"/{self.service.full_name}"


def browser_bindings(
    match_servicer: Any, bot_servicer: Any | None, *, tournament_servicer: Any | None = None
) -> list[Binding]:
    """What a browser is served: MatchService, BotService's ListBots and InviteBot, and
    TournamentService (the running tournament's, else :class:`NoTournaments`)."""
    bindings = [Binding(SERVICE, match_servicer)]
    if bot_servicer is not None:
        bindings.append(Binding(BOT_SERVICE, bot_servicer, BOT_METHODS))
    tournaments = tournament_servicer if tournament_servicer is not None else NoTournaments()
    bindings.append(Binding(TOURNAMENT_SERVICE, tournaments))
    return bindings


class NoTournaments:
    """TournamentService of a server that runs no tournament (the web port of ``ziggurat serve``)."""

    async def ListTournaments(
        self, request: tpb.ListTournamentsRequest, context: Any
    ) -> tpb.ListTournamentsResponse:
        """None."""
        return tpb.ListTournamentsResponse()

    @api
    async def GetTournament(
        self, request: tpb.GetTournamentRequest, context: Any
    ) -> tpb.GetTournamentResponse:
        """TOURNAMENT_NOT_FOUND, whatever the id."""
        raise errors.refuse(Reason.TOURNAMENT_NOT_FOUND, "this server runs no tournament")


def _unary(servicer: Any, name: str, response_type: type[Message]) -> Any:
    handler = getattr(servicer, name)

    async def call(request: Any, ctx: RequestContext[Any, Any]) -> Any:
        response = await handler(request, CallContext(ctx))
        # Some handlers (ListMatches) answer with bytes already serialized for gRPC.
        return Raw(response, response_type) if isinstance(response, bytes) else response

    return call


def _server_stream(servicer: Any, name: str, response_type: type[Message]) -> Any:
    handler = getattr(servicer, name)

    async def call(request: Any, ctx: RequestContext[Any, Any]) -> AsyncIterator[Any]:
        stream = handler(request, CallContext(ctx))
        try:
            async for message in stream:
                yield Raw(message, response_type) if isinstance(message, bytes) else message
        finally:
            await stream.aclose()

    return call


def method_infos(
    service: ServiceDescriptor = SERVICE, only: frozenset[str] | None = None
) -> dict[str, MethodInfo[Any, Any]]:
    """The served methods of ``service`` by name: unary and server-streaming ones (of ``only``)."""
    database = symbol_database.Default()
    infos: dict[str, MethodInfo[Any, Any]] = {}
    for method in service.methods:
        if method.client_streaming or (only is not None and method.name not in only):
            continue
        infos[method.name] = MethodInfo(
            name=method.name,
            service_name=service.full_name,
            input=database.GetSymbol(method.input_type.full_name),
            output=database.GetSymbol(method.output_type.full_name),
            idempotency_level=IdempotencyLevel.UNKNOWN,
            stream_type=StreamType.SERVER_STREAM if method.server_streaming else StreamType.UNARY,
        )
    return infos


def endpoints(bindings: Sequence[Binding]) -> Mapping[str, Any]:
    """The Connect endpoint table: each served method's path bound to its servicer's handler."""
    table: dict[str, Any] = {}
    for binding in bindings:
        for name, info in method_infos(binding.service, binding.methods).items():
            path = f"{binding.path}/{name}"
            if info.stream_type == StreamType.SERVER_STREAM:
                table[path] = Endpoint.server_stream(
                    info, _server_stream(binding.servicer, name, info.output)
                )
            else:
                table[path] = Endpoint.unary(info, _unary(binding.servicer, name, info.output))
    return table


class ConnectServices(ConnectASGIApplication[Sequence[Binding]]):
    """The ASGI application serving the bound services over Connect (and gRPC-Web)."""

    def __init__(
        self,
        bindings: Sequence[Binding],
        interceptors: Iterable[Any] = (),
        *,
        max_message_bytes: int,
    ) -> None:
        """Serve ``bindings``; a request message over ``max_message_bytes`` (0 = no limit) is
        refused as the gRPC port refuses it (``ziggurat.web.requests``)."""
        self.bindings = tuple(bindings)
        self.max_message_bytes = max_message_bytes
        super().__init__(
            service=self.bindings,
            endpoints=endpoints,
            interceptors=interceptors,
            # connectrpc's own cap stays as a backstop for compressed bodies (what they inflate to).
            read_max_bytes=max_message_bytes or None,
            compressions=[Gzip()],
            codecs=[BinaryCodec(), JsonCodec()],
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """One request: a gRPC content type is refused as a gRPC client understands (this port
        has no HTTP/2 trailers), and the body is held to the message size limit."""
        if scope["type"] == "http":
            if wants_grpc(scope):
                await refuse_grpc(send)
                return
            if self.max_message_bytes:
                receive = limited_body(scope, receive, self.max_message_bytes)
        await super().__call__(scope, receive, send)

    @property
    def path(self) -> str:
        """The first service's path prefix (the application routes every bound one)."""
        return self.bindings[0].path

    def serves(self, path: str) -> bool:
        """Whether ``path`` is under one of the bound services (else it is a static file)."""
        return any(path.startswith(binding.path + "/") for binding in self.bindings)
