"""Group commit keeps "persist before notify": a move is told to nobody (its mover, its
seats, its spectators) before the transaction that holds it is committed, and a group whose
commit fails refuses every move in it and changes no match.

A real in-process server on a loopback port, a real client, a real database file read by a
second SQLite connection. The group's window is made long (the commit is held back) so the
test can look at everything while the moves wait, then commits the group itself.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from tests.servers import RunningServer, pylos_config
from tests.store_faults import LockedDatabase
from ziggurat.core.group_commit import GroupCommit
from ziggurat.v1 import match_pb2
from ziggurat_client import MatchHandle, ZigguratClient, ZigguratError

MATCHES = 3


def _move_rows(db: Path, match_id: str | None = None) -> int:
    """Move rows (of one match, or all) a second connection sees: only committed rows."""
    connection = sqlite3.connect(db)
    try:
        query = "SELECT COUNT(*) FROM events WHERE kind='move'" + (" AND match_id=?" if match_id else "")
        return int(connection.execute(query, (match_id,) if match_id else ()).fetchone()[0])
    finally:
        connection.close()


async def _until(condition: Callable[[], bool], what: str) -> None:
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting until {what}")


async def _setup(client: ZigguratClient) -> list[list[MatchHandle]]:
    seats = []
    for _ in range(MATCHES):
        match = await client.create_match(pylos_config())
        seats.append(sorted([await client.join(match.match_id, n) for n in ("a", "b")], key=lambda h: h.seat))
    return seats


class Watchers:
    """A spectator stream on each match that notes, at the receipt of each move, how many move
    rows a second connection to the database sees: the match's own, and all of them."""

    def __init__(self, client: ZigguratClient, db: Path, match_ids: list[str]) -> None:
        self.db = db
        self.moves: dict[str, list[tuple[int, int, int]]] = {m: [] for m in match_ids}
        self.tasks = [asyncio.create_task(self._watch(client, m)) for m in match_ids]

    async def _watch(self, client: ZigguratClient, match_id: str) -> None:
        async for event in client.watch(match_id):
            if event.HasField("move_played"):
                seen = (event.move_played.view.ply, _move_rows(self.db, match_id), _move_rows(self.db))
                self.moves[match_id].append(seen)

    def told(self) -> int:
        return sum(len(moves) for moves in self.moves.values())

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def _first_moves(client: ZigguratClient, seats: list[list[MatchHandle]]) -> list[asyncio.Task[Any]]:
    """Light's first move in every match, each sent as its own SubmitMove, not awaited."""
    tasks = []
    for handles in seats:
        view = (await client.get_match(handles[0].match_id, handles[0])).view
        tasks.append(asyncio.create_task(client.submit_move(handles[0], view.legal_moves[0], 0)))
    return tasks


@dataclass
class Held:
    """A move of light in each of MATCHES matches, sent, decided and waiting in one group."""

    seats: list[list[MatchHandle]]
    ids: list[str]
    group: GroupCommit
    watchers: Watchers
    before: dict[str, bytes]  # each match as a spectator saw it before the move
    groups_before: int  # transactions the group had made before
    submits: list[asyncio.Task[Any]]


async def _moves_held_in_one_group(server: RunningServer, client: ZigguratClient) -> Held:
    seats = await _setup(client)
    ids = [handles[0].match_id for handles in seats]
    group = server.server.manager.group
    assert group is not None, "the server groups commits"
    group.window_s = 600.0  # the commit waits until the test flushes the group
    watchers = Watchers(client, server.db_path, ids)
    before = {m: (await client.get_match(m)).SerializeToString() for m in ids}
    held = Held(seats, ids, group, watchers, before, group.groups, await _first_moves(client, seats))
    await _until(lambda: group.queued == MATCHES, "every move waits in the group")
    return held


async def test_moves_of_many_matches_are_told_only_after_their_one_commit(
    server: RunningServer, client: ZigguratClient
) -> None:
    held = await _moves_held_in_one_group(server, client)
    await asyncio.sleep(0.2)  # time for anything told too early to arrive
    assert not any(task.done() for task in held.submits), "no mover is answered before the commit"
    assert held.watchers.told() == 0, "no spectator hears of a move before the commit"
    assert _move_rows(server.db_path) == 0
    for match_id in held.ids:
        assert (await client.get_match(match_id)).view.ply == 0, "memory waits for the commit"

    held.group.flush()
    answers = await asyncio.gather(*held.submits)
    assert held.group.groups == held.groups_before + 1, "the moves of every match in one transaction"
    assert [a.seq for a in answers] == [answers[0].seq] * MATCHES
    await _until(lambda: held.watchers.told() == MATCHES, "every spectator hears of its move")
    for match_id in held.ids:
        assert held.watchers.moves[match_id] == [(1, 1, MATCHES)], "told only once every row was durable"
        assert (await client.get_match(match_id)).view.ply == 1
    await held.watchers.close()


async def test_a_failed_group_commit_refuses_every_move_in_it_and_changes_nothing(
    server: RunningServer, client: ZigguratClient
) -> None:
    held = await _moves_held_in_one_group(server, client)
    lock = LockedDatabase(server.db_path)
    lock.on()
    try:
        held.group.flush()
        results = await asyncio.gather(*held.submits, return_exceptions=True)
    finally:
        lock.off()
    for result in results:
        assert isinstance(result, ZigguratError), result
        assert result.code == grpc.StatusCode.UNAVAILABLE and result.reason == "STORE_UNAVAILABLE"
    await asyncio.sleep(0.2)
    assert held.watchers.told() == 0 and _move_rows(server.db_path) == 0
    for match_id in held.ids:
        seen = (await client.get_match(match_id)).SerializeToString()
        assert seen == held.before[match_id], "memory unchanged"

    held.group.window_s = 0.0  # commit as usual again: the same moves now go through
    retried = await _first_moves(client, held.seats)
    await asyncio.gather(*retried)
    await _until(lambda: held.watchers.told() == MATCHES, "every spectator hears of its move")
    for match_id in held.ids:
        assert [seen[:2] for seen in held.watchers.moves[match_id]] == [(1, 1)], "told once, after its commit"
        match = await client.get_match(match_id)
        assert match.view.ply == 1 and match.status == match_pb2.MATCH_STATUS_ACTIVE
    await held.watchers.close()
