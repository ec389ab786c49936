"""The baseline: a uniformly random legal move, the bottom rung of every ladder."""

from __future__ import annotations

from ziggurat_client.bot import Turn
from ziggurat_client.bots.common import make_rng


class RandomBot:
    """Picks uniformly among ``turn.legal_moves``; seedable so games are reproducible."""

    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        self.rng = make_rng(seed)

    def choose(self, turn: Turn) -> str:
        """Any legal move, each equally likely."""
        return turn.legal_moves[self.rng.randrange(len(turn.legal_moves))]
