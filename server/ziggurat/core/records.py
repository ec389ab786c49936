"""Match records: everything needed to replay a finished match and verify its set-up, with
its log as stored and the log's hash chain (:mod:`ziggurat.store.chain`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ziggurat.core.events import Ended, Forfeited, MovePlayed, SeatJoined
from ziggurat.core.render import SEAT_ASSIGNMENTS, render_match
from ziggurat.rules.core import Termination
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.wire.codec import TERMINATIONS, outcome_to_proto

if TYPE_CHECKING:
    from ziggurat.core.match import Match


def match_record(match: Match) -> spb.MatchRecord:
    """The record of a finished match (callers check that it is finished: the seed is in it)."""
    seed = match.revealed_seed
    if seed is None:
        raise ValueError("a record exists only for a finished match")
    summary = render_match(match, None)
    record = spb.MatchRecord(
        match_id=match.match_id,
        config=summary.config,
        time_control=summary.time_control,
        seats=summary.seats,
        seed_commitment=match.commitment,
        revealed_seed=seed.hex(),
        seat_assignment=SEAT_ASSIGNMENTS[match.seat_assignment],
    )
    # The log as stored, with its links: read from the database (memory holds no links), so
    # that a history changed there after it was written shows in the record's verification.
    for stored in match._store.chained_log(match.match_id):
        if stored.chain is None:
            del record.log[:]  # an unchained match (stored before chaining): no log at all
            break
        link = record.log.add(seq=stored.seq, time_ms=stored.time_ms, kind=stored.kind)
        link.data_json, link.chain = stored.data_json, stored.chain
    ply = 0
    for entry in match.entries:
        event = entry.event
        if isinstance(event, SeatJoined):
            record.join_order.append(event.seat + 1)
        elif isinstance(event, MovePlayed):
            record.moves.add(seat=event.seat + 1, move=event.move, substituted=event.substituted)
            ply += 1
        elif isinstance(event, Forfeited):
            termination = TERMINATIONS[Termination(event.termination)]
            record.forfeits.add(seat=event.seat + 1, ply=ply, termination=termination)
        elif isinstance(event, Ended):
            record.outcome.CopyFrom(outcome_to_proto(event.outcome))
    return record
