"""What the web port checks of a request before Connect reads it: its content type and its size.

* **A gRPC content type** (``application/grpc``, ``application/grpc+proto``, ...) is answered
  with a gRPC status, not served: gRPC needs HTTP/2 trailers, which this HTTP/1.1 port does
  not have, and connectrpc failed on it with an exception that uvicorn logged with a full
  traceback (``Exception in ASGI application``) before answering ``grpc-status: 2``. The
  answer is what every gRPC client reads as a refusal: a *trailers-only* response (HTTP 200,
  ``content-type: application/grpc``, ``grpc-status: 12`` UNIMPLEMENTED and a
  ``grpc-message`` that points to the gRPC port), and no log line. gRPC-Web
  (``application/grpc-web*``) is served: it carries its trailers in the body.
* **The size limit** (``--max-message-bytes``, 64 KiB by default) holds here as on the gRPC
  port: a request whose message is larger is refused with RESOURCE_EXHAUSTED and the message
  gRPC itself gives (``SERVER: Received message larger than max (N vs. LIMIT)``, no
  ErrorInfo), before more than the limit is read. The size is the body's (``content-length`` when sent, else
  what has arrived): the message's protobuf bytes with ``application/proto``, its JSON text
  with ``application/json``; a stream's body (``application/connect+…``) has a 5-byte
  envelope before its one message, which is not counted. A compressed body
  (``content-encoding: gzip``) is held to the limit once inflated, and one that is not gzip
  is MALFORMED_REQUEST (:class:`Gzip`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from connectrpc.code import Code
from connectrpc.compression.gzip import GzipCompression
from connectrpc.errors import ConnectError

from ziggurat.web.details import connect_error
from ziggurat.wire import errors
from ziggurat.wire.reasons import Reason

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

GRPC_TYPES = ("application/grpc",)
GRPC_WEB_TYPE = "application/grpc-web"
ENVELOPED_TYPES = ("application/connect+", GRPC_WEB_TYPE)
ENVELOPE_BYTES = 5
GRPC_UNIMPLEMENTED = 12
GRPC_REFUSAL = (
    "this is ziggurat's web port: it serves the Connect protocol (application/json, application/proto) "
    "and gRPC-Web over HTTP/1.1, not gRPC; call the gRPC port (ziggurat serve --port, default 50051)"
)


def header(scope: Scope, name: bytes) -> str:
    """The value of the request header ``name`` (lower case), or ``""``."""
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return ""


def wants_grpc(scope: Scope) -> bool:
    """Whether the request is gRPC (not gRPC-Web), which this port does not serve."""
    kind = header(scope, b"content-type").strip().lower()
    return kind.startswith(GRPC_TYPES) and not kind.startswith(GRPC_WEB_TYPE)


async def refuse_grpc(send: Send) -> None:
    """Answer a gRPC request with a trailers-only UNIMPLEMENTED status (see the module docstring)."""
    headers = [
        (b"content-type", b"application/grpc"),
        (b"grpc-status", str(GRPC_UNIMPLEMENTED).encode()),
        (b"grpc-message", GRPC_REFUSAL.encode()),
        (b"content-length", b"0"),
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": b"", "more_body": False})


def too_large(size: int, limit: int) -> ConnectError:
    """The refusal of a request message of ``size`` bytes, worded as gRPC words it."""
    return ConnectError(
        Code.RESOURCE_EXHAUSTED, f"SERVER: Received message larger than max ({size} vs. {limit})"
    )


def limited_body(scope: Scope, receive: Receive, limit: int) -> Receive:
    """``receive``, refusing (:func:`too_large`) a body whose message is over ``limit`` bytes:
    at once when ``content-length`` says so, else as soon as more has arrived."""
    kind = header(scope, b"content-type").strip().lower()
    envelope = ENVELOPE_BYTES if kind.startswith(ENVELOPED_TYPES) else 0
    declared = header(scope, b"content-length").strip()
    length = int(declared) if declared.isdigit() else None
    received = 0

    async def limited() -> dict[str, Any]:
        nonlocal received
        if length is not None and length - envelope > limit:
            raise too_large(length - envelope, limit)
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received - envelope > limit:
                raise too_large(received - envelope, limit)
        return message

    return limited


class Gzip(GzipCompression):
    """connectrpc's gzip, but a body that is not gzip is MALFORMED_REQUEST with no zlib text
    (connectrpc answered ``decompress: Error -3 while decompressing data: incorrect header
    check``); one that inflates past the size limit stays RESOURCE_EXHAUSTED."""

    def decompress(self, data: bytes | bytearray | memoryview, read_max_bytes: int | None = None) -> bytes:
        """The inflated body."""
        try:
            return super().decompress(data, read_max_bytes)
        except ConnectError:
            raise
        except Exception:  # zlib.error, EOFError, OSError: whatever a hostile body makes gzip raise
            raise connect_error(
                errors.refuse(
                    Reason.MALFORMED_REQUEST, "the request body is not valid gzip (content-encoding)"
                )
            ) from None
