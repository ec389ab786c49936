"""Commit-reveal verification of a finished match record (``ziggurat verify``).

Anyone holding a record can check, without trusting the server, that:
the revealed seed matches the commitment published at the start; with seats drawn
by lot, each player sits in the seat the seed gives its place in the join order
(docs/setup-derivation.md section 3); the set-up re-derived from that seed,
replayed with the recorded moves and forfeits, accepts every move as legal; and it
ends with the recorded outcome.
"""

from __future__ import annotations

from dataclasses import dataclass

from ziggurat.rules.core import RulesError, Termination
from ziggurat.rules.registry import get_rules
from ziggurat.rules.seeding import commitment, seat_order
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


def verify_record(record: spb.MatchRecord) -> Verdict:
    """Check a record's commitment, moves and outcome; never raises on bad records."""
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
        return Verdict(
            True, "aborted by the organiser: set-up and moves verified, no result to confirm", seat_check
        )
    outcome = rules.outcome(state)
    if outcome is None:
        return Verdict(False, "the recorded moves do not finish the game")
    if outcome_to_proto(outcome) != record.outcome:
        return Verdict(False, "the recorded outcome differs from the outcome of the replayed game")
    return Verdict(True, seats=seat_check)
