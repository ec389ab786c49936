"""Hypothesis properties of the Pylos engine over random reachable positions."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.rules import pylos_reference as ref
from ziggurat.rules.core import IllegalMoveError, InvalidPositionError, MalformedMoveError, Termination
from ziggurat.rules.pylos import PYLOS, PylosConfig, PylosState, Variant, parse_move, random_playout

variants = st.sampled_from(list(Variant))


@st.composite
def reachable(draw: st.DrawFn) -> PylosState:
    """A position reached by a random game of random length from the empty board."""
    variant = draw(variants)
    rng = random.Random(draw(st.integers(0, 2**32)))
    plies = rng.randrange(draw(st.sampled_from([1, 40, 80, 160])))  # hypothesis favours tiny ints
    state = PYLOS.new_game(PylosConfig(variant), bytes(32))
    for _ in range(plies):
        if state.outcome is not None:
            break
        state = PYLOS.apply(state, PYLOS.random_move(state, rng))
    return state


def _mutations(move: str, rng: random.Random) -> list[str]:
    alphabet = "12345abcdex-"
    out = [move[:-1], move + "x1a1", move + rng.choice(alphabet), move.replace("1", "2", 1)]
    i = rng.randrange(len(move))
    out.append(move[:i] + rng.choice(alphabet) + move[i + 1 :])
    parts = move.split("x")
    if len(parts) == 3:
        out.append(f"{parts[0]}x{parts[2]}x{parts[1]}")
    return out


def _order_playable(state: PylosState, text: str) -> bool:
    """Whether the recoveries of ``text`` can be taken in the order written (reference rules)."""
    board, _ = ref.parse_board(PYLOS.format_position(state))
    colour = "LD"[state.side]
    head, *recoveries = text.split("x")
    board = ref.play(board, colour, head)
    for r in recoveries:
        place = ref.place_of(r)
        if board.get(place) != colour or not ref.is_free(board, place):
            return False
        del board[place]
    return True


@settings(max_examples=60, deadline=None)
@given(reachable(), st.text(alphabet="1234abcdx- ", max_size=14), st.integers(0, 2**32))
def test_bad_moves_are_rejected_with_the_right_error(state: PylosState, junk: str, seed: int) -> None:
    legal = set(PYLOS.legal_moves(state))
    if state.outcome is not None:
        return
    rng = random.Random(seed)
    candidates = [junk]
    for move in rng.sample(sorted(legal), min(5, len(legal))):
        candidates += _mutations(move, rng)
    before = PYLOS.format_position(state)
    for text in candidates:
        try:
            parse_move(text)
        except MalformedMoveError:
            try:
                PYLOS.apply(state, text)
            except MalformedMoveError:
                continue
            raise AssertionError(f"{text!r} should be malformed") from None
        try:
            after = PYLOS.apply(state, text)
        except IllegalMoveError:
            assert text not in legal
            if text.count("x") == 2:
                head, a, b = text.split("x")
                if f"{head}x{b}x{a}" in legal:
                    assert not _order_playable(state, text)
            continue
        canonical = PYLOS.canonical_move(state, text)
        assert canonical in legal
        assert text == canonical or _order_playable(state, text)
        assert after == PYLOS.apply(state, canonical)
        assert PYLOS.format_position(state) == before


@settings(max_examples=25, deadline=None)
@given(variants, st.integers(0, 2**32))
def test_random_games_terminate(variant: Variant, seed: int) -> None:
    rng = random.Random(seed)
    state = PYLOS.new_game(PylosConfig(variant), bytes(32))
    for _ in range(5000):
        if state.outcome is not None:
            break
        state = PYLOS.apply(state, PYLOS.random_move(state, rng))
    assert state.outcome is not None
    outcome = random_playout(PYLOS.new_game(PylosConfig(variant), bytes(32)), rng)
    assert outcome.termination in {
        Termination.PYRAMID_COMPLETE,
        Termination.NO_LEGAL_MOVE,
        Termination.REPETITION,
    }


@settings(max_examples=80, deadline=None)
@given(reachable())
def test_format_parse_round_trip(state: PylosState) -> None:
    text = PYLOS.format_position(state)
    over_without_top = (
        state.outcome is not None and state.outcome.termination is not Termination.PYRAMID_COMPLETE
    )
    if over_without_top:
        try:
            PYLOS.parse_position(text, state.config)
        except InvalidPositionError:
            return
        raise AssertionError("'-' without the top ball must be refused")
    parsed = PYLOS.parse_position(text, state.config)
    assert PYLOS.format_position(parsed) == text
    assert (parsed.light, parsed.dark, parsed.outcome) == (state.light, state.dark, state.outcome)
    assert PYLOS.legal_moves(parsed) == PYLOS.legal_moves(state)


@settings(max_examples=40, deadline=None)
@given(reachable(), st.sampled_from([0, 1, None]))
def test_view_position_is_the_format(state: PylosState, seat: int | None) -> None:
    view = PYLOS.view(state, seat)
    assert view.position == PYLOS.format_position(state) == PYLOS.referee_view(state).position
    assert "/".join(view.levels) == view.position.split(" ")[0]
    board = view.position.split(" ")[0]
    assert view.reserves == (15 - board.count("L"), 15 - board.count("D"))
