"""Phantom tic-tac-toe specifics (docs/phantom-tic-tac-toe.md): the reveal-and-retry rule, what
each viewer sees, wins, the draw, and which position texts a game can reach. The contract suite
(tests/contract) checks the rest as for every game."""

from __future__ import annotations

import pytest

from ziggurat.rules.core import (
    IllegalMoveError,
    InvalidPositionError,
    MalformedMoveError,
    Outcome,
    Termination,
)
from ziggurat.rules.phantom_ttt import PHANTOM_TTT as R
from ziggurat.rules.phantom_ttt import PhantomState

CONFIG = R.parse_config({}, 2)


def play(*moves: str, start: PhantomState | None = None) -> PhantomState:
    state = start if start is not None else R.new_game(CONFIG, bytes(32))
    for move in moves:
        state = R.apply(state, move)
    return state


def test_trying_the_opponents_cell_reveals_it_and_the_same_seat_tries_again() -> None:
    state = play("b2", "b2")  # x takes b2; o tries b2
    assert R.format_position(state) == ".../.X./..."
    assert R.to_move(state) == 1 and R.view(state, 1).ply == 2  # the attempt was a move; o goes on
    assert R.view(state, 1).position == ".../.X./..."  # o now knows b2 is x's (X: found by o)
    assert "b2" not in R.legal_moves(state)  # trying it again is not a move
    with pytest.raises(IllegalMoveError, match="already known to be your opponent's"):
        R.apply(state, "b2")
    # x learns that a ply passed (public), not where; with one mark it can tell that one was found
    assert R.view(state, 0).position == ".../.X./..." and R.view(state, 0).ply == 2
    two = play("a1", "c3", "c1", "a1", "b2")  # x a1 c1; o c3, finds a1, b2: x cannot tell which
    assert R.format_position(two) == "..o/.o./X.x" and R.view(two, 0).position == ".../.../x.x"
    state = R.apply(state, "a1")
    assert R.to_move(state) == 0 and R.format_position(state) == ".../.X./o.."


def test_a_seat_sees_its_marks_and_what_it_found_a_spectator_nothing_until_the_released_end() -> None:
    state = play("a1", "c3", "c3", "b1")  # x a1, o c3, x finds c3, x b1
    assert R.format_position(state) == "..O/.../xx."
    assert R.view(state, 0).position == "..O/.../xx."
    assert R.view(state, 1).position == "..O/.../..."  # o counts one failed attempt: its one mark
    assert R.view(state, None).position == ".../.../..."
    assert R.view(state, None, released=True).position == ".../.../..."  # not over: nothing released
    assert R.legal_moves(state) == ["a1", "a2", "a3", "b1", "b2", "b3", "c1", "c2"]  # o's: all but c3


def test_three_in_a_row_wins_and_the_end_releases_the_whole_board() -> None:
    state = play("a1", "a3", "b1", "b3", "c1")
    assert R.outcome(state) == Outcome.win_for(2, 0, Termination.NORMAL)
    assert R.to_move(state) is None and R.legal_moves(state) == []
    for viewer in (None, 0, 1):
        assert R.view(state, viewer).outcome is None  # the match releases the end, not the rules
        assert R.view(state, viewer, released=True).position == "oo./.../xxx"


def test_a_full_board_without_a_line_is_a_draw() -> None:
    state = play("a1", "b2", "c1", "b1", "b3", "a2", "c2", "c3", "a3")
    assert R.format_position(state) == "xxo/oox/xox"
    assert R.outcome(state) == Outcome.draw(2, Termination.NORMAL)


def test_the_last_cell_found_taken_leaves_the_seat_its_other_cells() -> None:
    # o's last free cells: everything x holds is found one by one, then o marks what is left
    state = play("a1", "b2", "c3", "a3", "c1")  # x a1 c3 c1, o b2 a3
    assert R.to_move(state) == 1
    state = play("a1", "c1", start=state)  # o finds a1, then c1
    assert R.to_move(state) == 1 and R.view(state, 1).position == "o../.o./X.X"
    assert R.legal_moves(state) == ["a2", "b1", "b3", "c2", "c3"]


def test_move_notation_is_strict() -> None:
    state = play()
    for text in ("B2", "b4", "d1", " b2", "b2 ", "", "22", "bb"):
        with pytest.raises(MalformedMoveError):
            R.apply(state, text)
    assert [R.format_move(R.parse_move(m)) for m in ("a1", "c3")] == ["a1", "c3"]


@pytest.mark.parametrize(
    "text",
    [
        "x../x../...",  # two x marks, no o
        "o../.../...",  # o moved first
        "xxx/ooo/...",  # both have three in a row
        "xxx/oo./o..",  # x's line with as many o marks: play went on after it
        "XXX/oo./...",  # o found every cell of x's line, so the game had ended before
        "XOX/XOO/OXX",  # a draw ends on x's last mark, which o never tried
        "x../../...",  # not three rows of three
        "x../.../..?",  # not a cell
    ],
)
def test_positions_no_game_reaches_are_refused(text: str) -> None:
    with pytest.raises(InvalidPositionError):
        R.parse_position(text, CONFIG)


def test_options_and_seats_are_checked() -> None:
    assert R.option_examples(2) == [{}] and R.config_options(CONFIG) == {}
    with pytest.raises(ValueError, match="exactly 2 seats"):
        R.parse_config({}, 3)
    with pytest.raises(ValueError, match="no options"):
        R.parse_config({"variant": "x"}, 2)


def test_perft_from_the_start() -> None:
    start = play()
    # 9 first marks; o then has 9 tries (one of them finds x's cell and o tries again)
    assert [R.perft(start, d) for d in range(5)] == [1, 9, 81, 648, 5112]
