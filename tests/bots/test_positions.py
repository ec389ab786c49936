from __future__ import annotations

import random
from dataclasses import replace

import pytest

from ziggurat.bots.positions import kabaleo_determiniser, state_for_turn
from ziggurat.rules.kabaleo import KABALEO
from ziggurat.rules.pylos import PYLOS

from .bot_helpers import random_turns


@pytest.mark.parametrize("seats", [2, 3, 4])
def test_kabaleo_state_keeps_public_facts_and_draws_consistent_objectives(seats: int) -> None:
    for referee, turn in random_turns("kabaleo", seats, 15, seed=seats):
        seat = turn.seat - 1
        seen: set[tuple[str, ...]] = set()
        for draw in range(20):
            state = state_for_turn(turn, random.Random(draw))
            assert state.stacks == referee.stacks
            assert state.hands == referee.hands
            assert state.to_move == referee.to_move
            assert state.last == referee.last
            assert state.objectives[seat] == referee.objectives[seat]  # the seat's own, visible one
            letters = (*state.objectives, *state.unheld)
            assert sorted(letters) == sorted(referee.colours_in_play)
            assert KABALEO.view(state, seat).position == turn.view.position
            seen.add(state.objectives)
        assert len(seen) > 1  # the hidden part really is sampled


def test_kabaleo_sampling_is_uniform_enough() -> None:
    _, turn = random_turns("kabaleo", 2, 1, seed=9)[0]
    det = kabaleo_determiniser(turn)
    rng = random.Random(1)
    counts: dict[str, int] = {}
    for _ in range(3000):
        objectives, _unheld = det.sample(rng)
        other = objectives[1 - (turn.seat - 1)]
        counts[other] = counts.get(other, 0) + 1
    assert len(counts) == 3
    assert all(800 < n < 1200 for n in counts.values())


def test_kabaleo_determiniser_never_reads_hidden_objectives() -> None:
    referee, turn = random_turns("kabaleo", 2, 1, seed=4)[0]
    seat = turn.seat - 1
    other = 1 - seat
    swapped = list(referee.objectives)
    swapped[other], new_unheld = referee.unheld[0], (referee.objectives[other], referee.unheld[1])
    twin = replace(referee, objectives=tuple(swapped), unheld=tuple(sorted(new_unheld, key="RYGBOP".index)))
    from ziggurat.bots.arena import turn_for

    twin_turn = turn_for("kabaleo", {}, twin, turn.history)
    assert twin_turn == turn
    assert state_for_turn(turn, random.Random(3)) == state_for_turn(twin_turn, random.Random(3))


def test_pylos_state_is_exact_and_uses_history() -> None:
    for referee, turn in random_turns("pylos", 2, 20, seed=1):
        state = state_for_turn(turn, random.Random(0))
        assert PYLOS.format_position(state) == PYLOS.format_position(referee)
        assert state.ply == referee.ply
        assert state.seen == referee.seen  # replayed from turn.history


def test_pylos_without_history_parses_the_position() -> None:
    referee, turn = random_turns("pylos", 2, 1, seed=2)[0]
    bare = replace(turn, history=())
    state = state_for_turn(bare, random.Random(0))
    assert PYLOS.format_position(state) == PYLOS.format_position(referee)
    assert state.ply == turn.ply
