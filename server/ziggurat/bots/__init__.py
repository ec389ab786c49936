"""Ready-made bots, by name: ``make_bot("mcts", seed=1)``.

Every bot is a class with a ``name`` and ``choose(turn) -> move`` (the
:class:`~ziggurat_client.bot.Bot` protocol) whose constructor takes keyword
options with defaults, so the CLI, the arena and the ladder can build any bot
from a name and a few strings of configuration.

* ``random`` — uniform over the legal moves (every registered game).
* ``greedy`` — one-ply heuristic (Pylos and Kabaleo).
* ``mcts`` — UCT with random playouts; information-set MCTS for Kabaleo (Pylos and Kabaleo).
* ``alphabeta`` — iterative-deepening negamax with a transposition table (Pylos only).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ziggurat.bots.alphabeta import AlphaBetaBot
from ziggurat.bots.greedy import GreedyBot
from ziggurat.bots.mcts import MctsBot
from ziggurat.rules.registry import GAMES
from ziggurat_client.bot import Bot
from ziggurat_client.random_bot import RandomBot

BOTS: dict[str, Callable[..., Bot]] = {
    "random": RandomBot,
    "greedy": GreedyBot,
    "mcts": MctsBot,
    "alphabeta": AlphaBetaBot,
}

GAMES_OF: dict[str, tuple[str, ...]] = {
    "random": tuple(GAMES),  # it reads nothing but the legal moves
    "greedy": ("pylos", "kabaleo"),
    "mcts": ("pylos", "kabaleo"),
    "alphabeta": ("pylos",),
}
"""Which games each bot can play (the others read game-specific positions or playouts)."""


def make_bot(name: str, **options: Any) -> Bot:
    """Build the bot called ``name`` with keyword ``options``; ValueError names the known bots."""
    try:
        factory = BOTS[name]
    except KeyError:
        raise ValueError(f"unknown bot {name!r} (known: {', '.join(sorted(BOTS))})") from None
    return factory(**options)


__all__ = ["BOTS", "GAMES_OF", "AlphaBetaBot", "GreedyBot", "MctsBot", "RandomBot", "make_bot"]
