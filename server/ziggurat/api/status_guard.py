"""A server interceptor that keeps UNKNOWN and INTERNAL away from clients.

Two things no handler can do for itself:

* **Bytes that do not decode.** gRPC deserializes a request before any handler
  runs; a corrupt message or invalid UTF-8 in a string field would come back as
  ``UNKNOWN`` with a Python exception text. Here every request deserializer is
  wrapped: an undecodable request is refused with ``INVALID_ARGUMENT`` and the
  reason ``MALFORMED_REQUEST`` (for a request stream, at the message that fails),
  for every service the server runs.
* **Seeing a bug.** An exception escaping a handler, or a handler ending with
  ``UNKNOWN``/``INTERNAL``, is a bug by the project's rules. The guard logs it
  once at ERROR and, when the environment names a file in
  ``ZIGGURAT_STATUS_GUARD_FILE``, appends a JSON line to it: the test suite sets
  that variable (``tests/conftest.py``) and fails any test during which a server,
  in-process or a subprocess, let such a status out.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from grpc.aio import AbortError, InternalError

from ziggurat.wire import errors
from ziggurat.wire.reasons import Reason

log = logging.getLogger("ziggurat.server")

GUARD_FILE_ENV = "ZIGGURAT_STATUS_GUARD_FILE"
FORBIDDEN = (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL)
_EOF: Any = grpc.aio.EOF  # type: ignore[attr-defined]  # what context.read() returns at the end
_Context = grpc.aio.ServicerContext[Any, Any]


class _Undecodable:
    """What a wrapped deserializer returns for bytes that are not a valid message."""

    __slots__ = ("type_name",)

    def __init__(self, type_name: str) -> None:
        self.type_name = type_name


def _decoding(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    if deserializer is None:
        return None
    owner = getattr(deserializer, "__self__", None)
    descriptor = getattr(owner, "DESCRIPTOR", None)
    type_name = getattr(descriptor, "full_name", "request")

    def decode(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception:  # DecodeError, and whatever else a parser raises on hostile bytes
            return _Undecodable(type_name)

    return decode


async def end_call(context: Any, error: errors.ApiError) -> None:
    """End the call with ``error``'s status; the handler returns right after (every refusal of
    the servicers and of the guard ends a call through here).

    The status is set, not sent with ``context.abort``: gRPC keeps the exception ``abort``
    raises on the call's own state, and that exception's traceback runs through the call's
    frames, so every refused call (a flood of out-of-turn moves, of unknown match ids, of
    silent streams) stayed in a reference cycle until a full collection
    (``tests/hosting/test_memory.py``). The refusal's own traceback, which holds the
    handler's frames, is dropped for the same reason. The web port's Connect context
    (``ziggurat.web.connect.CallContext``) has no status to set: its ``abort`` raises the
    Connect error, as before.
    """
    error.__traceback__ = error.__context__ = error.__cause__ = None
    status = error.to_status()
    if not hasattr(context, "set_code"):
        await context.abort(status.code, status.details, status.trailing_metadata)
    context.set_code(status.code)
    context.set_details(status.details)
    context.set_trailing_metadata(status.trailing_metadata)


# How gRPC's ExecuteBatchError (an InternalError) reads when a batch was started and failed (a
# send on a stream that no longer exists), as opposed to one gRPC refused to start (a misuse,
# still a bug).
_BATCH_FAILED = 'Failed "execute_batch"'


async def write(context: Any, message: Any) -> bool:
    """``context.write(message)``; False when the stream is gone (the client cancelled it, reset
    it or closed its connection), and then the handler just returns: nobody can hear a status.

    gRPC fails such a write with ExecuteBatchError and ignores it only once it has noticed the
    client's close itself, which it often has not yet: 500 abandoned WatchMatch streams on a
    1-byte flow-control window left about 450 of them answered UNKNOWN (``tests/api/
    test_abandoned_streams.py``), each logged and recorded as a bug.
    """
    try:
        await context.write(message)
    except InternalError as error:
        if not str(error).startswith(_BATCH_FAILED):
            raise
        return False
    return True


def undecodable(type_name: str, why: str = "corrupt bytes or invalid UTF-8") -> errors.ApiError:
    """The refusal of a request that is not a ``type_name`` message: the same on the gRPC port
    and on the web port (``ziggurat.web.codecs``), with no parser's own text."""
    message = f"the request is not a valid {type_name} message ({why})"
    return errors.refuse(Reason.MALFORMED_REQUEST, message)


async def _refuse_undecodable(request: _Undecodable, context: _Context) -> None:
    status = undecodable(request.type_name).to_status()
    await context.abort(status.code, status.details, status.trailing_metadata)


def report(method: str, code: grpc.StatusCode, details: str) -> None:
    """Record that ``method`` answered ``code`` (UNKNOWN/INTERNAL): a bug, logged and listed."""
    log.error("bug: %s answered %s: %s", method, code.name, details)
    path = os.environ.get(GUARD_FILE_ENV)
    if path:
        line = json.dumps({"method": method, "code": code.name, "details": details, "time": time.time()})
        with open(path, "a", encoding="utf-8") as file:
            file.write(line + "\n")


def _check(method: str, context: _Context) -> None:
    code = context.code()
    if isinstance(code, int):
        known = (status for status in grpc.StatusCode if status.value[0] == code)
        code = next(known, grpc.StatusCode.UNKNOWN)
    if code in FORBIDDEN:
        report(method, code, str(context.details() or ""))


async def read_request(context: _Context) -> Any:
    """The next request of a request stream read with ``context.read()`` (None at its end),
    refused like the request iterator's when its bytes do not decode.

    For a handler that reads its requests itself (the Play stream's reader): the wrapped
    deserializer applies to ``context.read()`` too, so the check is the same.
    """
    request = await context.read()
    if request is _EOF:
        return None
    if isinstance(request, _Undecodable):
        await _refuse_undecodable(request, context)
    return request


async def close_requests(requests: object) -> None:
    """Close a request stream's iterator that its handler stopped reading (``aclose`` down
    the chain of wrappers to gRPC's own message generator).

    gRPC's message receiver and its suspended generator refer to each other, and through
    the receiver to the call's context and state: a handler that takes only the first
    message from the iterator (Play reads the rest with ``context.read()``) would leave the
    whole call in a reference cycle that only a full garbage collection frees
    (``tests/hosting/test_memory.py::test_ended_play_streams_leave_no_reference_cycle``).
    """
    aclose = getattr(requests, "aclose", None)
    if aclose is not None:
        await aclose()


async def _checked_requests(requests: AsyncIterator[Any], context: _Context) -> AsyncIterator[Any]:
    iterator = requests.__aiter__()  # gRPC's generator itself, to close when this one is
    try:
        async for request in iterator:
            if isinstance(request, _Undecodable):
                await _refuse_undecodable(request, context)
            yield request
    finally:
        await close_requests(iterator)


def _wrap(method: str, behavior: Callable[..., Any], request_streaming: bool) -> Callable[..., Any]:
    """The behavior with undecodable requests refused and forbidden outcomes reported."""

    async def prepare(request: Any, context: _Context) -> Any:
        if request_streaming:
            return _checked_requests(request, context)
        if isinstance(request, _Undecodable):
            await _refuse_undecodable(request, context)
        return request

    def failed(error: BaseException, context: _Context) -> None:
        if isinstance(error, AbortError):
            _check(method, context)
        elif not isinstance(error, (asyncio.CancelledError, GeneratorExit)):
            report(method, grpc.StatusCode.UNKNOWN, f"{type(error).__name__}: {error}")

    if inspect.isasyncgenfunction(behavior):

        async def streaming(request: Any, context: _Context) -> AsyncIterator[Any]:
            try:
                async for response in behavior(await prepare(request, context), context):
                    yield response
            except BaseException as error:
                failed(error, context)
                raise
            _check(method, context)

        return streaming

    async def single(request: Any, context: _Context) -> Any:
        try:
            result = behavior(await prepare(request, context), context)
            if inspect.isawaitable(result):
                result = await result
        except BaseException as error:
            failed(error, context)
            raise
        _check(method, context)
        return result

    return single


class StatusGuard(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]  # generic only in the stubs
    """Installed on every ziggurat server (see the module docstring)."""

    def __init__(self) -> None:
        # The wrapped handler of each method, built once: the wrapping depends on the method's
        # handler only, and building it per call was a tenth of what a silent stream cost the
        # event loop (benchmarks/idle_soak.py).
        self._wrapped: dict[str, tuple[Any, grpc.RpcMethodHandler[Any, Any]]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any]]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any]:
        """The method's handler with its deserializer and behavior wrapped."""
        found = await continuation(handler_call_details)
        if found is None:  # an unknown method: gRPC itself answers UNIMPLEMENTED
            return found
        method = str(getattr(handler_call_details, "method", ""))
        known = self._wrapped.get(method)
        if known is not None and known[0] is found:
            return known[1]
        wrapped = self._wrap_handler(method, found)
        self._wrapped[method] = (found, wrapped)
        return wrapped

    @staticmethod
    def _wrap_handler(method: str, found: grpc.RpcMethodHandler[Any, Any]) -> grpc.RpcMethodHandler[Any, Any]:
        handler: Any = found
        slot = {
            (False, False): "unary_unary",
            (False, True): "unary_stream",
            (True, False): "stream_unary",
            (True, True): "stream_stream",
        }[(bool(handler.request_streaming), bool(handler.response_streaming))]
        behavior = getattr(handler, slot)
        if behavior is None:
            return found
        wrapped = _wrap(method, behavior, bool(handler.request_streaming))
        replaced: grpc.RpcMethodHandler[Any, Any] = handler._replace(
            request_deserializer=_decoding(handler.request_deserializer), **{slot: wrapped}
        )
        return replaced
