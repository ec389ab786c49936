"""Live play and restore are one path: after every command, the state a match holds in memory
is exactly the fold of ``evolve`` over what the store holds (events and counted strikes).
"""

from __future__ import annotations

import random

import pytest

from ziggurat.rules.seeding import commitment
from ziggurat.service.match import Match
from ziggurat.service.timecontrol import TimeControl
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
