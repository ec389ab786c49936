"""One test per Pylos rule and edge case, each starting from a position string."""

from __future__ import annotations

import pytest

from ziggurat.rules.core import (
    GameOverError,
    IllegalMoveError,
    MalformedMoveError,
    Outcome,
    Termination,
)
from ziggurat.rules.pylos import PYLOS, PylosConfig, PylosState, Variant

MIXED_SQUARE = "LD..DL........DL/........./..../. L"  # 1a1 L 1b1 D 1a2 D 1b2 L: 2a1 supported
LEVEL1_SQUARE = "LL..L.....D.DDD./........./..../. L"  # light completes 1a1-1b2 by placing 1b2
COVERED_OWN = "LDLLDDL........./D......../..../. L"  # 1a1 (light) under 2a1; 1d2 completes a square
LEVEL2_SQUARE = "LDLDDLDLLDDLDLDL/LLDL.D.../..../. L"  # 2b2 completes 2a1-2b2; 1a1 only under 2a1
LEVEL3_SQUARE = "LDLDDLDLLDDLDLDL/LLLDDDDDD/LLL./. L"  # 3b2 completes the level-3 square
ENDGAME_STUCK = "LDLDDLDLLDDLDLDL/LDLDLDLDD/LDD./. L"
ENDGAME_TOP = "LDLDDLDLLDDLDLDL/LDLDLDLDL/LDD./. L"
NO_RESERVE = "LDLDDLDLLDDLDLDL/LLLLLLL.D/..../. L"
CYCLE = "LL..L......D..DD/........./..../. L"


def pos(text: str, variant: Variant = Variant.STANDARD, max_moves: int | None = None) -> PylosState:
    return PYLOS.parse_position(text, PylosConfig(variant, max_moves))


def legal(state: PylosState) -> set[str]:
    return set(PYLOS.legal_moves(state))


def illegal(state: PylosState, move: str, fragment: str) -> None:
    with pytest.raises(IllegalMoveError, match=fragment) as info:
        PYLOS.apply(state, move)
    assert info.value.reason == "ILLEGAL_MOVE"


def test_place_on_any_supported_level() -> None:
    state = pos(MIXED_SQUARE)
    moves = legal(state)
    assert "2a1" in moves and "1c1" in moves
    assert PYLOS.format_position(PYLOS.apply(state, "2a1")).startswith("LD..DL........DL/L........")
    illegal(state, "2b1", "2b1 is not supported")
    illegal(state, "1a1", "1a1 is occupied")


def test_raise_must_go_strictly_up() -> None:
    state = pos(MIXED_SQUARE)
    assert "1d4-2a1" in legal(state)
    illegal(state, "1d4-1c1", "higher level")
    after = PYLOS.apply(state, "1d4-2a1")
    assert PYLOS.format_position(after) == "LD..DL........D./L......../..../. D"


def test_raise_onto_own_square_refused() -> None:
    state = pos(MIXED_SQUARE)
    assert not any(m.startswith("1a1-") or m.startswith("1b2-") for m in legal(state))
    illegal(state, "1b2-2a1", "square it is part of")


def test_raise_only_own_balls() -> None:
    state = pos(MIXED_SQUARE)
    illegal(state, "1b1-2a1", "1b1 is not your ball")
    illegal(state, "1c1-2a1", "1c1 is empty")


def test_supporting_ball_cannot_be_raised_or_recovered() -> None:
    state = pos(COVERED_OWN)
    illegal(state, "1a1-2b1", "1a1 is not free")
    assert "1d2x1a1" not in legal(state)
    illegal(state, "1d2x1a1", "1a1 is not free")


def test_recovery_is_mandatory_second_optional() -> None:
    state = pos(LEVEL1_SQUARE)
    illegal(state, "1b2", "you must recover at least one ball")
    moves = legal(state)
    assert {"1b2x1b2", "1b2x1a1x1b2", "1b2x1a1x1b1"} <= moves
    assert "1b2" not in moves
    after = PYLOS.apply(state, "1b2x1a1")
    assert after.light.bit_count() == 3


def test_second_ball_chosen_after_first_left() -> None:
    state = pos(LEVEL2_SQUARE)
    moves = legal(state)
    assert "2b2x2a1x1a1" in moves  # 1a1 becomes free once 2a1 has left
    assert "2b2x1a1" not in moves
    illegal(state, "2b2x1a1", "1a1 is not free")
    illegal(state, "2b2x1a1x2a1", "1a1 is not free")  # a non-canonical order must be playable as written


def test_recovery_order_canonical_and_other_playable_order() -> None:
    state = pos(LEVEL1_SQUARE)
    assert "1b2x1a2x1b1" in legal(state)  # same level: plain string order, 1a2 before 1b1
    assert "1b2x1b1x1a2" not in legal(state)
    assert PYLOS.canonical_move(state, "1b2x1b1x1a2") == "1b2x1a2x1b1"
    assert PYLOS.apply(state, "1b2x1b1x1a2") == PYLOS.apply(state, "1b2x1a2x1b1")
    level2 = pos(LEVEL2_SQUARE)
    assert PYLOS.canonical_move(level2, "2b2x1d4x2b2") == "2b2x2b2x1d4"  # higher level first


def test_same_ball_twice_refused() -> None:
    illegal(pos(LEVEL1_SQUARE), "1b2x1a1x1a1", "twice")


def test_several_squares_at_once_still_at_most_two() -> None:
    state = pos("LLL.L.L.DDDD.D../........./..../. L")  # 1b2 completes two squares
    recoveries = [m for m in legal(state) if m.startswith("1b2")]
    free = 6  # 1a1 1b1 1c1 1a2 1c2 and the ball just played
    assert len(recoveries) == free + free * (free - 1) // 2
    assert all(1 <= m.count("x") <= 2 for m in recoveries)


@pytest.mark.parametrize(
    ("text", "move"),
    [(LEVEL1_SQUARE, "1b2"), (LEVEL2_SQUARE, "2b2"), (LEVEL3_SQUARE, "3b2")],
    ids=["level1", "level2", "level3"],
)
def test_squares_on_every_level(text: str, move: str) -> None:
    state = pos(text)
    illegal(state, move, "must recover")
    assert f"{move}x{move}" in legal(state)


def test_square_formed_by_a_raise() -> None:
    state = pos(LEVEL2_SQUARE)
    illegal(state, "1b4-2b2", "must recover")
    assert "1b4-2b2x2b2" in legal(state)
    assert "1b4-2b2x2a1x2b2" in legal(state)


def test_mixed_colour_square_gives_nothing() -> None:
    state = pos("LD..D.........DL/........./..../. L")
    assert "1b2" in legal(state)
    illegal(state, "1b2x1b2", "no square of your colour was completed")


@pytest.mark.parametrize(
    ("text", "move"),
    [
        ("LLL.DD.D......../........./..../. L", "1d1"),  # row on level 1 (4 balls)
        ("L...LD..L.D..D../........./..../. L", "1a4"),  # column on level 1
        ("LDLDDLDLLDDLDLDL/LL.D.D.../..../. L", "2c1"),  # row on level 2 (3 balls)
    ],
    ids=["level1-row", "level1-column", "level2-row"],
)
def test_lines_only_in_advanced(text: str, move: str) -> None:
    assert move in legal(pos(text, Variant.STANDARD))
    advanced = pos(text, Variant.ADVANCED)
    illegal(advanced, move, "square or line of your colour was completed")
    assert f"{move}x{move}" in legal(advanced)


def test_diagonals_and_level3_rows_never_count() -> None:
    diagonal = pos("L....L....L.DDD./........./..../. L", Variant.ADVANCED)
    assert "1d4" in legal(diagonal)
    level3_row = pos("LDLDDLDLLDDLDLDL/LLLDDDDDD/L.../. L", Variant.ADVANCED)
    assert "3b1" in legal(level3_row)


def test_beginner_has_no_recovery() -> None:
    state = pos(LEVEL1_SQUARE, Variant.BEGINNER)
    assert "1b2" in legal(state)
    assert not any("x" in m for m in legal(state))
    illegal(state, "1b2x1b2", "no recovery in the beginner variant")


def test_breaking_and_recompleting_square_recovers_again() -> None:
    state = PYLOS.apply(pos(LEVEL1_SQUARE), "1b2x1b2")
    state = PYLOS.apply(state, "1d4")
    illegal(state, "1b2", "must recover")
    assert "1b2x1b2" in legal(state)


def test_stuck_player_loses() -> None:
    state = pos(ENDGAME_STUCK)
    assert PYLOS.legal_moves(state) == ["3b2"]
    after = PYLOS.apply(state, "3b2")
    assert after.outcome == Outcome.loss_for(2, 1, Termination.NO_LEGAL_MOVE)
    assert PYLOS.to_move(after) is None
    assert PYLOS.legal_moves(after) == []


def test_stuck_position_parses_as_finished() -> None:
    state = pos("LDLDDLDLLDDLDLDL/LDLDLDLDD/LDDL/. D")
    assert state.outcome == Outcome.loss_for(2, 1, Termination.NO_LEGAL_MOVE)


def test_top_ball_wins() -> None:
    state = PYLOS.apply(pos(ENDGAME_TOP), "3b2")
    assert PYLOS.legal_moves(state) == ["4a1"]
    final = PYLOS.apply(state, "4a1")
    assert final.outcome == Outcome.win_for(2, 1, Termination.PYRAMID_COMPLETE)
    text = PYLOS.format_position(final)
    assert text == "LDLDDLDLLDDLDLDL/LDLDLDLDL/LDDL/D -"
    assert PYLOS.parse_position(text, PylosConfig()).outcome == final.outcome


def test_no_reserve_must_raise() -> None:
    state = pos(NO_RESERVE)
    assert all("-" in m for m in legal(state))
    illegal(state, "2b3", "no ball in reserve")


def test_repetition_draw_on_third_occurrence() -> None:
    state = pos(CYCLE)
    for move in ("1b2x1b2", "1c3x1c3", "1b2x1b2"):
        state = PYLOS.apply(state, move)
        assert state.outcome is None
    state = PYLOS.apply(state, "1c3x1c3")  # the start position (light to move) for the third time
    assert state.outcome == Outcome.draw(2, Termination.REPETITION)


def test_repetition_never_ends_perft() -> None:
    state = pos(CYCLE)
    counted = PYLOS.perft(state, 4)
    assert counted > 0
    # A sequence through the cycle is still counted: play it by hand with perft 1 at the end.
    for move in ("1b2x1b2", "1c3x1c3", "1b2x1b2"):
        state = PYLOS.apply(state, move)
    assert PYLOS.perft(state, 1) == len(PYLOS.legal_moves(state))


def test_move_limit_draw() -> None:
    state = pos(MIXED_SQUARE, max_moves=2)
    state = PYLOS.apply(state, "1c1")
    assert state.outcome is None
    state = PYLOS.apply(state, "1d1")
    assert state.outcome == Outcome.draw(2, Termination.MOVE_LIMIT)
    assert PYLOS.perft(pos(MIXED_SQUARE, max_moves=2), 3) == 0


def test_top_ball_beats_move_limit() -> None:
    state = PYLOS.apply(pos(ENDGAME_TOP, max_moves=2), "3b2")
    final = PYLOS.apply(state, "4a1")
    assert final.outcome is not None and final.outcome.termination is Termination.PYRAMID_COMPLETE


@pytest.mark.parametrize(
    "text",
    ["zz9", "", "1a5", "2d1", "3c1", "4a2", "4b1", "1a1-", "1a1x", "1A1", " 1a1", "1a1x1b1x1c1x1d1", "5a1"],
)
def test_malformed_moves(text: str) -> None:
    with pytest.raises(MalformedMoveError) as info:
        PYLOS.apply(pos(MIXED_SQUARE), text)
    assert info.value.reason == "MALFORMED_MOVE"


def test_game_over_error_and_precedence() -> None:
    final = PYLOS.apply(PYLOS.apply(pos(ENDGAME_TOP), "3b2"), "4a1")
    with pytest.raises(GameOverError) as info:
        PYLOS.apply(final, "1a1")
    assert info.value.reason == "GAME_OVER"
    with pytest.raises(MalformedMoveError):  # syntax is checked first, whatever the state
        PYLOS.apply(final, "zz9")
    with pytest.raises(GameOverError):
        PYLOS.canonical_move(final, "1a1")
