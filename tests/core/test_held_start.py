"""Held matches (tournaments): the start waits for the organiser, the opening is part of it.

A held match does not start on its last join: seats can connect first, and its clocks start
only on ``Match.begin``. The opening moves are played as the match starts, without a turn for
any of them, so the first turn a bot sees is the position after them; the record holds them as
moves and verifies.
"""

from __future__ import annotations

import pytest

from tests.servers import RunningServer
from ziggurat.core.records import match_record
from ziggurat.core.timecontrol import TimeControl
from ziggurat.verify import verify_record
from ziggurat_client import ZigguratClient
from ziggurat_client.client import MatchHandle

OPENING = ("1a1", "1d4", "1a4")


async def test_a_held_match_starts_on_begin_after_its_opening(
    server: RunningServer, client: ZigguratClient
) -> None:
    manager = server.server.manager
    match = manager.create("pylos", 2, {}, TimeControl(per_move_ms=1000), "chosen", held=True)
    tokens = [match.join(name, seat)[0] for seat, name in enumerate(("light", "dark"))]
    assert match.status == "waiting"  # full, but held
    handle = MatchHandle(match.match_id, 2, tokens[1])
    seen = []
    async for event in client.watch(match.match_id, handle=handle):
        seen.append(event.WhichOneof("kind"))
        if len(seen) == 3:  # created, two joins: nothing more until begin
            assert match.presence(1) == "connected"  # a seat connects before the start
            assert match.status == "waiting"
            break
    match.begin(OPENING)
    assert match.status == "active"
    kinds = [entry.event.kind for entry in match.entries]
    start = kinds.index("started")
    assert set(kinds[:start]) == {"created", "seat"}  # joins (and the seat that connected)
    assert kinds[start:] == ["started", "move", "move", "move", "turn"]
    turn = match.entries[-1].event
    assert (turn.seat, turn.ply) == (1, 3)  # dark to move after three opening plies: the only turn
    assert [entry.event.move for entry in match.entries[start + 1 : start + 4]] == list(OPENING)
    match.resign(1)
    assert match.status == "finished"
    verdict = verify_record(match_record(match))
    assert verdict.ok, verdict.problem


async def test_begin_refuses_what_is_not_a_held_full_match(server: RunningServer) -> None:
    manager = server.server.manager
    held = manager.create("pylos", 2, {}, TimeControl(), "chosen", held=True)
    held.join("light", 0)
    with pytest.raises(ValueError, match="every seat"):
        held.begin()
    held.join("dark", 1)
    with pytest.raises(ValueError, match="opening move 'zz9'"):
        held.begin(("zz9",))
    assert held.status == "waiting"  # a refused begin changes nothing
    held.begin()
    with pytest.raises(ValueError, match="held match"):
        held.begin()
    plain = manager.create("pylos", 2, {}, TimeControl(), "chosen")
    plain.join("light", 0)
    plain.join("dark", 1)
    assert plain.status == "active"  # not held: starts on its last join, as before
