"""The conduct limit counts every refused move of the seat to move: illegal, malformed notation,
or text too long to be a move at all (a bot flooding junk must not play on forever)."""

from __future__ import annotations

import pytest

from tests.servers import RunningServer
from ziggurat.core.decide import MAX_MOVE_TEXT
from ziggurat.core.timecontrol import TimeControl
from ziggurat.wire.errors import ApiError


@pytest.mark.parametrize("junk", ["x" * (MAX_MOVE_TEXT + 1), "zz9", "1a1 1a2"])
async def test_junk_moves_count_against_the_limit(server: RunningServer, junk: str) -> None:
    match = server.server.manager.create("pylos", 2, {}, TimeControl(max_illegal_moves=2), "chosen")
    match.join("light", 0)
    match.join("dark", 1)
    for attempt in range(3):
        with pytest.raises(ApiError) as refused:
            match.submit(0, junk)
        assert refused.value.reason in ("MALFORMED_MOVE", "ILLEGAL_MOVE")
        assert (match.status == "finished") == (attempt == 2)  # the third one is over the limit
    assert match.outcome() is not None and match.outcome().termination.value == "illegal_move"  # type: ignore[union-attr]
    assert match.outcome().ranks == (2, 1)  # type: ignore[union-attr]


async def test_junk_from_a_seat_not_on_turn_is_refused_and_not_counted(server: RunningServer) -> None:
    match = server.server.manager.create("pylos", 2, {}, TimeControl(max_illegal_moves=1), "chosen")
    match.join("light", 0)
    match.join("dark", 1)
    for _ in range(3):
        with pytest.raises(ApiError) as refused:
            match.submit(1, "x" * (MAX_MOVE_TEXT + 1))
        assert refused.value.reason == "MALFORMED_MOVE"
    assert match.status == "active"
