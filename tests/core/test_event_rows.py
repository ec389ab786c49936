"""The log's rows on disk: new rows are written exactly as before, and old rows still replay.

:func:`ziggurat.core.events.encode` builds the JSON of the two events of every ply by
hand (the generic encoder was a measurable part of a ply): it must give the very bytes
``json.dumps`` gave, so that databases written by any version read alike.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.servers import ServerProcess, pylos_config, random_chooser
from ziggurat.core.events import (
    Created,
    Ended,
    Event,
    Forfeited,
    MovePlayed,
    PresenceChanged,
    SeatJoined,
    Started,
    TurnStarted,
    encode,
    from_stored,
)
from ziggurat.v1 import match_pb2
from ziggurat.verify import verify_record
from ziggurat_client import ZigguratClient

texts = st.text(max_size=12)
ints = st.integers(min_value=0, max_value=2**40)
seats = st.integers(min_value=0, max_value=3)
states = st.lists(
    st.sampled_from(["joined", "connected", "disconnected", "timed_out", "resigned", "illegal_moves"]),
    min_size=1,
    max_size=4,
).map(tuple)
every_ply: st.SearchStrategy[Event] = st.one_of(
    st.builds(MovePlayed, seats, texts, st.booleans(), st.none() | ints),
    st.builds(TurnStarted, seats, ints, ints, st.lists(ints, max_size=4).map(tuple), states),
)
others: st.SearchStrategy[Event] = st.one_of(
    st.builds(Created, st.booleans(), st.booleans()),
    st.builds(SeatJoined, seats, texts),
    st.builds(PresenceChanged, seats, texts, st.booleans()),
    st.builds(Started, st.lists(texts, min_size=1, max_size=4).map(tuple), states),
    st.builds(Forfeited, seats, st.sampled_from(["resignation", "timeout"]), st.none() | ints),
    st.builds(Ended, st.just("resignation"), st.lists(seats, max_size=4).map(tuple), states),
)


@given(st.one_of(every_ply, others))
def test_encode_writes_what_json_dumps_wrote(event: Event) -> None:
    text = encode(event)
    assert text == json.dumps(event.data(), separators=(",", ":"))
    assert from_stored(event.kind, json.loads(text), 4) == event


def _rewrite_as_old_rows(db: Path) -> int:
    """Rewrite every event row the way the first versions wrote them: ``json.dumps`` with its
    default separators, no ``states`` in turn, started and ended rows, and no hash-chain link
    (the match is then unchained, as one an older version stored). Returns the rows.
    """
    connection = sqlite3.connect(db, isolation_level=None)
    try:
        rows = connection.execute("SELECT match_id, seq, kind, data_json FROM events").fetchall()
        connection.execute("BEGIN")
        for match_id, seq, kind, text in rows:
            data = json.loads(text)
            if kind in ("turn", "started", "ended"):
                data.pop("states", None)
            connection.execute(
                "UPDATE events SET data_json=?, chain=NULL WHERE match_id=? AND seq=?",
                (json.dumps(data), match_id, seq),
            )
        connection.execute("COMMIT")
    finally:
        connection.close()
    return len(rows)


async def test_a_match_logged_in_the_old_row_format_is_restored_and_played_to_its_end(tmp_path: Path) -> None:
    db = tmp_path / "z.db"
    server = ServerProcess(db, ["--no-web"])
    server.start()
    try:
        async with ZigguratClient(server.address) as client:
            match = await client.create_match(pylos_config())
            handles = [await client.join(match.match_id, name) for name in ("a", "b")]
            choose = random_chooser(7)
            by_seat = {handle.seat: handle for handle in handles}  # seats are drawn by lot
            assert sorted(by_seat) == [1, 2]
            for ply in range(10):
                handle = by_seat[(await client.get_match(match.match_id)).view.to_move]
                seen = await client.get_match(match.match_id, handle)  # the seat's view has its moves
                assert seen.view.to_move == handle.seat
                await client.submit_move(handle, choose(seen.view), ply)
        assert server.terminate() == 0
    finally:
        server.stop()
    old_rows = _rewrite_as_old_rows(db)
    assert old_rows >= 2 + 2 * 10  # created, two joins, the start, then a move and a turn per ply

    server = ServerProcess(db, ["--no-web"])
    server.start()
    try:
        async with ZigguratClient(server.address) as client:
            restored = await client.get_match(match.match_id)
            assert restored.status == match_pb2.MATCH_STATUS_ACTIVE and restored.view.ply == 10
            await asyncio.gather(*(client.play(h, random_chooser(h.seat)) for h in handles))
            record = await client.record(match.match_id)
            watched = [event async for event in client.watch(match.match_id)]
        assert server.terminate() == 0
    finally:
        server.stop()
    assert verify_record(record).ok
    assert [e.seq for e in watched] == list(range(1, len(watched) + 1))
    moves = [e.move_played.move for e in watched if e.HasField("move_played")]
    assert moves == [m.move for m in record.moves]
    connection = sqlite3.connect(db)
    try:
        texts = [text for (text,) in connection.execute("SELECT data_json FROM events ORDER BY seq")]
    finally:
        connection.close()
    assert all(", " in text or text == "{}" for text in texts[:old_rows])  # the old rows, as they were
    assert len(texts) > old_rows and not any(", " in text for text in texts[old_rows:])
