"""The operator's limits on the web (Connect) port, the same as on the gRPC port.

Why here and not in uvicorn's settings: uvicorn has one global concurrency cap and no
deadline for a request's body or for a connection's first request, so a browser port
would otherwise hold any number of silent connections and half-sent requests. The gRPC
port's rules come from :class:`ziggurat.api.guard.Guard`; this module applies them to
HTTP/1.1 and Connect:

* **calls per address and connections per address**: each Connect call is admitted by the
  very same guard (one count per client IP across both ports), and refused with
  RESOURCE_EXHAUSTED (``TOO_MANY_STREAMS`` / ``TOO_MANY_CONNECTIONS``) as a Connect error;
* **first message**: a call's request body must have arrived within
  ``first_message_timeout`` seconds, else DEADLINE_EXCEEDED (``FIRST_MESSAGE_TIMEOUT``);
* **connections per address and in total**: counted from accept
  (:class:`OpenConnections`), one more is closed at once, before it is read; an IPv6
  client counts by its ``--ipv6-prefix-length`` prefix as on the gRPC port;
* **handshake**: a new connection must send its first request line and headers within
  ``handshake_timeout`` seconds of accept (its TLS handshake included, with TLS on), else it
  is closed;
* **idle connections**: a connection with no request for ``max_connection_idle`` seconds is
  closed (uvicorn's keep-alive timeout);
* **shutdown**: every open WatchMatch stream ends with UNAVAILABLE (``SERVER_SHUTTING_DOWN``),
  and a call made during the drain is refused the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from connectrpc.request import RequestContext
from uvicorn.protocols.http.h11_impl import H11Protocol

from ziggurat.api.guard import Call, Guard, bearer_token, shutting_down_error
from ziggurat.api.peer import DEFAULT_IPV6_PREFIX_LENGTH, grpc_peer, split_peer
from ziggurat.web.connect import CallContext
from ziggurat.web.details import connect_error
from ziggurat.web.tls import Handshakes, TlsFront
from ziggurat.wire import errors
from ziggurat.wire.reasons import Reason

log = logging.getLogger("ziggurat.limits")

Receive = Callable[[], Awaitable[dict[str, Any]]]


# A refused connection is logged at most this often (a flood of them would flood the log).
REFUSAL_LOG_EVERY_S = 10.0


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """Web connections open at once, counted from accept (0 = no cap)."""

    max_per_address: int = 256
    max_total: int = 4096
    ipv6_prefix_length: int = DEFAULT_IPV6_PREFIX_LENGTH


class OpenConnections:
    """The web port's open connections by client address group (peer.address_group).

    Why from accept and not from the first request: a connection that never sends one holds
    a file descriptor all the same, and 1,060 of them from one address were enough to take a
    server under a 1,024 open-files limit away from every other client. A connection over a
    cap is closed before anything is read or sent (as the gate does: nothing of HTTP has
    begun, so there is no request to answer).
    """

    def __init__(self, limits: ConnectionLimits) -> None:
        self.limits = limits
        self.by_address: Counter[str] = Counter()
        self.total = 0
        self._logged = 0.0

    def admit(self, peername: Any) -> str | None:
        """Count a new connection from ``peername`` (the socket's) in: its address group, or
        None when a cap refuses it (the caller closes it)."""
        if isinstance(peername, (tuple, list)) and len(peername) >= 2:
            peer = grpc_peer(f"{peername[0]}:{peername[1]}")
        else:
            peer = "unknown"
        address = split_peer(peer, self.limits.ipv6_prefix_length)[0]
        limits = self.limits
        if limits.max_total and self.total >= limits.max_total:
            self._refused(address, f"the server holds {self.total} web connections, its most")
            return None
        if limits.max_per_address and self.by_address[address] >= limits.max_per_address:
            self._refused(address, f"this address holds {self.by_address[address]} web connections, its most")
            return None
        self.by_address[address] += 1
        self.total += 1
        return address

    def release(self, address: str) -> None:
        """Count a closed connection out."""
        self.total -= 1
        self.by_address[address] -= 1
        if self.by_address[address] <= 0:
            del self.by_address[address]

    def _refused(self, address: str, why: str) -> None:
        now = time.monotonic()
        if now - self._logged >= REFUSAL_LOG_EVERY_S:
            self._logged = now
            log.warning(
                "closed a web connection from %s at accept: %s (TOO_MANY_OPEN_CONNECTIONS)", address, why
            )


def handshake_limited(
    handshake_timeout: float, connections: OpenConnections | None = None, tls: Handshakes | None = None
) -> type[asyncio.Protocol]:
    """Uvicorn's HTTP/1.1 protocol, closing a connection whose first request has not begun
    (request line and headers) within ``handshake_timeout`` seconds, and one over the
    ``connections`` caps at once; with ``tls``, behind a :class:`~ziggurat.web.tls.TlsFront`
    that does both from accept, before the TLS handshake (``tls.timeout`` is the deadline)."""

    class HandshakeLimited(H11Protocol):
        counted: str | None = None  # the address group this connection is counted under

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            if tls is not None:
                return  # admitted and timed from accept by its TlsFront
            if connections is not None:
                self.counted = connections.admit(transport.get_extra_info("peername"))
                if self.counted is None:
                    transport.close()
                    return
            if handshake_timeout > 0:
                self.loop.call_later(handshake_timeout, self._first_request_due)

        def connection_lost(self, exc: Exception | None) -> None:
            super().connection_lost(exc)
            if connections is not None and self.counted is not None:
                connections.release(self.counted)
                self.counted = None

        def _first_request_due(self) -> None:
            if self.cycle is None and not self.transport.is_closing():
                log.debug("closed a web connection from %s: no request in time", self.client)
                self.transport.close()

    if tls is None:
        return HandshakeLimited
    handshakes = tls

    class Https(TlsFront):
        def __init__(self, **uvicorn_arguments: Any) -> None:
            super().__init__(
                HandshakeLimited(**uvicorn_arguments),
                handshakes,
                connections.admit if connections is not None else None,
                connections.release if connections is not None else None,
            )

    return Https


def body_within(receive: Receive, timeout: float, peer: str) -> Receive:
    """``receive``, but the request body must be complete within ``timeout`` seconds of the
    call's start (later messages, such as a disconnect, are not timed)."""
    if timeout <= 0:
        return receive
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    body_done = False

    async def timed() -> dict[str, Any]:
        nonlocal body_done
        if body_done:
            return await receive()
        try:
            message = await asyncio.wait_for(receive(), max(0.0, deadline - loop.time()))
        except TimeoutError:
            body_done = True
            log.warning("closed a web call from %s: %s", peer, Reason.FIRST_MESSAGE_TIMEOUT.name)
            raise connect_error(
                errors.refuse(
                    Reason.FIRST_MESSAGE_TIMEOUT, f"a request must be sent in full within {timeout:g} s"
                )
            ) from None
        if message["type"] != "http.request" or not message.get("more_body", False):
            body_done = True
        return message

    return timed


class GuardInterceptor:
    """A connectrpc interceptor that admits every Connect call through the gRPC port's guard
    and ends its streams with SERVER_SHUTTING_DOWN when the server stops."""

    def __init__(self, guard: Guard) -> None:
        self.guard = guard

    def _admit(self, ctx: RequestContext[Any, Any], *, streaming: bool) -> Call:
        address = ctx.client_address
        # On a competition server a call with a token is counted as its credential's (guard.py).
        token = bearer_token(CallContext(ctx)) if self.guard.limits.max_calls_per_credential else None
        try:
            return self.guard.admit(
                grpc_peer(address) if address else "unknown", streaming=streaming, token=token
            )
        except errors.ApiError as error:
            raise connect_error(error) from None

    async def intercept_unary(
        self, call_next: Callable[[Any, RequestContext[Any, Any]], Awaitable[Any]], request: Any, ctx: Any, /
    ) -> Any:
        """A unary call; one still running after the grace period ends with SERVER_SHUTTING_DOWN."""
        call = self._admit(ctx, streaming=False)
        try:
            try:
                result = await call_next(request, ctx)
            except asyncio.CancelledError:
                if not call.ended_by_shutdown:
                    raise
                _uncancel()
                raise connect_error(shutting_down_error()) from None
            if call.ended_by_shutdown:
                raise connect_error(shutting_down_error())
            return result
        finally:
            self.guard.release(call)

    async def intercept_server_stream(
        self,
        call_next: Callable[[Any, RequestContext[Any, Any]], AsyncIterator[Any]],
        request: Any,
        ctx: Any,
        /,
    ) -> AsyncIterator[Any]:
        """A server stream; shutdown ends it with SERVER_SHUTTING_DOWN (also when it ended on its
        own because shutdown closed its match)."""
        call = self._admit(ctx, streaming=True)
        try:
            stream = call_next(request, ctx)
            try:
                async for message in stream:
                    yield message
            except asyncio.CancelledError:
                if not call.ended_by_shutdown:
                    raise
                _uncancel()
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    with contextlib.suppress(BaseException):
                        await aclose()
            if call.ended_by_shutdown:
                raise connect_error(shutting_down_error())
        finally:
            self.guard.release(call)


class BodyDeadline:
    """ASGI middleware: on the API paths, a request's body must arrive within ``timeout``."""

    def __init__(self, app: Any, timeout: float, api_prefix: str = "/ziggurat.") -> None:
        self.app = app
        self.timeout = timeout
        self.api_prefix = api_prefix

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Any) -> None:
        """Route one ASGI connection, with the deadline on API calls."""
        if scope["type"] == "http" and scope["path"].startswith(self.api_prefix) and self.timeout > 0:
            client = scope.get("client")
            peer = f"{client[0]}" if client else "unknown"
            receive = body_within(receive, self.timeout, peer)
        await self.app(scope, receive, send)


def _uncancel() -> None:
    task = asyncio.current_task()
    if task is not None:
        task.uncancel()
