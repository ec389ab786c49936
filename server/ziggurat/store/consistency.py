"""Structural checks of one stored match, before anything tries to replay it.

Replaying a log through the rules catches an illegal or malformed move, but not a hole in
the log (a deleted event row), a seat whose token row is gone, a status that disagrees with
the log, a seed that no longer matches its published commitment, or an event rewritten
after it was written (one legal move for another: its hash-chain link no longer matches,
:mod:`ziggurat.store.chain`). Those are checked here, from the stored rows alone.
"""

from __future__ import annotations

from ziggurat.rules.core import RulesError
from ziggurat.rules.seeding import commitment
from ziggurat.store.chain import first_break
from ziggurat.store.sqlite import StoredMatch

STATUSES = ("waiting", "active", "finished")


def structural_problems(stored: StoredMatch) -> list[str]:
    """What is wrong with the rows of ``stored`` (empty when nothing is)."""
    problems: list[str] = []
    if stored.status not in STATUSES:
        problems.append(f"unknown status {stored.status!r}")
    try:
        if commitment(stored.seed) != stored.commitment:
            problems.append("the seed does not match the commitment published at creation")
    except RulesError:
        problems.append(f"the seed is {len(stored.seed)} bytes, not 32")
    seqs = [event.seq for event in stored.events]
    expected = list(range(1, len(seqs) + 1))
    if seqs != expected:
        missing = sorted(set(expected) - set(seqs)) or sorted(set(seqs) - set(expected))
        problems.append(f"the event log has a hole or a stray entry at seq {missing[:5]}")
    broken = first_break(
        stored.commitment, ((e.seq, e.time_ms, e.kind, e.data_json, e.chain) for e in stored.events)
    )
    if broken is not None:
        problems.append(f"the log's hash chain breaks at seq {broken[0]}: {broken[1]}")
    if not stored.events or stored.events[0].kind != "created":
        problems.append("the event log does not start with the creation")
    ended = bool(stored.events) and stored.events[-1].kind == "ended"
    if (stored.status == "finished") != ended:
        problems.append(f"the status is {stored.status!r} but the log {'ends' if ended else 'does not end'}")
    rows = {seat: name for seat, name, _ in stored.seat_rows}
    if any(not 0 <= seat < stored.seats for seat in rows):
        problems.append("a seat row names a seat the match does not have")
    for event in stored.events:
        data = event.data
        if event.kind == "seat" and data.get("state") == "joined":
            seat = data.get("seat")
            if not isinstance(seat, int) or rows.get(seat) != data.get("name"):
                problems.append(f"a seat ({seat!r}, 0-based) joined but its row is gone or differs")
    return problems
