"""Typed refusals: every failed call becomes a :class:`ZigguratError` with the server's reason.

The server puts a ``google.rpc.ErrorInfo`` (domain ``ziggurat``, a stable ``reason`` such as
``NOT_YOUR_TURN``) into the gRPC rich status, i.e. the ``grpc-status-details-bin`` trailer,
a serialized ``google.rpc.Status``. The client reads it without googleapis-common-protos:
the two message shapes are declared here in a *private* descriptor pool, so the thin client
depends on grpcio and protobuf only, and nothing is registered in the default pool (a
process that also imports googleapis-common-protos, like the server, is unaffected).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import grpc
from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory

DOMAIN = "ziggurat"
"""The ErrorInfo domain of every reason the server sends."""

DETAILS_KEY = "grpc-status-details-bin"
ERROR_INFO_TYPE = "google.rpc.ErrorInfo"

RETRYABLE_CODES = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.CANCELLED,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.UNKNOWN,
    }
)
"""Codes that mean "the connection failed", not "the server refused": worth a retry."""


def _rich_status_types() -> tuple[type[Any], type[Any]]:
    """The message classes of google.rpc.Status and google.rpc.ErrorInfo (field numbers as in
    googleapis' google/rpc/status.proto and error_details.proto), in a pool of our own."""
    pool = descriptor_pool.DescriptorPool()
    any_file = descriptor_pb2.FileDescriptorProto()
    any_pb2.DESCRIPTOR.CopyToProto(any_file)
    pool.Add(any_file)
    f = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="ziggurat_client/rich_status.proto",
        package="google.rpc",
        syntax="proto3",
        dependency=["google/protobuf/any.proto"],
    )
    status = proto.message_type.add(name="Status")
    status.field.add(name="code", number=1, type=f.TYPE_INT32, label=f.LABEL_OPTIONAL)
    status.field.add(name="message", number=2, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    status.field.add(
        name="details",
        number=3,
        type=f.TYPE_MESSAGE,
        label=f.LABEL_REPEATED,
        type_name=".google.protobuf.Any",
    )
    info = proto.message_type.add(name="ErrorInfo")
    info.field.add(name="reason", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    info.field.add(name="domain", number=2, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    entry = info.nested_type.add(name="MetadataEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL)
    info.field.add(
        name="metadata",
        number=3,
        type=f.TYPE_MESSAGE,
        label=f.LABEL_REPEATED,
        type_name=".google.rpc.ErrorInfo.MetadataEntry",
    )
    pool.Add(proto)
    return (
        message_factory.GetMessageClass(pool.FindMessageTypeByName("google.rpc.Status")),
        message_factory.GetMessageClass(pool.FindMessageTypeByName(ERROR_INFO_TYPE)),
    )


_Status, _ErrorInfo = _rich_status_types()


def error_info(trailing_metadata: Iterable[Any] | None) -> tuple[str, dict[str, str]] | None:
    """(reason, metadata) of the ErrorInfo in a call's trailing metadata, if the server sent one."""
    for key, value in trailing_metadata or ():  # (key, value) pairs, sync or asyncio
        if key != DETAILS_KEY or not isinstance(value, bytes):
            continue
        status = _Status.FromString(value)
        for detail in status.details:
            if detail.type_url.rsplit("/", 1)[-1] == ERROR_INFO_TYPE:
                info = _ErrorInfo.FromString(detail.value)
                return str(info.reason), dict(info.metadata)
    return None


class ZigguratError(Exception):
    """A call that failed: ``code`` is the gRPC status, ``reason`` the ErrorInfo reason (or None
    when the call failed before reaching the server, e.g. UNAVAILABLE), ``message`` the text."""

    def __init__(
        self,
        code: grpc.StatusCode,
        reason: str | None,
        message: str,
        metadata: dict[str, str] | None = None,
    ) -> None:
        super().__init__(f"{code.name} {reason or ''}: {message}")
        self.code = code
        self.reason = reason
        self.message = message
        self.metadata = metadata or {}

    @property
    def retryable(self) -> bool:
        """True when the connection failed (worth retrying), False when the server refused."""
        return self.code in RETRYABLE_CODES

    @classmethod
    def from_rpc(cls, error: grpc.RpcError) -> ZigguratError:
        """Wrap a failed call (sync or asyncio), decoding the reason from the status details."""
        code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
        details = error.details() if hasattr(error, "details") else None
        trailers = error.trailing_metadata() if hasattr(error, "trailing_metadata") else None
        info = error_info(trailers)
        reason, metadata = info if info is not None else (None, {})
        return cls(code, reason, details or "", metadata)
