"""The HTTP listener of ``ziggurat serve``: uvicorn on the same asyncio loop as grpc.aio.

Why uvicorn embedded rather than a second process: one process means one
:class:`~ziggurat.core.manager.MatchManager`, so a move made in a browser and a move
made by a gRPC bot go through the same match object, commit and fan-out. uvicorn is
driven as a task of the running loop (``Server.serve`` with a socket we bound), with its
own signal capture switched off: ``ziggurat serve`` owns SIGINT/SIGTERM and stops the
HTTP side as part of its ordered shutdown. With TLS on (``tls``), the port speaks HTTPS only
(:mod:`ziggurat.web.tls` says why it is not uvicorn's own TLS).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Iterator

import uvicorn

from ziggurat.web.app import WebApp
from ziggurat.web.limits import BodyDeadline, OpenConnections, handshake_limited
from ziggurat.web.tls import Handshakes

log = logging.getLogger("ziggurat.web")


class _EmbeddedServer(uvicorn.Server):
    """uvicorn that leaves signal handling to its host program, and ends the TLS handshakes
    under way when it stops (they are no connections of uvicorn's yet)."""

    handshakes: Handshakes | None = None

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Stop accepting, cancel the handshakes under way, then uvicorn's own shutdown."""
        for server in self.servers:
            server.close()
        if self.handshakes is not None:
            self.handshakes.cancel_all()
        await super().shutdown(sockets)


def bind(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A listening TCP socket on ``host:port`` (0 = any free port); OSError when taken.

    ``reuse_port``: the workers of ``ziggurat serve --workers N`` all bind the public web port
    (SO_REUSEPORT), as they bind the public gRPC port.

    Made with ``IPPROTO_TCP`` named, not 0: asyncio sets ``TCP_NODELAY`` on an accepted socket
    only when the socket says it is TCP (``base_events._set_nodelay`` checks ``sock.proto``),
    and an accepted socket inherits the listening one's ``proto``. With 0, Nagle's algorithm
    stayed on: uvicorn writes a response's head and body apart, the body waited for the
    client's delayed ACK of the head, and every call after the first on a kept-alive
    connection took 40-50 ms instead of 1-3 ms (benchmarks/web_vs_grpc.py).
    """
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


class WebServer:
    """Serves :class:`WebApp` on one socket until :meth:`stop`."""

    def __init__(
        self,
        app: WebApp | BodyDeadline,
        sock: socket.socket,
        *,
        grace_seconds: float = 5.0,
        handshake_timeout: float = 0.0,
        idle_timeout: float = 5.0,
        connections: OpenConnections | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        """Serve ``app`` on ``sock``, a listening socket from :func:`bind`; a connection must
        send its first request within ``handshake_timeout`` seconds (0 = no limit) and is closed
        after ``idle_timeout`` seconds without one (uvicorn's keep-alive timeout); ``connections``
        caps the connections open at once (ziggurat.web.limits.OpenConnections); with ``tls`` (a
        server context, :func:`ziggurat.web.tls.server_context`) every connection speaks HTTPS."""
        self.socket = sock
        self.port: int = self.socket.getsockname()[1]
        self.handshakes = Handshakes(tls, handshake_timeout) if tls is not None else None
        config = uvicorn.Config(
            app,
            http=handshake_limited(handshake_timeout, connections, self.handshakes),
            timeout_keep_alive=max(1, int(idle_timeout)) if idle_timeout > 0 else 2**31,
            lifespan="off",
            log_config=None,
            access_log=False,
            timeout_graceful_shutdown=max(1, int(grace_seconds)),
            server_header=False,
            ws="none",
        )
        self._server = _EmbeddedServer(config)
        self._server.handshakes = self.handshakes
        logging.getLogger("uvicorn.error").setLevel(logging.WARNING)  # our own start-up line says it
        self._task: asyncio.Task[None] | None = None

    @property
    def scheme(self) -> str:
        """``https`` when the port speaks TLS, else ``http``."""
        return "https" if self.handshakes is not None else "http"

    async def start(self) -> int:
        """Begin serving; returns the bound port once requests are accepted."""
        self._task = asyncio.create_task(self._server.serve(sockets=[self.socket]))
        while not self._server.started:
            if self._task.done():
                self._task.result()  # raises the start-up error
                raise OSError("the HTTP server stopped while starting")
            await asyncio.sleep(0.01)
        return self.port

    async def stop(self) -> None:
        """Stop accepting, let open responses finish (streams end with the matches), close."""
        if self._task is None:
            return
        self._server.should_exit = True
        try:
            await self._task
        finally:
            self._task = None
            self.socket.close()
