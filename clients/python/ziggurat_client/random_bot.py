"""The starter bot: a uniformly random legal move, the bottom rung of every ladder."""

from __future__ import annotations

import random

from ziggurat_client.bot import Turn


class RandomBot:
    """Picks uniformly among ``turn.legal_moves``; seedable so games are reproducible."""

    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        self.rng = random.Random(seed)  # private: bots never share the global generator

    def choose(self, turn: Turn) -> str:
        """Any legal move, each equally likely."""
        return turn.legal_moves[self.rng.randrange(len(turn.legal_moves))]
