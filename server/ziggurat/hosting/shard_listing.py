"""ListMatches over every worker's shard (``ziggurat serve --workers N``): one list, newest first.

Each shard is read read-only for its page of ids (the same keyset walk a single server does,
by rowid), and the shards' pages are merged by creation time. A page token holds one
position per shard, so a later page continues every shard exactly where the last one stopped.

What each listed match looks like is always rendered by its owner, through the per-seat view:
this worker's own matches by its manager; another worker's finished matches from the
spectators' summary that worker stored; another worker's live matches (and the caller's own
seat, when a seat token is sent) by a GetMatch call to that worker over its Unix socket, with
the caller's token passed on only for the token's own match. Every match carries the address
of its owner (``Match.server_address``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import heapq
import json
import sqlite3

import grpc

from ziggurat.core.manager import MatchManager, Page, cursor_scope
from ziggurat.core.match import hash_token
from ziggurat.core.render import frame_field
from ziggurat.hosting.shards import ShardDirectory
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as sgrpc
from ziggurat.wire import errors
from ziggurat.wire.reasons import Reason

SERVER_ADDRESS_FIELD = 11  # Match.server_address
PEER_TIMEOUT_S = 5.0


class ShardLister:
    """Merged ListMatches pages for one worker; holds its channels to the other workers."""

    def __init__(self, directory: ShardDirectory, manager: MatchManager) -> None:
        """``manager`` serves this worker's own shard; ``directory`` finds the others."""
        self.directory = directory
        self.manager = manager
        self._channels: dict[int, grpc.aio.Channel] = {}

    async def page(
        self, *, status: str | None, game: str | None, limit: int, cursor: str, token: str | None
    ) -> Page:
        """A page of every shard's matches after ``cursor``; with a seat ``token``, that seat's
        match as the seat sees it."""
        count = self.directory.count
        scope = cursor_scope(status, game)
        before = _decode(cursor, scope, count) if cursor else [None] * count
        own = self._seat_of(token) if token else None
        rows: list[list[tuple[int, int, str, int]]] = []
        for index in range(count):
            found = self._rows(index, status=status, game=game, limit=limit + 1, before=before[index])
            rows.append([(-created, index, match_id, position) for position, match_id, created in found])
        merged = list(heapq.merge(*rows))
        taken = merged[:limit]
        after = list(before)
        for index, shard_rows in enumerate(rows):
            if shard_rows:  # read but maybe none taken: later pages start below what was seen
                after[index] = shard_rows[0][3] + 1
        for _, index, _, position in taken:
            after[index] = position
        rendered = await self._render([(index, match_id) for _, index, match_id, _ in taken], own, token)
        more = len(merged) > limit
        return Page(rendered, _encode(after, scope) if more and limit else None)

    def _rows(
        self, index: int, *, status: str | None, game: str | None, limit: int, before: int | None
    ) -> list[tuple[int, str, int]]:
        if before is not None and before <= 1:
            return []
        try:
            reader = self.directory.reader(index)
            return (
                []
                if reader is None
                else reader.page_rows(status=status, game=game, limit=limit, before=before)
            )
        except sqlite3.Error as error:
            raise errors.refuse(
                Reason.WORKER_UNAVAILABLE, f"the matches of worker {index} cannot be read now ({error})"
            ) from None

    def _seat_of(self, token: str) -> tuple[int, str, int]:
        """(shard, match_id, seat) of a seat token, looked up in every shard; BAD_TOKEN otherwise."""
        digest = hash_token(token)
        for index in range(self.directory.count):
            reader = self.directory.reader(index)
            found = None if reader is None else reader.seat_of_token(digest)
            if found is not None:
                return index, found[0], found[1]
        raise errors.refuse(Reason.BAD_TOKEN, "the token is not a seat token of any match")

    async def _render(
        self, listed: list[tuple[int, str]], own: tuple[int, str, int] | None, token: str | None
    ) -> list[bytes]:
        """Each listed match as its owner renders it for the caller, with its owner's address."""
        here = self.directory.index
        out: dict[tuple[int, str], bytes | None] = {}
        remote: dict[int, list[str]] = {}
        for index, match_id in listed:
            if index == here:
                audience = own[2] if own is not None and own[:2] == (index, match_id) else None
                out[(index, match_id)] = self.manager.summary_bytes(match_id, audience)
            else:
                remote.setdefault(index, []).append(match_id)
        calls = []
        for index, ids in remote.items():
            mine = own[1] if own is not None and own[0] == index else None
            reader = self.directory.reader(index)
            stored = {} if reader is None else reader.spectator_summaries([m for m in ids if m != mine])
            for match_id in ids:
                if match_id in stored:
                    out[(index, match_id)] = stored[match_id]
                else:
                    calls.append((index, match_id, token if match_id == mine else None))
        answers = await asyncio.gather(*(self._get(index, match_id, tok) for index, match_id, tok in calls))
        for (index, match_id, _), data in zip(calls, answers, strict=True):
            out[(index, match_id)] = data
        addresses = {index: self.directory.address_of(index) for index in {i for i, _ in listed}}
        return [
            data + frame_field(SERVER_ADDRESS_FIELD, addresses[index].encode())
            for index, match_id in listed
            if (data := out[(index, match_id)]) is not None
        ]

    async def _get(self, index: int, match_id: str, token: str | None) -> bytes | None:
        """The serialized Match from its owner (None when the owner reports it damaged)."""
        channel = self._channels.get(index)
        if channel is None:
            channel = grpc.aio.insecure_channel(self.directory.socket_of(index))
            self._channels[index] = channel
        stub = sgrpc.MatchServiceStub(channel)
        metadata = (("authorization", f"Bearer {token}"),) if token else ()
        try:
            response: spb.GetMatchResponse = await stub.GetMatch(
                spb.GetMatchRequest(match_id=match_id), metadata=metadata, timeout=PEER_TIMEOUT_S
            )
        except grpc.aio.AioRpcError as error:
            if error.code() == grpc.StatusCode.DATA_LOSS:
                return None  # a damaged match answers on its own; the page goes on without it
            raise errors.refuse(
                Reason.WORKER_UNAVAILABLE,
                f"worker {index}, which owns match {match_id}, cannot be reached now; retry shortly",
            ) from None
        response.match.ClearField("server_address")
        return response.match.SerializeToString()

    async def close(self) -> None:
        """Close the channels to the other workers."""
        for channel in self._channels.values():
            await channel.close(None)
        self._channels.clear()


def _encode(positions: list[int | None], scope: str) -> str:
    """An opaque page token: each shard's position after this page, and the filters' scope."""
    raw = json.dumps({"w": [p or 0 for p in positions], "s": scope}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(token: str, scope: str, count: int) -> list[int | None]:
    bad = errors.refuse(Reason.BAD_PAGE_TOKEN, "page_token is not a next_page_token of this listing")
    if len(token) > 400:
        raise bad
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        positions, token_scope = data["w"], data["s"]
    except (binascii.Error, ValueError, TypeError, KeyError):
        raise bad from None
    if token_scope != scope or not isinstance(positions, list) or len(positions) != count:
        raise bad
    if not all(type(p) is int and p >= 0 for p in positions):
        raise bad
    return [p or None for p in positions]
