"""Per-address caps, the first-message deadline and shutdown statuses, for every RPC alike.

One server interceptor wraps every method handler (ours, health, reflection), so that:

* an address (the client's IP) holds at most ``max_connections_per_address`` connections
  with calls on them and ``max_streams_per_address`` calls at once; past that a new call is
  refused with RESOURCE_EXHAUSTED (``TOO_MANY_CONNECTIONS`` / ``TOO_MANY_STREAMS``). gRPC
  Python gives no hook when a connection is accepted, so a connection is counted from its
  first call; connections without calls are closed by gRPC's max-connection-idle and
  handshake timeouts (see :func:`ziggurat.hosting.server.grpc_options`).
* a call that streams requests (Play, reflection) must send its first message within
  ``first_message_timeout`` seconds, else it ends with DEADLINE_EXCEEDED
  (``FIRST_MESSAGE_TIMEOUT``): a silent stream would otherwise hold its memory for ever.
  One timer serves every stream (:meth:`Guard._sweep`, a tenth of the timeout apart, at
  most 1 s), not a timer, a timeout object and a generator per stream: a burst of
  thousands of silent streams is what the deadline is for, and each of them used to pay
  for all three on the event loop (benchmarks/idle_soak.py).
* on shutdown every open stream ends with UNAVAILABLE (``SERVER_SHUTTING_DOWN``), so a
  client can tell a restart from the end of a match (which ends a WatchMatch with OK), and
  a new call during the drain is refused the same way; unary calls get the grace period to
  finish, and the ones still running after it end with the same status (:meth:`Guard.drain`).
* on a competition server (``max_calls_per_credential``), a call carrying a token is counted
  as its credential's, not its address's: every sandboxed program calls from the same Unix
  socket peer (``unix:``) and every ``keep_alive`` program from loopback, so counted by
  address one participant's calls would use up the budget of all the others (issue 21). A
  credential holds at most ``max_calls_per_credential`` calls at once (``TOO_MANY_STREAMS``);
  a forged token gets a budget of its own too, but the call it opens is refused (by the
  competition policy or the servicer) as soon as it starts, so it holds nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import grpc

from ziggurat.api.peer import Peers, split_peer
from ziggurat.api.status_guard import close_requests, end_call
from ziggurat.wire import errors
from ziggurat.wire.reasons import Reason

Context = grpc.aio.ServicerContext[Any, Any]
log = logging.getLogger("ziggurat.limits")


@dataclass(frozen=True, slots=True)
class GuardLimits:
    """The caps the guard enforces (0 = no cap)."""

    max_connections_per_address: int = 500
    max_streams_per_address: int = 5_000
    first_message_timeout: float = 10.0
    # Calls open at once from every address together (SERVER_BUSY past it): the per-address
    # caps bound one client, this bounds them all, before the host's memory or descriptors do.
    max_streams: int = 20_000
    # On a competition server: calls open at once with one token (0 = count calls by address).
    max_calls_per_credential: int = 0


@dataclass(slots=True)
class _Address:
    """What one client address holds now: calls per connection (peer ``ip:port``)."""

    calls_by_peer: Counter[str] = field(default_factory=Counter)
    calls: int = 0


@dataclass(slots=True, eq=False)
class Call:
    """One admitted call: where from, the task serving it, whether shutdown ended it."""

    address: str
    peer: str
    task: asyncio.Task[Any] | None
    streaming: bool
    ended_by_shutdown: bool = False
    first_message_late: bool = False  # a request stream that sent nothing in time


CREDENTIAL_PREFIX = "credential:"


def credential_key(token: str) -> str:
    """The key a token's calls are counted under: a digest, so that no token is kept in the
    clear (nor logged) by the accounting.

    >>> credential_key("abc")
    'credential:ba7816bf8f01cfea'
    """
    return CREDENTIAL_PREFIX + hashlib.sha256(token.encode()).hexdigest()[:16]


def bearer_token(context: Any) -> str | None:
    """The token of ``authorization: Bearer <token>`` metadata (the bare value without the
    scheme), if any; ``context`` is gRPC's servicer context or the web port's."""
    for key, value in context.invocation_metadata() or ():
        if key == "authorization" and isinstance(value, str):
            scheme, _, token = value.partition(" ")
            return token.strip() if scheme.lower() == "bearer" else value.strip()
    return None


def shutting_down_error() -> errors.ApiError:
    """The status every stream ends with when the server stops."""
    return errors.refuse(
        Reason.SERVER_SHUTTING_DOWN, "the server is shutting down; reconnect and resume after it restarts"
    )


if TYPE_CHECKING:
    _Interceptor = grpc.aio.ServerInterceptor[Any, Any]
else:  # the stubs are generic, the runtime class is not
    _Interceptor = grpc.aio.ServerInterceptor


class Guard(_Interceptor):
    """The interceptor; :meth:`shutdown` ends the open streams."""

    def __init__(
        self, limits: GuardLimits, peers: Peers | None = None, *, overloaded: Callable[[], bool] | None = None
    ) -> None:
        self.limits = limits
        # True while the server holds as much memory as it may (memory_ceiling.MemoryCeiling).
        self.overloaded = overloaded
        # Whose call it is: the client's address also behind the gate (ziggurat.api.peer).
        self.peers = peers if peers is not None else Peers()
        self.shutting_down = False
        self._addresses: dict[str, _Address] = {}
        self._streams: set[Call] = set()
        self._unary: set[Call] = set()
        self._wrapped: dict[str, tuple[Any, grpc.RpcMethodHandler[Any, Any]]] = {}
        # Request streams still waiting for their first message -> their deadline (loop time).
        # Insertion order is deadline order (one timeout for all), so a sweep stops at the
        # first one not yet due.
        self._awaiting_first: dict[Call, float] = {}
        self._sweeper: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------------ accounting

    def open_calls(self) -> int:
        """Calls open now, from every address."""
        return len(self._streams) + len(self._unary)

    def calls_from(self, address: str) -> int:
        """Calls open now from ``address`` (for tests and the soak benchmark)."""
        use = self._addresses.get(address)
        return 0 if use is None else use.calls

    def _admit(self, context: Context, streaming: bool) -> Call:
        token = bearer_token(context) if self.limits.max_calls_per_credential else None
        return self.admit(self.peers.of(context), streaming=streaming, token=token)

    def admit(self, peer_name: str, *, streaming: bool, token: str | None = None) -> Call:
        """Count a call from ``peer_name`` (gRPC's ``ipv4:HOST:PORT``) in, or raise the ApiError
        that refuses it; the caller must :meth:`release` it. Public for the Connect (web) path.

        ``token`` (the call's ``authorization`` token) is read only on a competition server
        (``max_calls_per_credential``): the call is then counted as that credential's.
        """
        if self.shutting_down:
            raise shutting_down_error()
        limits = self.limits
        if token and limits.max_calls_per_credential:
            address = peer = credential_key(token)
        else:
            address, peer = split_peer(peer_name, self.peers.ipv6_prefix_length)
        if self.overloaded is not None and self.overloaded():
            log.warning("refused a call from %s: %s (memory)", address, Reason.SERVER_BUSY.name)
            raise errors.refuse(
                Reason.SERVER_BUSY,
                "the server holds as much memory as it may (--max-memory-percent); retry later",
            )
        if limits.max_streams and self.open_calls() >= limits.max_streams:
            log.warning("refused a call from %s: %s", address, Reason.SERVER_BUSY.name)
            raise errors.refuse(
                Reason.SERVER_BUSY,
                f"the server has {self.open_calls()} calls open from all clients, the most it allows "
                f"({limits.max_streams}); retry later",
            )
        use = self._addresses.get(address)
        if use is None:
            use = self._addresses[address] = _Address()
        if address.startswith(CREDENTIAL_PREFIX):
            if use.calls >= limits.max_calls_per_credential:
                log.warning("refused a call with one credential: %s", Reason.TOO_MANY_STREAMS.name)
                raise errors.refuse(
                    Reason.TOO_MANY_STREAMS,
                    f"this token has {use.calls} calls open, the most a competition server allows one "
                    f"credential ({limits.max_calls_per_credential}); close some first",
                )
        elif limits.max_streams_per_address and use.calls >= limits.max_streams_per_address:
            log.warning("refused a call from %s: %s", address, Reason.TOO_MANY_STREAMS.name)
            raise errors.refuse(
                Reason.TOO_MANY_STREAMS,
                f"this address has {use.calls} calls open, the most the server allows "
                f"({limits.max_streams_per_address}); close some first",
            )
        if (
            limits.max_connections_per_address
            and peer not in use.calls_by_peer
            and len(use.calls_by_peer) >= limits.max_connections_per_address
        ):
            log.warning("refused a call from %s: %s", address, Reason.TOO_MANY_CONNECTIONS.name)
            raise errors.refuse(
                Reason.TOO_MANY_CONNECTIONS,
                f"this address has {len(use.calls_by_peer)} connections in use, the most the server "
                f"allows ({limits.max_connections_per_address}); share a channel",
            )
        use.calls += 1
        use.calls_by_peer[peer] += 1
        call = Call(address, peer, asyncio.current_task(), streaming)
        (self._streams if streaming else self._unary).add(call)
        return call

    def release(self, call: Call) -> None:
        """Count an admitted call out."""
        call.task = None  # a cancelled task holds its exception, whose frames hold the call
        self._awaiting_first.pop(call, None)
        self._streams.discard(call)
        self._unary.discard(call)
        use = self._addresses.get(call.address)
        if use is None:
            return
        use.calls -= 1
        use.calls_by_peer[call.peer] -= 1
        if use.calls_by_peer[call.peer] <= 0:
            del use.calls_by_peer[call.peer]
        if use.calls <= 0:
            del self._addresses[call.address]

    def shutdown(self) -> int:
        """Refuse new calls and end every open stream with SERVER_SHUTTING_DOWN; returns how many."""
        self.shutting_down = True
        streams = list(self._streams)
        for call in streams:
            call.ended_by_shutdown = True
            if call.task is not None:
                call.task.cancel()
        return len(streams)

    async def drain(self, grace: float) -> int:
        """Give the unary calls still running ``grace`` seconds to finish, then end the rest with
        SERVER_SHUTTING_DOWN (rather than gRPC's bare "Cancelling all calls"); returns how many."""
        deadline = asyncio.get_running_loop().time() + grace
        while self._unary and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        late = list(self._unary)
        for call in late:
            call.ended_by_shutdown = True
            if call.task is not None:
                call.task.cancel()
        return len(late)

    # -------------------------------------------------------------------- wrapping

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any]]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any]:
        """The method's handler, wrapped with the admission, deadline and shutdown rules (built once
        per method: the wrapping depends on the handler alone)."""
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        method = str(getattr(handler_call_details, "method", ""))
        known = self._wrapped.get(method)
        if known is not None and known[0] is handler:
            return known[1]
        wrapped = self._wrap_handler(handler)
        self._wrapped[method] = (handler, wrapped)
        return wrapped

    def _wrap_handler(self, handler: grpc.RpcMethodHandler[Any, Any]) -> grpc.RpcMethodHandler[Any, Any]:
        if handler.unary_unary is not None:
            return grpc.unary_unary_rpc_method_handler(
                self._awaited(handler.unary_unary, streaming=False, request_streaming=False),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.stream_unary is not None:
            return grpc.stream_unary_rpc_method_handler(
                self._awaited(handler.stream_unary, streaming=True, request_streaming=True),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream is not None:
            return grpc.unary_stream_rpc_method_handler(
                self._streaming(handler.unary_stream, request_streaming=False),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        assert handler.stream_stream is not None
        return grpc.stream_stream_rpc_method_handler(
            self._streaming(handler.stream_stream, request_streaming=True),
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )

    async def _enter(
        self, request: Any, context: Context, *, streaming: bool, request_streaming: bool
    ) -> tuple[Call, Any] | None:
        """Admit the call (None once it is refused) and put the first-message deadline on its requests."""
        try:
            call = self._admit(context, streaming=streaming)
        except errors.ApiError as error:
            await end_call(context, error)
            return None
        return call, self._first_in_time(request, call) if request_streaming else request

    def _awaited(
        self, inner: Callable[..., Any], *, streaming: bool, request_streaming: bool
    ) -> Callable[..., Any]:
        """A handler that is awaited: unary responses, or a stream written with context.write()
        (Play, WatchMatch, health Watch)."""

        async def behaviour(request: Any, context: Context) -> Any:
            entered = await self._enter(
                request, context, streaming=streaming, request_streaming=request_streaming
            )
            if entered is None:
                return None
            call, request = entered
            try:
                return await self._ended(call, context, inner(request, context))
            finally:
                self.release(call)

        return behaviour

    def _streaming(self, inner: Callable[..., Any], *, request_streaming: bool) -> Callable[..., Any]:
        if not inspect.isasyncgenfunction(inner):
            return self._awaited(inner, streaming=True, request_streaming=request_streaming)

        async def generator(request: Any, context: Context) -> AsyncIterator[Any]:
            entered = await self._enter(request, context, streaming=True, request_streaming=request_streaming)
            if entered is None:
                return
            call, request = entered
            responses = inner(request, context)
            try:
                try:
                    async for response in responses:
                        yield response
                except asyncio.CancelledError:
                    if not (call.ended_by_shutdown or call.first_message_late):
                        raise
                    _uncancel()
                finally:
                    with contextlib.suppress(BaseException):
                        await responses.aclose()
                if call.ended_by_shutdown:
                    # Also a stream that ended on its own because shutdown closed its match.
                    await end_call(context, shutting_down_error())
                elif call.first_message_late:
                    await self._refuse_late(call, context)
            finally:
                self.release(call)

        return generator

    async def _ended(self, call: Call, context: Context, work: Awaitable[Any]) -> Any:
        """Await a handler; a stream cancelled by :meth:`shutdown` ends with SERVER_SHUTTING_DOWN."""
        try:
            result = await work
        except asyncio.CancelledError:
            if not (call.ended_by_shutdown or call.first_message_late):
                raise
            _uncancel()
            if call.ended_by_shutdown:
                await end_call(context, shutting_down_error())
            else:
                await self._refuse_late(call, context)
            return None
        if call.ended_by_shutdown:
            await end_call(context, shutting_down_error())
            return None
        return result

    # ------------------------------------------------------------ first message

    def _first_in_time(self, requests: AsyncIterator[Any], call: Call) -> AsyncIterator[Any]:
        """``requests``, with ``call`` put on the list of streams whose first message is due."""
        timeout = self.limits.first_message_timeout
        if timeout <= 0:
            return requests
        loop = asyncio.get_running_loop()
        self._awaiting_first[call] = loop.time() + timeout
        if self._sweeper is None:
            self._sweeper = loop.call_later(self._sweep_every(), self._sweep)
        return _FirstInTime(requests, self._awaiting_first, call)

    def _sweep_every(self) -> float:
        return min(1.0, max(0.02, self.limits.first_message_timeout / 10))

    def _sweep(self) -> None:
        """End the streams whose first message is overdue (their task is cancelled; the wrapper
        turns that into FIRST_MESSAGE_TIMEOUT), and come back while any stream is waiting."""
        self._sweeper = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        due: list[Call] = []
        for call, deadline in self._awaiting_first.items():
            if deadline > now:
                break
            due.append(call)
        for call in due:
            del self._awaiting_first[call]
            call.first_message_late = True
            if call.task is not None:
                call.task.cancel()
        if self._awaiting_first:
            self._sweeper = loop.call_later(self._sweep_every(), self._sweep)

    async def _refuse_late(self, call: Call, context: Context) -> None:
        timeout = self.limits.first_message_timeout
        log.warning("closed a stream from %s: %s", call.address, Reason.FIRST_MESSAGE_TIMEOUT.name)
        await end_call(
            context,
            errors.refuse(
                Reason.FIRST_MESSAGE_TIMEOUT, f"a stream must send its first message within {timeout:g} s"
            ),
        )


class _FirstInTime:
    """A request stream that takes its call off the waiting list when its first message comes.

    A plain iterator rather than an async generator: after the first message each
    ``__anext__`` is the stream's own, with no frame of ours in between.
    """

    __slots__ = ("_awaiting", "_call", "_requests")

    def __init__(self, requests: AsyncIterator[Any], awaiting: dict[Call, float], call: Call) -> None:
        self._requests = requests.__aiter__()
        self._awaiting = awaiting
        self._call = call

    def __aiter__(self) -> _FirstInTime:
        return self

    def __anext__(self) -> Awaitable[Any]:
        if self._call in self._awaiting:
            return self._first()
        return self._requests.__anext__()

    async def _first(self) -> Any:
        try:
            return await self._requests.__anext__()
        finally:  # a message, the end of the stream, or an error: no deadline any more
            self._awaiting.pop(self._call, None)

    async def aclose(self) -> None:
        """Close the stream's iterator (see :func:`~ziggurat.api.status_guard.close_requests`)."""
        self._awaiting.pop(self._call, None)
        await close_requests(self._requests)


def _uncancel() -> None:
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
