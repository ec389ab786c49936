"""``apply_canonical`` is ``apply`` and ``canonical_move`` in one reading of the move: the
same state, the same notation, the same error, for every game, over random positions and
move texts (legal ones, other recovery orders, mutations, junk).
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from ziggurat.rules.core import RulesError
from ziggurat.rules.registry import AnyRules, get_rules

GAMES = [("pylos", 2), ("kabaleo", 2), ("kabaleo", 3), ("kabaleo", 4)]


def _separately(rules: AnyRules, state: object, text: str) -> object:
    """``(apply, canonical_move)``, or the class and message of the RulesError raised."""
    try:
        return rules.apply(state, text), rules.canonical_move(state, text)
    except RulesError as error:
        return (type(error), str(error))


def _at_once(rules: AnyRules, state: object, text: str) -> object:
    try:
        return rules.apply_canonical(state, text)
    except RulesError as error:
        return (type(error), str(error))


def _texts(legal: list[str], junk: str, rng: random.Random) -> list[str]:
    texts = [junk]
    for move in rng.sample(legal, min(6, len(legal))):
        head, *recoveries = move.split("x")
        texts += [move, move[:-1], move + "x1a1", "x".join([head, *reversed(recoveries)])]
        i = rng.randrange(len(move))
        texts.append(move[:i] + rng.choice("12345abcdexRYGBOP-") + move[i + 1 :])
    return texts


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(GAMES), st.integers(0, 2**32), st.text(alphabet="1234abcdxRYG- ", max_size=10))
def test_apply_canonical_is_apply_and_canonical_move(game: tuple[str, int], seed: int, junk: str) -> None:
    name, seats = game
    rules = get_rules(name)
    rng = random.Random(seed)
    state = rules.new_game(rules.parse_config({}, seats), rng.randbytes(32))
    for _ in range(rng.randrange(60)):
        if rules.outcome(state) is not None:
            break
        state = rules.apply(state, rules.random_move(state, rng))
    legal = rules.legal_moves(state)
    for text in _texts(legal, junk, rng):
        assert _at_once(rules, state, text) == _separately(rules, state, text), text
