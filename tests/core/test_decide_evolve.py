"""Live play and restore are one path: after every command, the state a match holds in memory
is exactly the fold of ``evolve`` over what the store holds (events and counted strikes).
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import fields, replace

import pytest

from ziggurat.core.events import MovePlayed, TurnStarted
from ziggurat.core.evolve import MatchState, SeatRecord, Turn, evolve
from ziggurat.core.match import Match
from ziggurat.core.timecontrol import TimeControl
from ziggurat.rules.registry import get_rules
from ziggurat.rules.seeding import commitment
from ziggurat.store.sqlite import Store
from ziggurat.wire import errors


def _replayed(match: Match, store: Store) -> object:
    stored = store.load(match.match_id)
    assert stored is not None
    state, entries = match._replay(stored)
    assert [(e.seq, e.event) for e in entries] == [(e.seq, e.event) for e in match.entries]
    return state


@pytest.mark.parametrize(("game", "seats"), [("pylos", 2), ("kabaleo", 2), ("kabaleo", 3), ("kabaleo", 4)])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_memory_is_the_fold_of_the_stored_log_after_every_command(game: str, seats: int, seed: int) -> None:
    rng = random.Random(seed)
    store = Store(":memory:")
    secret = rng.randbytes(32)
    match = Match.create(
        store,
        match_id=f"m{seed}",
        game=game,
        seats=seats,
        options={},
        time_control=TimeControl(max_illegal_moves=2),
        seat_assignment="lot",
        seed=secret,
        commitment=commitment(secret),
        log_events=lambda _: None,
    )
    for n in range(seats):
        match.join(f"p{n}", None)
        assert match.current == _replayed(match, store)
    rules = match.rules
    resigned = False
    while match.status == "active":
        seat = rules.to_move(match.state)
        assert seat is not None
        roll = rng.random()
        try:
            if roll < 0.1:
                match.submit(seat, "zz9")  # refused, counted against the conduct limit
            elif roll < 0.12 and game == "kabaleo" and not resigned:
                resigned = True
                match.resign(rng.randrange(seats))
            else:
                match.submit(seat, rng.choice(rules.legal_moves(match.state)), match.current.plies)
        except errors.ApiError:
            pass
        assert match.current == _replayed(match, store)
    assert match.outcome() is not None


def test_the_events_of_every_ply_carry_every_other_field_of_the_state_over() -> None:
    """evolve builds the state after a move or a turn field by field (it is the hot path):
    every field it does not mean to change must come through, including fields added later.
    """
    seats = (SeatRecord(name="a", clock_ms=5), SeatRecord(name="b", clock_ms=7))
    sentinels = {f.name: object() for f in fields(MatchState)}
    state = MatchState(**{**sentinels, "seats": seats, "plies": 3})
    after_move = evolve(get_rules("pylos"), state, MovePlayed(0, "a1", False, 4), game="after")
    assert after_move.game == "after" and after_move.plies == 4 and after_move.turn is None
    assert after_move.seats == (replace(seats[0], clock_ms=4), seats[1])
    after_turn = evolve(get_rules("pylos"), state, TurnStarted(1, 3, 0, (5, 9), ("joined", "connected")))
    assert after_turn.turn == Turn(1, 3, 0)
    assert after_turn.seats == (seats[0], replace(seats[1], clock_ms=9, presence="connected"))
    for name in sentinels.keys() - {"game", "plies", "turn", "seats"}:
        assert getattr(after_move, name) is sentinels[name], name
        assert getattr(after_turn, name) is sentinels[name], name
    assert after_turn.game is sentinels["game"] and after_turn.plies == 3


def test_a_turn_that_changes_no_seat_keeps_the_seat_records() -> None:
    seats = (SeatRecord(name="a", presence="connected"), SeatRecord(name="b", presence="connected"))
    state = MatchState("active", None, seats)
    after = evolve(get_rules("pylos"), state, TurnStarted(0, 1, 0, (0, 0), ("connected", "connected")))
    assert after.seats is seats
    counted = MatchState("active", None, (replace(seats[0], presence_events=2), seats[1]))
    after = evolve(get_rules("pylos"), counted, TurnStarted(0, 1, 0, (0, 0), ("connected", "connected")))
    assert after.seats == seats  # the presence budget starts again with every turn


async def test_a_forfeit_that_decides_a_held_match_leaves_no_turn(caplog: pytest.LogCaptureFixture) -> None:
    """A duplicate-deal rotation (end held) whose other seats forfeit is decided at once: the seat
    that had the turn must be told "game over", not have its move refused by the rules as an
    illegal one, and the turn's timer must not try to play for it (it logged GameOverError)."""
    store = Store(":memory:")
    secret = bytes(range(32))
    match = Match.create(
        store,
        match_id="held",
        game="kabaleo",
        seats=3,
        options={},
        time_control=TimeControl(per_move_ms=100, on_timeout="random_move", max_illegal_moves=2),
        seat_assignment="chosen",
        seed=secret,
        commitment=commitment(secret),
        log_events=lambda _: None,
        held=True,
        end_held=True,
    )
    for seat in range(3):
        match.join(f"p{seat}", seat)
    match.begin()
    healthy = match.rules.to_move(match.state)
    assert healthy is not None and match.current.turn is not None
    move = match.rules.legal_moves(match.state)[0]  # legal on its turn, before the others forfeit
    for seat in range(3):
        if seat != healthy:
            match.resign(seat)  # the organiser resigns the disqualified participants' seats
    assert match.decided and match.current.turn is None
    assert match.current == _replayed(match, store)  # a restore folds to the same: no turn
    with pytest.raises(errors.ApiError) as refused:
        match.submit(healthy, move)
    assert refused.value.reason == "GAME_OVER"
    assert match.current.seats[healthy].strikes == 0  # not counted as an illegal move
    with pytest.raises(errors.ApiError) as again:
        match.resign(healthy)
    assert again.value.reason == "GAME_OVER"
    await asyncio.sleep(0.3)  # past the old turn's time limit
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]
    match.reveal()
    outcome = match.outcome()
    assert match.status == "finished" and outcome is not None
    assert outcome.ranks[healthy] == 1
    match.close()
