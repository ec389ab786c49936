"""Commit-reveal verification of a finished match record (``ziggurat verify``).

Anyone holding a record can check, without trusting the server, that:
the revealed seed matches the commitment published at the start; with seats drawn
by lot, each player sits in the seat the seed gives its place in the join order
(docs/setup-derivation.md section 3); the set-up re-derived from that seed,
replayed with the recorded moves and forfeits, accepts every move as legal; and it
ends with the recorded outcome. When the record carries the match's log (``log``), every
link of its hash chain is recomputed from the commitment (:mod:`ziggurat.store.chain`) and
the recorded moves, join order and forfeits must be the log's: a history rewritten after it
was written, one legal move for another, breaks the chain. A record without a log is
*unchained* (a match stored before chaining) and says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from ziggurat.rules.core import RulesError, Termination
from ziggurat.rules.registry import get_rules
from ziggurat.rules.seeding import commitment, seat_order
from ziggurat.store.chain import first_break
from ziggurat.v1 import match_pb2 as mpb
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.wire.codec import TERMINATIONS, config_from_proto, outcome_to_proto

_TERMINATION_BY_WIRE = {value: name for name, value in TERMINATIONS.items()}
_ABORTED = TERMINATIONS[Termination.ABORTED]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The result of a verification: ok, and the first problem found otherwise."""

    ok: bool
    problem: str = ""
    # How the seats were checked (lot: against the seed; chosen: nothing to check).
    seats: str = ""
    # How the history was checked: its hash chain, or "unchained" for an older record.
    chain: str = ""


def verify_record(record: spb.MatchRecord) -> Verdict:
    """Check a record's commitment, moves and outcome, then its log's hash chain; never
    raises on bad records. The replay comes first, so that an illegal move is named as such;
    a legal one put in place of another is what the chain then catches."""
    verdict = _replay(record)
    if not verdict.ok:
        return verdict
    chained = _chain_problem(record)
    if chained:
        return Verdict(False, chained)
    chain = f"log of {len(record.log)} events chained from the commitment" if record.log else "unchained"
    return replace(verdict, chain=chain)


def _replay(record: spb.MatchRecord) -> Verdict:
    """The checks of the set-up, every move and the outcome (the chain aside)."""
    try:
        seed = bytes.fromhex(record.revealed_seed)
    except ValueError:
        return Verdict(False, "the revealed seed is not hex")
    if len(seed) != 32:
        return Verdict(False, "the revealed seed is not 32 bytes")
    if commitment(seed) != record.seed_commitment:
        return Verdict(False, "the revealed seed does not match the commitment published at the start")
    try:
        game, seats, options = config_from_proto(record.config)
        rules = get_rules(game)
        state = rules.new_game(rules.parse_config(options, seats), seed)
    except RulesError as error:
        return Verdict(False, f"the configuration is invalid: {error}")
    joined = list(record.join_order)
    aborted = record.outcome.termination == _ABORTED
    if aborted and not record.moves:
        # Cancelled or aborted before it started: only the seats taken so far, each once.
        seats_ok = len(set(joined)) == len(joined) and set(joined) <= set(range(1, seats + 1))
    else:
        seats_ok = sorted(joined) == list(range(1, seats + 1))
    if not seats_ok:
        return Verdict(False, f"the join order {joined} does not name each of the {seats} seats once")
    if record.seat_assignment == mpb.SEAT_ASSIGNMENT_CHOSEN:
        seat_check = "seats chosen by the players"
    else:
        drawn = [seat + 1 for seat in seat_order(seed, seats)][: len(joined)]
        if joined != drawn:
            return Verdict(
                False,
                f"the seats were not drawn from the seed: players took seats {joined} in join order, "
                f"the seed gives {drawn}",
            )
        seat_check = "seats drawn by lot from the seed"
    forfeits = sorted(record.forfeits, key=lambda f: f.ply)
    pending = list(forfeits)
    for ply, move in enumerate(record.moves):
        while pending and pending[0].ply == ply:
            forfeit = pending.pop(0)
            state = rules.forfeit(
                state, forfeit.seat - 1, _TERMINATION_BY_WIRE.get(forfeit.termination, Termination.TIMEOUT)
            )
        if rules.to_move(state) != move.seat - 1:
            return Verdict(
                False, f"move {ply + 1} ({move.move}) is recorded for seat {move.seat}, not the seat to move"
            )
        try:
            state = rules.apply(state, move.move)
        except RulesError as error:
            return Verdict(False, f"move {ply + 1} ({move.move}) is not legal: {error}")
    for forfeit in pending:
        if forfeit.ply != len(record.moves):
            return Verdict(False, f"a forfeit is recorded at ply {forfeit.ply}, after the last move")
        state = rules.forfeit(
            state, forfeit.seat - 1, _TERMINATION_BY_WIRE.get(forfeit.termination, Termination.TIMEOUT)
        )
    if record.outcome.termination == _ABORTED:
        aborted_note = "aborted by the organiser: set-up and moves verified, no result to confirm"
        return Verdict(True, aborted_note, seat_check)
    outcome = rules.outcome(state)
    if outcome is None:
        return Verdict(False, "the recorded moves do not finish the game")
    if outcome_to_proto(outcome) != record.outcome:
        return Verdict(False, "the recorded outcome differs from the outcome of the replayed game")
    return Verdict(True, seats=seat_check)


def _chain_problem(record: spb.MatchRecord) -> str:
    """Why the record's log does not hold (its chain, or the record against it); "" if it does."""
    if not record.log:
        return ""
    entries = [(e.seq, e.time_ms, e.kind, e.data_json, e.chain) for e in record.log]
    if [seq for seq, *_ in entries] != list(range(1, len(entries) + 1)):
        return "the record's log has a hole or a stray entry"
    broken = first_break(record.seed_commitment, entries)
    if broken is not None:
        return f"the log's hash chain breaks at event {broken[0]}: {broken[1]}"
    joins: list[int] = []
    moves: list[tuple[int, str, bool]] = []
    forfeits: list[tuple[int, int]] = []
    for entry in record.log:
        try:
            data: dict[str, Any] = json.loads(entry.data_json)
            if entry.kind == "seat" and data.get("state") == "joined":
                joins.append(int(data["seat"]) + 1)
            elif entry.kind == "move":
                moves.append((int(data["seat"]) + 1, str(data["move"]), bool(data.get("substituted"))))
            elif entry.kind == "forfeit":
                forfeits.append((int(data["seat"]) + 1, len(moves)))
        except (ValueError, KeyError, TypeError):
            return f"event {entry.seq} of the log is not a stored event"
    recorded = [(m.seat, m.move, m.substituted) for m in record.moves]
    for ply, (ours, theirs) in enumerate(zip(recorded, moves, strict=False), 1):
        if ours != theirs:
            return f"move {ply} of the record ({ours[1]}) is not the move its chained log holds ({theirs[1]})"
    if len(recorded) != len(moves):
        return f"the record has {len(recorded)} moves, its chained log {len(moves)}"
    if list(record.join_order) != joins:
        return f"the record's join order {list(record.join_order)} is not its chained log's {joins}"
    if sorted((f.seat, f.ply) for f in record.forfeits) != sorted(forfeits):
        return "the record's forfeits are not those of its chained log"
    return ""
