"""The API over the Connect protocol, for browsers: the same servicers, another transport.

Why no second implementation: every Connect call is handed to the very servicer method the
gRPC server calls (:class:`~ziggurat.service.servicer.MatchServicer`, the bot and tournament
servicers), with a small adapter in place of the gRPC call context (metadata, peer, abort).
What reaches a browser is therefore built by the same handlers from the same per-seat view
(:mod:`ziggurat.service.render`), and a refusal carries the same status code and
``google.rpc.ErrorInfo`` (reason, domain ``ziggurat``) as a Connect error detail.

The endpoint table is derived from the service descriptors instead of generated Python
stubs: each served method is under its usual path (``/ziggurat.v1.MatchService/GetMatch``,
...). What a browser needs is served, nothing more (:func:`browser_bindings`): every unary
and server-streaming method of ``MatchService`` — ``Play`` is left out, a bidirectional
stream needs HTTP/2 end to end, which browsers cannot open with ``fetch`` (browsers watch
with ``WatchMatch`` and move with ``SubmitMove``) — and ``BotService``'s ``ListBots`` and
``InviteBot``, so a person can invite a connected remote bot; ``ConnectBot`` (a bot's own
long-lived stream) stays gRPC-only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from connectrpc.code import Code
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from connectrpc.errors import ConnectError, ErrorDetail
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.request import RequestContext
from connectrpc.server import ConnectASGIApplication, Endpoint
from google.protobuf import symbol_database
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import Message
from google.rpc import status_pb2
from protobuf.wkt import Any as AnyDetail

from ziggurat.service.peer import grpc_peer, is_gate_key
from ziggurat.v1 import bot_service_pb2 as bpb
from ziggurat.v1 import match_service_pb2 as spb

SERVICE = spb.DESCRIPTOR.services_by_name["MatchService"]
BOT_SERVICE = bpb.DESCRIPTOR.services_by_name["BotService"]
PATH = f"/{SERVICE.full_name}"
BOT_PATH = f"/{BOT_SERVICE.full_name}"
# The BotService methods a browser needs: who is connected, and inviting one into a match.
BOT_METHODS = frozenset({"ListBots", "InviteBot"})
STATUS_DETAILS_KEY = "grpc-status-details-bin"


class _Raw:
    """A response message the servicer already serialized (WatchMatch's cached event bytes)."""

    __slots__ = ("data", "message_type")

    def __init__(self, data: bytes, message_type: type[Message]) -> None:
        self.data = data
        self.message_type = message_type


class _BinaryCodec:
    """Protobuf binary; pre-serialized responses go out byte for byte."""

    _inner = google_protobuf_binary_codec()

    def name(self) -> str:
        return "proto"

    def encode(self, message: Any) -> bytes:
        if isinstance(message, _Raw):
            return message.data
        return self._inner.encode(message)

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        return self._inner.decode(data, message_class)


class _JsonCodec:
    """Protobuf JSON (handy with curl); pre-serialized responses are parsed first."""

    _inner = google_protobuf_json_codec()

    def name(self) -> str:
        return "json"

    def encode(self, message: Any) -> bytes:
        if isinstance(message, _Raw):
            message = message.message_type.FromString(message.data)
        return self._inner.encode(message)

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        return self._inner.decode(data, message_class)


class CallContext:
    """What the servicer asks of a gRPC call context, answered from a Connect request."""

    def __init__(self, ctx: RequestContext[Any, Any]) -> None:
        self._ctx = ctx

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        """The request headers as gRPC metadata (lower-case keys), less the keys only the gate may
        set (``x-ziggurat-peer``, ``x-ziggurat-gate*``): the gate does not front this port, so a
        browser's word for them is never believed (ziggurat.service.peer)."""
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


def to_connect_error(
    code: grpc.StatusCode, message: str, trailing_metadata: Iterable[tuple[str, Any]] = ()
) -> ConnectError:
    """A Connect error with the status code and the ``google.rpc.Status`` details of a gRPC refusal."""
    details: list[ErrorDetail] = []
    for key, value in trailing_metadata:
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
            details.extend(ErrorDetail(AnyDetail(type_url=d.type_url, value=d.value)) for d in status.details)
    return ConnectError(Code[code.name], message, details)


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


def browser_bindings(match_servicer: Any, bot_servicer: Any | None) -> list[Binding]:
    """What a browser is served: MatchService, and BotService's ListBots and InviteBot."""
    bindings = [Binding(SERVICE, match_servicer)]
    if bot_servicer is not None:
        bindings.append(Binding(BOT_SERVICE, bot_servicer, BOT_METHODS))
    return bindings


def _unary(servicer: Any, name: str, response_type: type[Message]) -> Any:
    handler = getattr(servicer, name)

    async def call(request: Any, ctx: RequestContext[Any, Any]) -> Any:
        response = await handler(request, CallContext(ctx))
        # Some handlers (ListMatches) answer with bytes already serialized for gRPC.
        return _Raw(response, response_type) if isinstance(response, bytes) else response

    return call


def _server_stream(servicer: Any, name: str, response_type: type[Message]) -> Any:
    handler = getattr(servicer, name)

    async def call(request: Any, ctx: RequestContext[Any, Any]) -> AsyncIterator[Any]:
        stream = handler(request, CallContext(ctx))
        try:
            async for message in stream:
                yield _Raw(message, response_type) if isinstance(message, bytes) else message
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

    def __init__(self, bindings: Sequence[Binding], interceptors: Iterable[Any] = ()) -> None:
        self.bindings = tuple(bindings)
        super().__init__(
            service=self.bindings,
            endpoints=endpoints,
            interceptors=interceptors,
            codecs=[_BinaryCodec(), _JsonCodec()],
        )

    @property
    def path(self) -> str:
        """The first service's path prefix (the application routes every bound one)."""
        return self.bindings[0].path

    def serves(self, path: str) -> bool:
        """Whether ``path`` is under one of the bound services (else it is a static file)."""
        return any(path.startswith(binding.path + "/") for binding in self.bindings)
