"""Hypothesis properties of the Kabaleo engine: errors, termination, round trips, the exact reveal.

Legal moves applying, canonical notation and non-interference on twins are checked for every
game by the contract suite (tests/contract); what stays here is particular to Kabaleo.
"""

from __future__ import annotations

import random
from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from ziggurat.rules.core import GameOverError, IllegalMoveError, MalformedMoveError
from ziggurat.rules.kabaleo import (
    KABALEO,
    Deal,
    KabaleoConfig,
    KabaleoState,
    apply,
    format_position,
    legal_moves,
    new_game,
    outcome_of,
    parse_position,
    view,
)

EXAMPLES = 60


@st.composite
def configs(draw: st.DrawFn) -> KabaleoConfig:
    players = draw(st.integers(2, 4))
    deal = Deal.RANDOM if players == 4 else draw(st.sampled_from(Deal))
    return KabaleoConfig(players, deal, draw(st.booleans()))


@st.composite
def states(draw: st.DrawFn, finished: bool | None = None) -> KabaleoState:
    """A state reached by random legal play from a seeded set-up (``finished`` forces the end or not)."""
    config = draw(configs())
    state = new_game(config, draw(st.binary(min_size=32, max_size=32)))
    total = config.total_plies
    if finished is None:
        plies = draw(st.integers(0, total))
    else:
        plies = total if finished else draw(st.integers(0, total - 1))
    rng = random.Random(draw(st.integers(0, 2**32)))
    for _ in range(plies):
        state = apply(state, rng.choice(legal_moves(state)))
    return state


MOVE_LIKE = st.one_of(
    st.text(max_size=5),
    st.builds(lambda c, n: f"{c}{n}", st.sampled_from("RYGBOPXrb"), st.integers(-3, 40)),
    st.builds(lambda c, n: f"{c}0{n}", st.sampled_from("RYGBOP"), st.integers(1, 9)),
)


@settings(max_examples=EXAMPLES * 3, deadline=None)
@given(states(), MOVE_LIKE)
def test_anything_not_legal_is_rejected_with_the_right_error(state: KabaleoState, move: str) -> None:
    before = format_position(state)
    snapshot = replace(state)
    if state.to_move is not None and move in legal_moves(state):
        apply(state, move)
        return
    well_formed = len(move) >= 2 and move[0] in "RYGBOP" and move[1:].isascii() and move[1:].isdigit()
    well_formed = well_formed and move[1] != "0"
    try:
        apply(state, move)
    except GameOverError:
        assert state.to_move is None
    except MalformedMoveError:
        assert state.to_move is not None and not well_formed
    except IllegalMoveError:
        assert state.to_move is not None and well_formed
    else:
        raise AssertionError(f"{move!r} was accepted")
    assert format_position(state) == before and state == snapshot


@settings(max_examples=EXAMPLES, deadline=None)
@given(configs(), st.binary(min_size=32, max_size=32), st.integers(0, 2**32))
def test_games_end_after_exactly_every_piece(config: KabaleoConfig, seed: bytes, rng_seed: int) -> None:
    rng = random.Random(rng_seed)
    state = new_game(config, seed)
    plies = 0
    while state.to_move is not None:
        assert plies < config.total_plies
        state = apply(state, KABALEO.random_move(state, rng))
        plies += 1
    assert plies == config.total_plies == state.ply
    assert KABALEO.outcome(state) is not None


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(states())
def test_position_round_trip(state: KabaleoState) -> None:
    text = format_position(state)
    again = parse_position(text, state.config)
    assert again == state
    assert format_position(again) == text


@settings(max_examples=EXAMPLES, deadline=None)
@given(states(finished=True))
def test_a_released_end_reveals_everything(state: KabaleoState) -> None:
    for seat in [None, *range(state.config.players)]:
        seen = view(state, seat, released=True)
        assert seen.objectives == state.objectives and seen.unheld == state.unheld
        assert seen.position == format_position(state)
        assert seen.outcome == outcome_of(state)


@settings(max_examples=EXAMPLES, deadline=None)
@given(states(finished=True))
def test_an_end_not_released_reveals_nothing_of_the_others(state: KabaleoState) -> None:
    """A decided game whose match holds its end (a duplicate rotation) shows each seat what it
    saw before the end: its own objective, no unheld colour, no outcome; a spectator nothing."""
    for seat in [None, *range(state.config.players)]:
        seen = view(state, seat)
        assert seen.objectives == tuple(
            colour if other == seat else None for other, colour in enumerate(state.objectives)
        )
        assert seen.unheld == (None, None)
        assert seen.outcome is None
        hidden = [colour for other, colour in enumerate(state.objectives) if other != seat]
        assert seen.position.split()[-1].count("?") == len(hidden) + 2
