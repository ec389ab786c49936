"""A refusal as a Connect error: the gRPC status, the ErrorInfo detail, and its reason readable.

Why the ``debug`` field: a Connect error carries each detail as ``{"type", "value"}`` with the
``google.rpc.ErrorInfo`` bytes base64-encoded in ``value``, so a JSON client (a curl bot, a
shell script) had to decode protobuf to tell ``NOT_STARTED`` from ``NOT_YOUR_TURN``. The
Connect protocol lets a server add the detail as JSON in ``debug``; every ErrorInfo this
server sends carries it there::

    {"code": "failed_precondition", "message": "it is not seat 2's turn",
     "details": [{"type": "google.rpc.ErrorInfo", "value": "Cg1OT1RfWU9VUl9UVVJOEgh6aWdndXJhdA",
                  "debug": {"reason": "NOT_YOUR_TURN", "domain": "ziggurat"}}]}

(``metadata`` appears in ``debug`` when the reason has any, e.g. MATCH_ELSEWHERE's
``address``). connectrpc writes ``debug`` for a detail whose message it can describe; the
ErrorInfo's description is built once here from the ``google.rpc`` descriptor that
googleapis-common-protos ships, so nothing is written by hand.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import grpc
import protobuf
from connectrpc.code import Code
from connectrpc.errors import ConnectError, ErrorDetail
from google.protobuf import descriptor_pb2
from google.rpc import error_details_pb2, status_pb2
from protobuf.wkt import Any as AnyDetail
from protobuf.wkt import FileDescriptorSet

from ziggurat.wire import errors

STATUS_DETAILS_KEY = "grpc-status-details-bin"


def _error_info_registry() -> protobuf.Registry:
    """A connectrpc (protobuf-py) registry that knows ``google.rpc.ErrorInfo``."""
    file = descriptor_pb2.FileDescriptorProto(
        name="ziggurat/web/error_info.proto", package="google.rpc", syntax="proto3"
    )
    error_details_pb2.ErrorInfo.DESCRIPTOR.CopyToProto(file.message_type.add())
    # The generated Python descriptor omits JSON names; protobuf JSON wants them.
    for message in (file.message_type[0], *file.message_type[0].nested_type):
        for field in message.field:
            head, *rest = field.name.split("_")
            field.json_name = head + "".join(part.title() for part in rest)
    files = descriptor_pb2.FileDescriptorSet(file=[file])
    described = FileDescriptorSet()
    protobuf.merge_from_binary(described, files.SerializeToString())
    return described.to_registry()


_REGISTRY = _error_info_registry()


class ReadableDetail(ErrorDetail):
    """An error detail that connectrpc can also write as JSON (the ``debug`` field)."""

    def value(self, desc_or_registry: Any = None) -> Any:
        """The detail as a message, described by this module's registry unless told otherwise."""
        return super().value(desc_or_registry or _REGISTRY)


def to_connect_error(
    code: grpc.StatusCode, message: str, trailing_metadata: Iterable[tuple[str, Any]] = ()
) -> ConnectError:
    """A Connect error with the status code and the ``google.rpc.Status`` details of a gRPC refusal."""
    details: list[ErrorDetail] = []
    for key, value in trailing_metadata:
        if key == STATUS_DETAILS_KEY and isinstance(value, bytes):
            status = status_pb2.Status.FromString(value)
            details.extend(
                ReadableDetail(AnyDetail(type_url=d.type_url, value=d.value)) for d in status.details
            )
    return ConnectError(Code[code.name], message, details)


def connect_error(error: errors.ApiError) -> ConnectError:
    """The Connect form of a refusal: same code, message and ErrorInfo."""
    status = error.to_status()
    return to_connect_error(status.code, status.details, status.trailing_metadata)
