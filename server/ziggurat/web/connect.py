"""MatchService over the Connect protocol, for browsers: the same servicer, another transport.

Why no second implementation: every Connect call is handed to the very
:class:`~ziggurat.service.servicer.MatchServicer` method the gRPC server calls, with a
small adapter in place of the gRPC call context (metadata, peer, abort). What reaches a
browser is therefore built by the same handlers from the same per-seat view
(:mod:`ziggurat.service.render`), and a refusal carries the same status code and
``google.rpc.ErrorInfo`` (reason, domain ``ziggurat``) as a Connect error detail.

The endpoint table is derived from the service descriptor instead of generated Python
stubs: each unary and server-streaming method of ``ziggurat.v1.MatchService`` is served
under its usual path (``/ziggurat.v1.MatchService/GetMatch``, ...). ``Play`` is left
out: a bidirectional stream needs HTTP/2 end to end, which browsers cannot open with
``fetch``; browsers watch with ``WatchMatch`` and move with ``SubmitMove``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

import grpc
from connectrpc.code import Code
from connectrpc.compat import google_protobuf_binary_codec, google_protobuf_json_codec
from connectrpc.errors import ConnectError, ErrorDetail
from connectrpc.method import IdempotencyLevel, MethodInfo, StreamType
from connectrpc.request import RequestContext
from connectrpc.server import ConnectASGIApplication, Endpoint
from google.protobuf import symbol_database
from google.protobuf.message import Message
from google.rpc import status_pb2
from protobuf.wkt import Any as AnyDetail

from ziggurat.service.servicer import MatchServicer
from ziggurat.v1 import match_service_pb2 as spb

SERVICE = spb.DESCRIPTOR.services_by_name["MatchService"]
PATH = f"/{SERVICE.full_name}"
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
        """The request headers as gRPC metadata (lower-case keys)."""
        return tuple((key.lower(), value) for key, value in self._ctx.request_headers.allitems())

    def peer(self) -> str:
        """The client's address in gRPC's ``ipv4:HOST:PORT`` spelling."""
        address = self._ctx.client_address
        return f"ipv4:{address}" if address else "unknown"

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


def _unary(servicer: MatchServicer, name: str, response_type: type[Message]) -> Any:
    handler = getattr(servicer, name)

    async def call(request: Any, ctx: RequestContext[Any, Any]) -> Any:
        response = await handler(request, CallContext(ctx))
        # Some handlers (ListMatches) answer with bytes already serialized for gRPC.
        return _Raw(response, response_type) if isinstance(response, bytes) else response

    return call


def _server_stream(servicer: MatchServicer, name: str, response_type: type[Message]) -> Any:
    handler = getattr(servicer, name)

    async def call(request: Any, ctx: RequestContext[Any, Any]) -> AsyncIterator[Any]:
        stream = handler(request, CallContext(ctx))
        try:
            async for message in stream:
                yield _Raw(message, response_type) if isinstance(message, bytes) else message
        finally:
            await stream.aclose()

    return call


def method_infos() -> dict[str, MethodInfo[Any, Any]]:
    """Every unary and server-streaming method of MatchService by name (Play excluded)."""
    database = symbol_database.Default()
    infos: dict[str, MethodInfo[Any, Any]] = {}
    for method in SERVICE.methods:
        if method.client_streaming:
            continue
        infos[method.name] = MethodInfo(
            name=method.name,
            service_name=SERVICE.full_name,
            input=database.GetSymbol(method.input_type.full_name),
            output=database.GetSymbol(method.output_type.full_name),
            idempotency_level=IdempotencyLevel.UNKNOWN,
            stream_type=StreamType.SERVER_STREAM if method.server_streaming else StreamType.UNARY,
        )
    return infos


def endpoints(servicer: MatchServicer) -> Mapping[str, Any]:
    """The Connect endpoint table: each method's path bound to the servicer's handler."""
    table: dict[str, Any] = {}
    for name, info in method_infos().items():
        if info.stream_type == StreamType.SERVER_STREAM:
            table[f"{PATH}/{name}"] = Endpoint.server_stream(
                info, _server_stream(servicer, name, info.output)
            )
        else:
            table[f"{PATH}/{name}"] = Endpoint.unary(info, _unary(servicer, name, info.output))
    return table


class MatchServiceConnect(ConnectASGIApplication[MatchServicer]):
    """The ASGI application serving MatchService over Connect (and gRPC-Web)."""

    def __init__(self, servicer: MatchServicer, interceptors: Iterable[Any] = ()) -> None:
        super().__init__(
            service=servicer,
            endpoints=endpoints,
            interceptors=interceptors,
            codecs=[_BinaryCodec(), _JsonCodec()],
        )

    @property
    def path(self) -> str:
        """The service's path prefix."""
        return PATH
