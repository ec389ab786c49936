"""The GameRules contract of Pylos: configuration, notation, positions, views, forfeits."""

from __future__ import annotations

import random

import pytest

from ziggurat.rules.core import (
    GameOverError,
    InvalidConfigError,
    InvalidPositionError,
    MalformedMoveError,
    Outcome,
    Termination,
    View,
)
from ziggurat.rules.pylos import (
    PYLOS,
    PylosConfig,
    PylosMove,
    PylosView,
    Variant,
    parse_move,
    random_playout,
)

EMPTY = "................/........./..../. L"
SEED = bytes(range(32))


def test_identity() -> None:
    assert PYLOS.name == "pylos"
    assert PYLOS.min_seats == PYLOS.max_seats == 2


@pytest.mark.parametrize(
    ("options", "config"),
    [
        ({}, PylosConfig()),
        ({"variant": "beginner"}, PylosConfig(Variant.BEGINNER)),
        ({"variant": "advanced", "max_moves": "200"}, PylosConfig(Variant.ADVANCED, 200)),
        ({"variant": "standard"}, PylosConfig()),
    ],
)
def test_parse_config_and_inverse(options: dict[str, str], config: PylosConfig) -> None:
    assert PYLOS.parse_config(options, 2) == config
    assert PYLOS.parse_config(PYLOS.config_options(config), 2) == config


def test_config_options_omit_defaults() -> None:
    assert PYLOS.config_options(PylosConfig()) == {}
    assert PYLOS.config_options(PylosConfig(Variant.ADVANCED, 9)) == {"variant": "advanced", "max_moves": "9"}


@pytest.mark.parametrize(
    ("options", "seats", "fragment"),
    [
        ({}, 3, "exactly 2 seats"),
        ({"variant": "expert"}, 2, "unknown pylos variant"),
        ({"max_moves": "0"}, 2, "positive"),
        ({"max_moves": "-4"}, 2, "positive"),
        ({"max_moves": "ten"}, 2, "positive"),
        ({"max_moves": "²"}, 2, "positive"),
        ({"colour": "light"}, 2, "unknown pylos option"),
    ],
)
def test_parse_config_rejects(options: dict[str, str], seats: int, fragment: str) -> None:
    with pytest.raises(InvalidConfigError, match=fragment) as info:
        PYLOS.parse_config(options, seats)
    assert info.value.reason == "INVALID_CONFIG"


def test_new_game_checks_seed_only() -> None:
    state = PYLOS.new_game(PylosConfig(), SEED)
    assert state == PYLOS.new_game(PylosConfig(), bytes(32))
    assert PYLOS.format_position(state) == EMPTY
    assert PYLOS.to_move(state) == 0 and PYLOS.seats(state) == 2 and PYLOS.outcome(state) is None
    with pytest.raises(InvalidConfigError):
        PYLOS.new_game(PylosConfig(), b"short")


@pytest.mark.parametrize(
    ("text", "move"),
    [
        ("1b2", PylosMove(None, "1b2")),
        ("1a1-2b2", PylosMove("1a1", "2b2")),
        ("2b2x1a1", PylosMove(None, "2b2", ("1a1",))),
        ("2b2x2b2x1c1", PylosMove(None, "2b2", ("2b2", "1c1"))),
        ("3b2-4a1", PylosMove("3b2", "4a1")),
    ],
)
def test_parse_move_round_trip(text: str, move: PylosMove) -> None:
    assert parse_move(text) == move
    assert str(move) == move.notation == text


def test_parse_move_rejects_non_text() -> None:
    with pytest.raises(MalformedMoveError):
        parse_move(12)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "................/........./..../.",  # no side
        "................/........./..../. X",
        "................/........./..../.  L",
        "................/........./.... L",  # three levels
        ".............../........./..../. L",  # 15 places
        "................/........../..../. L",
        "...............x/........./..../. L",
        "l.............../........./..../. L",
        "................/L......../..../. L",  # floating on level 2
        "LLLL............/L......../..../. L",  # 2a1 rests on 1a1 1b1 1a2 1b2: 1a2 1b2 empty
        "LLLLLLLLLLLLLLLL/........./..../. D",  # 16 light balls
        "LDLDDLDLLDDLDLDL/LDLDLDLDL/LDDL/D L",  # top placed but a side to move
        "LDLDDLDLLDDLDLDL/LDLDLDLDL/LDD./. -",  # '-' without the top ball
    ],
)
def test_parse_position_rejects(text: str) -> None:
    with pytest.raises(InvalidPositionError) as info:
        PYLOS.parse_position(text, PylosConfig())
    assert info.value.reason == "INVALID_POSITION"


@pytest.mark.parametrize(
    "text",
    [
        EMPTY,
        "LD..DL........DL/........./..../. D",
        "LDLDDLDLLDDLDLDL/LLLLLLL.D/..../. L",
        "LDLDDLDLLDDLDLDL/LDLDLDLDL/LDDL/D -",
    ],
)
def test_position_round_trip(text: str) -> None:
    state = PYLOS.parse_position(text, PylosConfig())
    assert PYLOS.format_position(state) == text
    assert state.ply == 0 and len(state.seen) == 1


def test_views_are_public_and_complete() -> None:
    state = PYLOS.apply(PYLOS.new_game(PylosConfig(), SEED), "1a1")
    for seat in (0, 1, None):
        view = PYLOS.view(state, seat)
        assert isinstance(view, PylosView) and isinstance(view, View)
        assert view.viewer == seat and not view.referee
        assert view.position == PYLOS.format_position(state)
        # The seat to move (dark, seat 1) is told its legal moves; the others are not.
        assert view.legal_moves == (tuple(PYLOS.legal_moves(state)) if seat == 1 else ())
        assert view.levels == ("L...............", ".........", "....", ".")
        assert view.reserves == (14, 15)
        assert view.seats == 2 and view.to_move == 1 and view.ply == 1 and view.game == "pylos"
    referee = PYLOS.referee_view(state)
    assert referee.referee and referee.viewer is None and referee.position == PYLOS.view(state, 0).position
    assert referee.legal_moves == tuple(PYLOS.legal_moves(state))


def test_forfeit() -> None:
    state = PYLOS.new_game(PylosConfig(), SEED)
    over = PYLOS.forfeit(state, 0, Termination.RESIGNATION)
    assert over.outcome == Outcome.loss_for(2, 0, Termination.RESIGNATION)
    assert PYLOS.legal_moves(over) == [] and PYLOS.to_move(over) is None
    assert PYLOS.format_position(over).endswith(" -")
    assert PYLOS.view(over, 1).legal_moves == ()
    with pytest.raises(GameOverError):
        PYLOS.apply(over, "1a1")
    with pytest.raises(GameOverError):
        PYLOS.forfeit(over, 1, Termination.TIMEOUT)
    with pytest.raises(GameOverError):
        PYLOS.random_move(over, random.Random(0))
    assert random_playout(over, random.Random(0)) == over.outcome
    assert PYLOS.perft(over, 1) == 0 and PYLOS.perft(over, 0) == 1


def test_random_move_is_uniform_over_legal_moves() -> None:
    state = PYLOS.new_game(PylosConfig(), SEED)
    rng = random.Random(3)
    seen = {PYLOS.random_move(state, rng) for _ in range(400)}
    assert seen == set(PYLOS.legal_moves(state))


def test_legal_moves_sorted_unique() -> None:
    state = PYLOS.parse_position("LLL.L.L.DDDD.D../........./..../. L", PylosConfig())
    moves = PYLOS.legal_moves(state)
    assert moves == sorted(set(moves))
    assert all(PYLOS.canonical_move(state, m) == m for m in moves)
