"""Before a spectator's screen opens: does the match exist, and does the server answer?

Why: the game screen retries a dropped stream forever (right for a match being watched),
so without this check ``ziggurat watch`` of a mistyped id, or of a server that is down,
showed "Waiting for players" forever. A server that does not answer is retried for a few
seconds only (it may be starting); then the spectator is told, and the command fails.
"""

from __future__ import annotations

import asyncio

import grpc

from ziggurat.v1 import match_pb2
from ziggurat_client.client import ZigguratClient, ZigguratError

CONNECT_SECONDS = 5.0  # how long a server that does not answer is retried


class WatchError(Exception):
    """The match cannot be watched; the message says why, for a person."""


async def check_watchable(
    client: ZigguratClient, match_id: str, *, wait_seconds: float = CONNECT_SECONDS
) -> match_pb2.Match:
    """The match as a spectator sees it, or :class:`WatchError` (unknown match, server down)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait_seconds
    delay = 0.2
    while True:
        left = deadline - loop.time()
        try:
            return await asyncio.wait_for(client.get_match(match_id), timeout=max(0.1, left))
        except ZigguratError as error:
            if error.code == grpc.StatusCode.NOT_FOUND:
                raise WatchError(f"there is no match {match_id} on {client.address}") from None
            if not error.retryable:
                detail = f"{error.reason or error.code.name}: {error.message}"
                raise WatchError(f"cannot watch match {match_id}: {detail}") from None
            why = f"{error.code.name}: {error.message}"
        except TimeoutError:
            why = "no answer"
        if loop.time() + delay >= deadline:
            raise WatchError(
                f"cannot reach the server at {client.address} ({why}; gave up after {wait_seconds:g} s)"
            )
        await asyncio.sleep(delay)
        delay = min(1.0, delay * 2)
