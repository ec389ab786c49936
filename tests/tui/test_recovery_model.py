"""The guided recovery against the real rules engine: over many random Pylos games, picking
balls one at a time reaches exactly the legal moves that take balls back (each in the
server's canonical spelling), and offers nothing the rules forbid."""

from __future__ import annotations

import random

from ziggurat.rules.pylos import PylosConfig, PylosRules
from ziggurat.tui.recovery import DONE, Recovery, bases, with_recovery


def reachable(base: str, legal: list[str]) -> set[str]:
    """Every move the picker can assemble for ``base``, trying each offered choice."""
    found: set[str] = set()
    first = Recovery(base)
    for ball in first.choices(legal):
        one = first.pick(ball)
        for second in one.choices(legal):
            move = one.move(legal) if second == DONE else one.pick(second).move(legal)
            assert move is not None, (base, ball, second)
            found.add(move)
    return found


def test_the_picker_reaches_exactly_the_legal_recoveries() -> None:
    rules, rng = PylosRules(), random.Random(11)
    positions = squares = 0
    for game in range(60):
        state = rules.new_game(PylosConfig(), game.to_bytes(32, "big"))
        while rules.to_move(state) is not None:
            legal = rules.legal_moves(state)
            positions += 1
            for base in bases(legal):
                if with_recovery(base, legal):
                    squares += 1
                    assert reachable(base, legal) == {m for m in legal if m.split("x", 1)[0] == base}
                else:
                    assert base in legal
            state = rules.apply(state, rng.choice(legal))
    assert positions > 1000 and squares > 20  # the property met many real squares
