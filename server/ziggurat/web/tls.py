"""TLS on the web port: the same certificate as the gRPC port, with its limits from accept.

Why not uvicorn's own ``ssl_certfile``: uvicorn hands the context to asyncio's
``create_server``, which runs the TLS handshake *before* uvicorn's protocol hears of the
connection, with asyncio's 60 s handshake timeout. A connection that never finishes its
handshake would then hold a file descriptor unseen by the open-connection caps
(``--max-web-connections-per-address``) and past ``--handshake-timeout``: exactly the silent
connections those limits are for. So the web port accepts plain TCP as before, counts the
connection at accept, and only then upgrades it with ``loop.start_tls`` (public asyncio API);
one ``--handshake-timeout`` covers the TLS handshake and the first request together. A client
that speaks plain HTTP to this port fails the handshake and is closed: it gets no answer at all.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("ziggurat.web")


def server_context(cert_file: str, key_file: str) -> ssl.SSLContext:
    """A server-side TLS context (TLS 1.2 or later, HTTP/1.1 by ALPN) for ``cert_file`` (the
    certificate chain, PEM) and its ``key_file``; OSError or ssl.SSLError when unusable."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert_file, key_file)
    context.set_alpn_protocols(["http/1.1"])
    return context


class Handshakes:
    """The TLS handshakes under way on one port: cancelled when the port stops, so that
    shutdown does not wait for a client that never finishes its own."""

    def __init__(self, context: ssl.SSLContext, timeout: float) -> None:
        self.context = context
        self.timeout = timeout  # seconds from accept to the first request (0 = no limit)
        self.pending: set[asyncio.Task[None]] = set()

    def cancel_all(self) -> None:
        """Cancel every handshake still under way (their connections are closed)."""
        for task in list(self.pending):
            task.cancel()


class _Handoff(asyncio.Protocol):
    """Holds what arrives on the encrypted connection between the end of the handshake and
    the moment the HTTP protocol takes it over (asyncio delivers decrypted bytes at once, before
    ``start_tls``'s caller runs again)."""

    def __init__(self) -> None:
        self.data: list[bytes] = []
        self.eof = False
        self.lost: tuple[Exception | None] | None = None

    def data_received(self, data: bytes) -> None:
        self.data.append(data)

    def eof_received(self) -> bool | None:
        self.eof = True
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = (exc,)

    def deliver(self, protocol: asyncio.Protocol, transport: asyncio.Transport) -> None:
        """Give ``protocol`` what arrived meanwhile, in order."""
        for chunk in self.data:
            protocol.data_received(chunk)
        self.data.clear()
        if self.eof and not protocol.eof_received():
            transport.close()
        if self.lost is not None:
            protocol.connection_lost(self.lost[0])


class TlsFront(asyncio.Protocol):
    """One accepted connection of an HTTPS web port: admitted (or closed at once), timed from
    accept, upgraded to TLS, then handed to uvicorn's HTTP protocol ``inner``.

    ``admit`` counts the connection in (its address group, or None: closed before anything is
    read); ``release`` counts it out when the handshake fails, else ``inner`` does when its
    connection is lost (``inner.counted`` carries the group).
    """

    def __init__(
        self,
        inner: H11Protocol,
        handshakes: Handshakes,
        admit: Callable[[Any], str | None] | None,
        release: Callable[[str], None] | None,
    ) -> None:
        self.inner = inner
        self.handshakes = handshakes
        self.admit = admit
        self.release = release
        self.counted: str | None = None
        self.raw: asyncio.Transport | None = None
        self.task: asyncio.Task[None] | None = None
        self.due: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Count the connection at accept and start its handshake (reading paused until then)."""
        assert isinstance(transport, asyncio.Transport)
        transport.pause_reading()
        if self.admit is not None:
            self.counted = self.admit(transport.get_extra_info("peername"))
            if self.counted is None:
                transport.close()
                return
        self.raw = transport
        loop = asyncio.get_running_loop()
        if self.handshakes.timeout > 0:
            self.due = loop.call_later(self.handshakes.timeout, self._first_request_due)
        self.task = loop.create_task(self._secure(transport))
        self.handshakes.pending.add(self.task)
        self.task.add_done_callback(self._handshake_ended)

    def connection_lost(self, exc: Exception | None) -> None:
        """Lost before the handshake began (the transport is TLS's from then on)."""
        if self.task is not None:
            self.task.cancel()

    async def _secure(self, raw: asyncio.Transport) -> None:
        handoff = _Handoff()
        timeout = self.handshakes.timeout if self.handshakes.timeout > 0 else None
        secure = await asyncio.get_running_loop().start_tls(
            raw, handoff, self.handshakes.context, server_side=True, ssl_handshake_timeout=timeout
        )
        if secure is None:  # lost as the handshake ended
            return
        self.raw = None  # the HTTP protocol's from now on, and so is counting it out
        self.inner.counted = self.counted  # type: ignore[attr-defined]  # HandshakeLimited's
        self.counted = None
        self.inner.connection_made(secure)
        secure.set_protocol(self.inner)
        handoff.deliver(self.inner, secure)

    def _handshake_ended(self, task: asyncio.Task[None]) -> None:
        """A handshake that failed, timed out or was cancelled: close, count out."""
        self.handshakes.pending.discard(task)
        if self.raw is None:
            return
        self.raw.close()
        self.raw = None
        if self.due is not None:
            self.due.cancel()
        if self.counted is not None and self.release is not None:
            self.release(self.counted)
        self.counted = None
        error = None if task.cancelled() else task.exception()
        if isinstance(error, (OSError, EOFError)):  # ssl.SSLError is an OSError
            log.debug("closed a web connection: TLS handshake failed: %s", error)
        elif error is not None:
            log.error("a web connection's TLS handshake failed unexpectedly", exc_info=error)

    def _first_request_due(self) -> None:
        """``--handshake-timeout`` after accept: a connection still in its TLS handshake, or
        with no request begun, is closed."""
        if self.task is not None and not self.task.done():
            log.debug("closed a web connection: no TLS handshake in time")
            self.task.cancel()
            return
        transport = self.inner.transport
        if self.inner.cycle is None and transport is not None and not transport.is_closing():
            log.debug("closed a web connection from %s: no request in time", self.inner.client)
            transport.close()
