"""The game contract suite, run over every game in the registry (a new game gets it for free).

For every registered game, every seat count it declares and every option set it offers
(``option_examples``), hypothesis plays random games from random seeds and checks the whole
contract at every position on the way (``checks.check_game``): legal moves and apply agree,
canonical notation round-trips, twins are indistinguishable to the seat they are made for
(as values and as proto bytes), nothing is released before the end and everything at it,
views survive the codec, and perft agrees with itself.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.contract import checks
from ziggurat.rules.registry import GAMES

CASES = [
    pytest.param(
        name, seats, index, id=f"{name}-{seats}-{'-'.join(map('='.join, options.items())) or 'defaults'}"
    )
    for name, rules in sorted(GAMES.items())
    for seats in range(rules.min_seats, rules.max_seats + 1)
    for index, options in enumerate(rules.option_examples(seats))
]
MOVE_LIKE = st.text(alphabet="0123456789abcdeRYGBOPx-+ ", max_size=12)


@pytest.mark.parametrize("name", sorted(GAMES))
def test_game_conforms(name: str) -> None:
    rules = GAMES[name]
    assert rules.name == name
    checks.check_conformance(rules)


@pytest.mark.parametrize("name", sorted(GAMES))
def test_declared_set_up_matches_the_game(name: str) -> None:
    """What tournaments read (duplicate deals, openings) is what the game does."""
    checks.check_declared_setup(GAMES[name])


@pytest.mark.parametrize(("name", "seats", "index"), CASES)
@settings(max_examples=3, deadline=None, derandomize=False)
@given(seed=st.binary(min_size=32, max_size=32), play=st.integers(0, 2**32), junk=MOVE_LIKE)
def test_random_games_keep_the_contract(
    name: str, seats: int, index: int, seed: bytes, play: int, junk: str
) -> None:
    rules = GAMES[name]
    checks.check_game(rules, seats, rules.option_examples(seats)[index], seed, random.Random(play), junk)


@pytest.mark.parametrize("name", sorted(GAMES))
def test_perft_agrees_with_itself_from_the_start(name: str) -> None:
    rules = GAMES[name]
    for seats in range(rules.min_seats, rules.max_seats + 1):
        state = rules.new_game(rules.parse_config({}, seats), bytes(range(32)))
        checks.check_perft(rules, state, 3)
