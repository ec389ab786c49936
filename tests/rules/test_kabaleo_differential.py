"""Differential testing: the engine against tests/rules/kabaleo_reference.py over thousands of positions."""

from __future__ import annotations

import hashlib
import random

import pytest

from ziggurat.rules.core import IllegalMoveError, MalformedMoveError, Termination
from ziggurat.rules.kabaleo import (
    Deal,
    KabaleoConfig,
    KabaleoState,
    apply,
    format_position,
    legal_moves,
    new_game,
    outcome_of,
    parse_position,
)

from .kabaleo_reference import (
    RefGame,
    ref_from_position,
    ref_is_legal,
    ref_legal_moves,
    ref_play,
    ref_ranks,
    ref_setup,
    ref_to_position,
)

GAMES_PER_CASE = 100
CASES = [
    (2, "random", False),
    (2, "equal", True),
    (3, "random", True),
    (3, "equal", False),
    (4, "random", False),
    (4, "random", True),
]


def check_probe(state: KabaleoState, ref: RefGame, colour: str, number: int) -> None:
    """Engine and reference agree whether a (colour, stack) pair is legal, and errors are typed."""
    move = f"{colour}{number}"
    if ref_is_legal(ref, colour, number - 1):
        after = apply(state, move)
        assert format_position(after) == ref_to_position(ref_play(ref, move))
    else:
        with pytest.raises(IllegalMoveError):
            apply(state, move)


@pytest.mark.parametrize(("players", "deal", "last_stack"), CASES)
def test_engine_matches_reference(players: int, deal: str, last_stack: bool) -> None:
    config = KabaleoConfig(players, Deal(deal), last_stack)
    rng = random.Random(f"{players}{deal}{last_stack}")
    positions = 0
    for game in range(GAMES_PER_CASE):
        seed = hashlib.sha256(f"diff-{players}-{deal}-{last_stack}-{game}".encode()).digest()
        state = new_game(config, seed)
        ref = ref_setup(players, deal, None, seed, last_stack)
        while True:
            text = format_position(state)
            assert text == ref_to_position(ref)
            assert parse_position(text, config) == state
            moves = legal_moves(state)
            assert moves == ref_legal_moves(ref)
            positions += 1
            if not moves:
                break
            for _ in range(3):
                check_probe(state, ref, rng.choice("RYGBOP"), rng.randint(1, len(state.stacks) + 2))
            move = rng.choice(moves)
            state, ref = apply(state, move), ref_play(ref, move)
        outcome = outcome_of(state)
        assert outcome is not None and outcome.termination is Termination.NORMAL
        assert outcome.ranks == ref_ranks(ref)
    assert positions == GAMES_PER_CASE * (6 * (players + 2) + 1)


def test_random_parsed_positions_match_reference() -> None:
    """Positions that went through text (reference writes, engine reads) behave the same."""
    rng = random.Random(7)
    for i in range(300):
        players = rng.choice((2, 3, 4))
        last_stack = rng.random() < 0.5
        ref = ref_setup(players, "random", None, hashlib.sha256(f"p{i}".encode()).digest(), last_stack)
        for _ in range(rng.randrange(6 * (players + 2) + 1)):
            ref = ref_play(ref, rng.choice(ref_legal_moves(ref)))
        text = ref_to_position(ref)
        state = parse_position(text, KabaleoConfig(players, last_stack=last_stack))
        assert format_position(state) == text
        assert legal_moves(state) == ref_legal_moves(ref_from_position(text, last_stack))
        if state.to_move is None:
            outcome = outcome_of(state)
            assert outcome is not None and outcome.ranks == ref_ranks(ref)


def test_malformed_versus_illegal_matches_the_notation() -> None:
    state = new_game(KabaleoConfig(3), bytes(32))
    ref = ref_setup(3, "random", None, bytes(32))
    rng = random.Random(3)
    alphabet = "RYGBOPrybX0123456789 +-"
    for _ in range(2000):
        move = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 4)))
        well_formed = len(move) >= 2 and move[0] in "RYGBOP" and move[1:].isdigit() and move[1] != "0"
        if not well_formed:
            with pytest.raises(MalformedMoveError):
                apply(state, move)
        elif ref_is_legal(ref, move[0], int(move[1:]) - 1):
            apply(state, move)
        else:
            with pytest.raises(IllegalMoveError):
                apply(state, move)
