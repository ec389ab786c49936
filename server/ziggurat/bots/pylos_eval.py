"""Pylos static evaluation and move ordering on the engine's two board masks.

Search needs millions of cheap calls, so this works on the engine's own
representation (two 30-bit ints, see :mod:`ziggurat.rules.pylos_geometry`) and
its private mask-level generator, rather than on move strings. If the engine's
internals change, only this module has to follow.

The evaluation is the classic one: the reserve difference decides Pylos (the
player with balls left when the board fills places the top), adjusted by
square *threats* (a supported empty place that would complete a square of one
colour, i.e. a recovery next move) and by the top being available.
"""

from __future__ import annotations

from typing import Final

from ziggurat.rules.pylos import (
    Variant,
    _completion,
    _generate,
    _notation,
    _play,
)
from ziggurat.rules.pylos_geometry import BALLS_PER_COLOUR, BELOW, LEVEL_OF, TOP, supported

Move = tuple[int, int, tuple[int, ...]]  # the engine's (source or -1, target, recoveries)

WIN: Final = 100_000
"""Score of a won position; a win found ``n`` plies away scores ``WIN - n``."""
BALL: Final = 100
THREAT_TO_MOVE: Final = 70  # a recovery available right now is nearly a ball in hand
THREAT_EACH: Final = 15
THREAT_AGAINST: Final = 30  # the side to move can block only one of the opponent's threats

__all__ = [
    "BALL",
    "TOP",
    "WIN",
    "Move",
    "evaluate",
    "generate",
    "notation",
    "order_key",
    "play",
    "threats",
    "warm_up",
]

generate = _generate
play = _play
notation = _notation


def warm_up(variant: Variant = Variant.STANDARD) -> None:
    """Build the engine's completion tables now (a fraction of a second), not during a timed move."""
    _completion(variant)


def threats(own: int, occ: int, variant: Variant) -> int:
    """Empty supported places where ``own`` would complete a recovery shape."""
    k1, k2, k3 = _completion(variant)
    return (k1[own & 0xFFFF] | k2[own >> 16 & 0x1FF] | k3[own >> 25 & 0xF]) & supported(occ) & ~occ


def evaluate(light: int, dark: int, side: int, variant: Variant) -> int:
    """Score for the side to move (positive is good), without generating moves."""
    own, opp = (dark, light) if side else (light, dark)
    occ = light | dark
    own_reserve = BALLS_PER_COLOUR - own.bit_count()
    if own_reserve and occ & BELOW[TOP] == BELOW[TOP] and not occ >> TOP & 1:
        return WIN - 1  # the top is ours to place
    opp_reserve = BALLS_PER_COLOUR - opp.bit_count()
    score = BALL * (own_reserve - opp_reserve)
    if variant is not Variant.BEGINNER:
        mine = threats(own, occ, variant).bit_count()
        theirs = threats(opp, occ, variant).bit_count()
        if mine:
            score += THREAT_TO_MOVE + THREAT_EACH * (mine - 1)
        score -= THREAT_AGAINST * max(0, theirs - 1) + THREAT_EACH * min(theirs, 1)
    return score


def order_key(move: Move) -> int:
    """Larger first: the top, then recoveries (more balls back first), then raises, then high places."""
    src, target, recs = move
    if target == TOP:
        return 1000
    return 100 * len(recs) + (50 if src >= 0 else 0) + LEVEL_OF[target]
