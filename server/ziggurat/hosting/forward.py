"""The web port of ``ziggurat serve --workers N``: a call about another worker's match is made there.

Every worker serves the public web port (SO_REUSEPORT: the kernel spreads connections over
them), and a match lives in the shard of the worker that created it (docs/scaling.md). A gRPC
client that reaches the wrong worker is told where to go (``MATCH_ELSEWHERE`` with the owner's
own address) and goes there; a browser cannot: its page was loaded from one origin, the public
web port, and keeps its HTTP connection to whichever worker the kernel picked. So on the web
port the worker that took the call makes it for the caller: a call naming a match (its
request's ``match_id``) that another worker owns is made on that worker's Unix socket (the one
the workers already use between them, :mod:`ziggurat.hosting.shards`), with the caller's
``authorization`` and its address, and the answer or refusal comes back unchanged. The owner
applies its own checks and limits to the call as to any other: it counts it as the caller's
address (``x-ziggurat-peer``, believed next to the secret the supervisor gave every worker, as
a server believes its gate), not as the socket's.

Everything else (CreateMatch, ListMatches, the bot list) is served by the worker that took it,
as on the gRPC port.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc

from ziggurat.api.peer import GATE_KEY, PEER_KEY
from ziggurat.hosting.shards import ShardDirectory
from ziggurat.web.connect import CallContext
from ziggurat.web.details import connect_error, to_connect_error
from ziggurat.wire import errors

# Request headers passed on to the owner: the credential. Everything else the owner needs is in
# the request message itself.
PASSED_ON = frozenset({"authorization"})


class ForwardToOwner:
    """A connectrpc interceptor: a call about another worker's match is made on that worker."""

    def __init__(self, directory: ShardDirectory, secret: str | None) -> None:
        """``secret`` is the workers' shared word that a call's ``x-ziggurat-peer`` is the
        caller's (None: the owner counts the call as its socket's)."""
        self.directory = directory
        self.secret = secret
        self._channels: dict[int, grpc.aio.Channel] = {}

    def _owner(self, request: Any) -> int | None:
        match_id = getattr(request, "match_id", "")
        if not isinstance(match_id, str) or not match_id:
            return None
        try:
            return self.directory.owner_of(match_id)
        except errors.ApiError as error:  # a shard that cannot be read: WORKER_UNAVAILABLE
            raise connect_error(error) from None

    def _channel(self, owner: int) -> grpc.aio.Channel:
        channel = self._channels.get(owner)
        if channel is None:
            channel = grpc.aio.insecure_channel(self.directory.socket_of(owner))
            self._channels[owner] = channel
        return channel

    def _metadata(self, ctx: Any) -> tuple[tuple[str, str], ...]:
        call = CallContext(ctx)
        passed = [(key, value) for key, value in call.invocation_metadata() if key in PASSED_ON]
        if self.secret is not None:
            passed += [(PEER_KEY, call.peer()), (GATE_KEY, self.secret)]
        return tuple(passed)

    @staticmethod
    def _method(ctx: Any) -> str:
        return f"/{ctx.method.service_name}/{ctx.method.name}"

    @staticmethod
    def _timeout(ctx: Any) -> float | None:
        remaining = ctx.timeout_ms  # a property
        return None if remaining is None else max(0.0, remaining / 1000)

    async def intercept_unary(
        self, call_next: Callable[[Any, Any], Awaitable[Any]], request: Any, ctx: Any, /
    ) -> Any:
        """A unary call: made here, or on the owner of the match it names."""
        owner = self._owner(request)
        if owner is None:
            return await call_next(request, ctx)
        call = self._channel(owner).unary_unary(
            self._method(ctx),
            request_serializer=type(request).SerializeToString,
            response_deserializer=ctx.method.output.FromString,
        )
        try:
            return await call(request, metadata=self._metadata(ctx), timeout=self._timeout(ctx))
        except grpc.aio.AioRpcError as error:
            raise _as_connect(error) from None

    async def intercept_server_stream(
        self, call_next: Callable[[Any, Any], AsyncIterator[Any]], request: Any, ctx: Any, /
    ) -> AsyncIterator[Any]:
        """A server stream (WatchMatch): relayed from the owner, message by message."""
        owner = self._owner(request)
        if owner is None:
            stream = call_next(request, ctx)
            try:
                async for message in stream:
                    yield message
            finally:
                aclose = getattr(stream, "aclose", None)
                if aclose is not None:
                    await aclose()
            return
        call = self._channel(owner).unary_stream(
            self._method(ctx),
            request_serializer=type(request).SerializeToString,
            response_deserializer=ctx.method.output.FromString,
        )(request, metadata=self._metadata(ctx), timeout=self._timeout(ctx))
        try:
            async for message in call:
                yield message
        except grpc.aio.AioRpcError as error:
            raise _as_connect(error) from None
        finally:
            call.cancel()

    async def close(self) -> None:
        """Close the channels to the other workers."""
        for channel in self._channels.values():
            await channel.close(None)
        self._channels.clear()


def _as_connect(error: grpc.aio.AioRpcError) -> Exception:
    """The owner's refusal as the web port's: same code, message and ErrorInfo."""
    metadata: Any = error.trailing_metadata() or ()
    trailing: list[tuple[str, Any]] = [(str(key), value) for key, value in metadata]
    return to_connect_error(error.code(), error.details() or "", trailing)
