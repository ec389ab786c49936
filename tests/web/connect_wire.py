"""Raw Connect calls for the tests: any body, any content type, and the refusal as sent.

The Connect protocol written out by hand over the standard library's HTTP/1.1 client (one
kept-alive connection per :class:`Http`), so a test can send what no generated client
would (a misspelt enum name, a JSON array, corrupt protobuf) and read exactly what came
back: the HTTP status, the headers and the Connect error's JSON, ``debug`` included.
"""

from __future__ import annotations

import asyncio
import base64
import http.client
import json
import struct
from dataclasses import dataclass
from typing import Any

from google.rpc import error_details_pb2

END_STREAM = 0x02


@dataclass(frozen=True)
class Answer:
    """One HTTP response."""

    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes


@dataclass(frozen=True)
class Refusal:
    """A refused call, in the gRPC vocabulary: status name, message, ErrorInfo reason (or None)."""

    code: str
    message: str
    reason: str | None


class Http:
    """One kept-alive HTTP/1.1 connection to the web port (calls run in a thread)."""

    def __init__(self, base: str) -> None:
        host, port = base.removeprefix("http://").split(":")
        self.connection = http.client.HTTPConnection(host, int(port), timeout=10)

    def post_now(
        self, path: str, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> Answer:
        """POST ``body`` to ``path`` on this connection (blocking)."""
        self.connection.request(
            "POST", path, body=body, headers={"content-type": content_type, **(headers or {})}
        )
        response = self.connection.getresponse()
        data = response.read()
        return Answer(response.status, {k.lower(): v for k, v in response.getheaders()}, data)

    async def post(
        self, path: str, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> Answer:
        """:meth:`post_now` off the event loop (the server runs on it)."""
        return await asyncio.to_thread(self.post_now, path, body, content_type, headers)

    def close(self) -> None:
        """Close the connection."""
        self.connection.close()


def envelope(message: bytes, flags: int = 0) -> bytes:
    """One Connect streaming envelope: flags, big-endian length, message."""
    return struct.pack(">BI", flags, len(message)) + message


def envelopes(body: bytes) -> list[tuple[int, bytes]]:
    """The (flags, message) envelopes of a Connect streaming body."""
    out = []
    while body:
        flags, size = struct.unpack(">BI", body[:5])
        out.append((flags, body[5 : 5 + size]))
        body = body[5 + size :]
    return out


def error_of(error: dict[str, Any]) -> Refusal:
    """A Connect error's JSON as a refusal; its ``debug`` must say what its ``value`` says."""
    reason = None
    for detail in error.get("details", []):
        if detail["type"] == "google.rpc.ErrorInfo":
            info = error_details_pb2.ErrorInfo.FromString(base64.b64decode(detail["value"] + "=="))
            assert detail["debug"]["reason"] == info.reason, detail
            assert detail["debug"]["domain"] == info.domain == "ziggurat", detail
            assert detail["debug"].get("metadata", {}) == dict(info.metadata), detail
            reason = info.reason
    return Refusal(error["code"].upper(), error.get("message", ""), reason)


def refusal(answer: Answer, *, stream: bool) -> Refusal | None:
    """The refusal in a unary or streaming Connect answer, or None when the call succeeded."""
    if not stream:
        if answer.status == 200:
            return None
        assert answer.headers["content-type"] == "application/json", answer
        return error_of(json.loads(answer.body))
    assert answer.status == 200, answer
    for flags, message in envelopes(answer.body):
        if flags & END_STREAM:
            end = json.loads(message)
            return error_of(end["error"]) if "error" in end else None
    raise AssertionError(f"a stream without its end message: {answer}")
