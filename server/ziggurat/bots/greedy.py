"""One-ply heuristic bots: look at every legal move once, keep the best by a static score.

They are the second rung of the ladder: cheap, deterministic up to random
tie-breaks, and already far better than random because both games reward an
obvious greedy instinct (Pylos: keep balls in reserve; Kabaleo: show your colour).
"""

from __future__ import annotations

import random
from typing import Any

from ziggurat.bots import pylos_eval
from ziggurat.bots.common import make_rng
from ziggurat.bots.positions import kabaleo_determiniser, pylos_state_for_turn
from ziggurat.rules.kabaleo import KABALEO, KabaleoState, score_key
from ziggurat.rules.pylos import PylosState
from ziggurat_client.bot import Turn


def _scalar(key: tuple[int, int, int]) -> float:
    """Collapse a Kabaleo score key into one number that keeps its left-to-right order (heights < 100)."""
    shown, covered, tallest = key
    return shown * 10_000 + covered * 100 + tallest


class GreedyBot:
    """Best move by a one-ply static score; ties broken at random (seedable)."""

    name = "greedy"

    def __init__(self, seed: int | None = None, opponent_weight: float = 0.5) -> None:
        self.rng = make_rng(seed)
        self.opponent_weight = opponent_weight
        pylos_eval.warm_up()  # first timed move must not pay for table building

    def choose(self, turn: Turn) -> str:
        """Score every legal move and return one of the best."""
        state = pylos_state_for_turn(turn) if turn.game == "pylos" else kabaleo_determiniser(turn).base
        scored = self.score_moves(turn, state)
        best = max(score for score, _ in scored)
        return _pick([move for score, move in scored if score == best], self.rng)

    def score_moves(self, turn: Turn, state: Any) -> list[tuple[float, str]]:
        """(score, move) for every legal move; ``state`` is the turn's state (placeholders for hidden
        Kabaleo objectives are fine: only the seat's own objective is read).
        """
        if turn.game == "pylos":
            return self._pylos(state)
        return self._kabaleo(turn, state)

    def _pylos(self, state: PylosState) -> list[tuple[float, str]]:
        """Score = evaluation after the move from the mover's side (reserve kept, threats left)."""
        variant = state.config.variant
        out: list[tuple[float, str]] = []
        for move in pylos_eval.generate(state.light, state.dark, state.side, variant):
            if move[1] == pylos_eval.TOP:
                out.append((float(pylos_eval.WIN), pylos_eval.notation(move)))
                continue
            light, dark = pylos_eval.play(state.light, state.dark, state.side, move)
            if not pylos_eval.generate(light, dark, state.side ^ 1, variant):
                value = float(pylos_eval.WIN)  # the opponent is stuck and loses
            else:
                value = -float(pylos_eval.evaluate(light, dark, state.side ^ 1, variant))
            out.append((value, pylos_eval.notation(move)))
        return out

    def _kabaleo(self, turn: Turn, state: KabaleoState) -> list[tuple[float, str]]:
        """Own objective's key after the move, minus a share of the strongest rival colour.

        The rival colour is unknown, so the best-placed other colour in play is the
        pessimistic guess; only the seat's own objective (visible to it) is used.
        """
        seat = turn.seat - 1
        own = state.objectives[seat]  # the one objective this seat may see
        others = [c for c in state.colours_in_play if c != own]
        out: list[tuple[float, str]] = []
        for move in turn.legal_moves:
            stacks = KABALEO.apply(state, move).stacks
            rival = max(_scalar(score_key(stacks, c)) for c in others)
            out.append((_scalar(score_key(stacks, own)) - self.opponent_weight * rival, move))
        return out


def _pick(moves: list[str], rng: random.Random) -> str:
    return moves[rng.randrange(len(moves))]
