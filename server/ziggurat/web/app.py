"""The web client's ASGI application: the built browser UI and the API over Connect.

One origin serves both, so the browser needs no CORS: ``/ziggurat.v1.MatchService/*``
(and the other served services, :func:`ziggurat.web.connect.browser_bindings`) goes to
Connect, everything else is one of the built files shipped in
``ziggurat/web/static/`` (built from ``clients/web/`` by esbuild; serving needs no Node).
Unknown paths get the UI's ``index.html`` so a reloaded ``/#/match/ID`` or ``/match/ID``
link still opens the client. Files are read once at start-up; nothing a request says is
ever joined to a file system path.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Sequence
from importlib import resources
from typing import Any

from ziggurat.web.connect import Binding, ConnectServices

Scope = dict[str, Any]
Receive = Any
Send = Any

STATIC_PACKAGE = "ziggurat.web"
STATIC_DIR = "static"
INDEX = "index.html"
TEXT = "text/plain; charset=utf-8"
API_PREFIX = "/ziggurat.v1."


def load_static() -> dict[str, tuple[bytes, str]]:
    """The shipped UI files by URL path (``/app.js``), with their content types."""
    files: dict[str, tuple[bytes, str]] = {}
    root = resources.files(STATIC_PACKAGE) / STATIC_DIR
    if not root.is_dir():
        return files
    for entry in root.iterdir():
        if entry.is_file() and not entry.name.startswith("."):
            kind = mimetypes.guess_type(entry.name)[0] or "application/octet-stream"
            if kind.startswith("text/") or kind in ("application/javascript", "application/json"):
                kind += "; charset=utf-8"
            files[f"/{entry.name}"] = (entry.read_bytes(), kind)
    return files


class WebApp:
    """ASGI entry point: Connect for the API paths, the static UI for the rest."""

    def __init__(
        self,
        bindings: Sequence[Binding],
        static: dict[str, tuple[bytes, str]] | None = None,
        *,
        interceptors: Sequence[Any] = (),
        max_message_bytes: int,
    ) -> None:
        """``interceptors`` wrap every Connect call (the server's limits: ziggurat.web.limits); a
        request message over ``max_message_bytes`` is refused as over gRPC (0 = no limit)."""
        self.connect = ConnectServices(bindings, interceptors, max_message_bytes=max_message_bytes)
        self.static = load_static() if static is None else static

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Route one ASGI connection."""
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        # Every API path goes to Connect, so a method not served to browsers (Play, ConnectBot,
        # AdminService) answers Connect's ``unimplemented`` rather than a static file's 405.
        if path.startswith(API_PREFIX) or self.connect.serves(path):
            await self.connect(scope, receive, send)
            return
        await self._static(scope, path, send)

    async def _static(self, scope: Scope, path: str, send: Send) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await _respond(send, 405, b"method not allowed\n", TEXT, extra=[(b"allow", b"GET")])
            return
        found = self.static.get(path)
        if found is None and "." not in path.rsplit("/", 1)[-1]:
            found = self.static.get("/" + INDEX)  # a client-side route: the UI decides
        if found is None:
            await _respond(send, 404, b"not found\n", TEXT)
            return
        body, kind = found
        # Revalidate every time so a new build is picked up at once; the bundles are small.
        headers = [(b"cache-control", b"no-cache")]
        head = scope["method"] == "HEAD"
        await _respond(send, 200, b"" if head else body, kind, extra=headers, length=len(body))

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return


async def _respond(
    send: Send,
    status: int,
    body: bytes,
    kind: str,
    *,
    extra: list[tuple[bytes, bytes]] | None = None,
    length: int | None = None,
) -> None:
    headers = [
        (b"content-type", kind.encode()),
        (b"content-length", str(len(body) if length is None else length).encode()),
        (b"x-content-type-options", b"nosniff"),
        *(extra or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
