"""Typed errors of the server and their gRPC status codes with a machine-readable reason.

Every refusal the server sends is an :class:`ApiError`: a status code, a stable
``reason`` (the ErrorInfo reason, domain ``ziggurat``) and a human message. Every
reason is a member of the registry :class:`~ziggurat.wire.reasons.Reason`, which
also fixes its status: :func:`refuse` takes the status from there, and an error
built with a status other than its reason's, or with an unregistered reason, is a
bug that fails at once. Rules errors are mapped here so malformed, illegal,
out-of-turn and game-over moves each get their own status and reason. Messages
are built from public facts only.
"""

from __future__ import annotations

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from ziggurat.rules.core import RulesError
from ziggurat.wire.reasons import Reason

DOMAIN = "ziggurat"


class ApiError(Exception):
    """A request the server refuses; nothing was changed by it."""

    def __init__(
        self,
        code: grpc.StatusCode,
        reason: Reason | str,
        message: str,
        metadata: dict[str, str] | None = None,
    ) -> None:
        """``metadata`` goes into the ErrorInfo's metadata map (e.g. MATCH_ELSEWHERE's address)."""
        super().__init__(message)
        entry = reason if isinstance(reason, Reason) else Reason[reason]
        if entry.code != code:
            raise ValueError(f"reason {entry.name} travels with {entry.code.name}, not {code.name}")
        self.code = code
        self.reason = entry.name
        self.message = message
        self.metadata = dict(metadata or {})

    def to_status(self) -> grpc.Status:
        """The rich status: code, message and an ErrorInfo with our reason in the details."""
        info = error_details_pb2.ErrorInfo(reason=self.reason, domain=DOMAIN, metadata=self.metadata)
        detail = any_pb2.Any()
        detail.Pack(info)
        status = status_pb2.Status(code=self.code.value[0], message=self.message, details=[detail])
        return rpc_status.to_status(status)


def refuse(reason: Reason, message: str, metadata: dict[str, str] | None = None) -> ApiError:
    """The refusal for ``reason``, with the status the registry gives it."""
    return ApiError(reason.code, reason, message, metadata)


def from_rules_error(error: RulesError) -> ApiError:
    """The API error for a rules error: its reason is the rules error's own, registered."""
    return refuse(Reason[error.reason], str(error))


def not_found(match_id: str) -> ApiError:
    """No such match."""
    return refuse(Reason.MATCH_NOT_FOUND, f"no match {match_id!r}")


def invalid(reason: Reason | str, message: str) -> ApiError:
    """A request that is malformed whatever the match state."""
    return ApiError(grpc.StatusCode.INVALID_ARGUMENT, reason, message)


def precondition(reason: Reason | str, message: str) -> ApiError:
    """A well-formed request that the match's current state does not allow."""
    return ApiError(grpc.StatusCode.FAILED_PRECONDITION, reason, message)


def unauthenticated(reason: Reason | str, message: str) -> ApiError:
    """No token, or a token that is not a seat token at all."""
    return ApiError(grpc.StatusCode.UNAUTHENTICATED, reason, message)


def permission_denied(reason: Reason | str, message: str) -> ApiError:
    """A valid token used where it gives no right (e.g. another match's seat)."""
    return ApiError(grpc.StatusCode.PERMISSION_DENIED, reason, message)


def exhausted(reason: Reason | str, message: str) -> ApiError:
    """Too much: rate limit, server capacity."""
    return ApiError(grpc.StatusCode.RESOURCE_EXHAUSTED, reason, message)


def error_reason(error: grpc.aio.AioRpcError | grpc.RpcError) -> str | None:
    """Client side: the ErrorInfo reason of a failed call, if the server sent one."""
    status = rpc_status.from_call(error)  # type: ignore[arg-type]
    if status is None:
        return None
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reason: str = info.reason
            return reason
    return None
