"""The competition policy on the web port: a Connect interceptor applying
:meth:`ziggurat.api.competition.Competition.check` to every call, as
:class:`~ziggurat.api.competition.CompetitionInterceptor` does on the gRPC listeners.

It lives with the web port (it speaks connectrpc's interceptor interface and answers with a
Connect error) so that the API edge never imports the web port.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, cast

from ziggurat.api.competition import Competition, Context, Listener
from ziggurat.api.guard import bearer_token
from ziggurat.web.connect import CallContext
from ziggurat.web.details import connect_error


class CompetitionConnectInterceptor:
    """The web port's check: a connectrpc interceptor applying :meth:`Competition.check` to
    every Connect call (listener :attr:`Listener.WEB`) before its handler runs."""

    def __init__(self, competition: Competition) -> None:
        self.competition = competition

    def _check(self, request: Any, ctx: Any) -> None:
        info = ctx.method
        method = f"/{info.service_name}/{info.name}"
        # The web port's call context answers what bearer_token reads (invocation_metadata).
        token = bearer_token(cast(Context, CallContext(ctx)))
        refusal = self.competition.check(method, Listener.WEB, token, request)
        if refusal is not None:
            raise connect_error(refusal)

    async def intercept_unary(
        self, call_next: Callable[[Any, Any], Awaitable[Any]], request: Any, ctx: Any, /
    ) -> Any:
        """A unary call, checked first."""
        self._check(request, ctx)
        return await call_next(request, ctx)

    async def intercept_server_stream(
        self, call_next: Callable[[Any, Any], AsyncIterator[Any]], request: Any, ctx: Any, /
    ) -> AsyncIterator[Any]:
        """A server stream (WatchMatch), checked before its first message."""
        self._check(request, ctx)
        stream = call_next(request, ctx)
        try:
            async for message in stream:
                yield message
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
