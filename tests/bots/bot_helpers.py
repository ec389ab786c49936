from __future__ import annotations

import random
from typing import Any

from ziggurat.bots.arena import seed_bytes, turn_for
from ziggurat.rules.registry import get_rules
from ziggurat_client.bot import Turn


def random_turns(
    game: str, seats: int, count: int, seed: int, options: dict[str, str] | None = None
) -> list[tuple[Any, Turn]]:
    """(referee state, turn) pairs at random plies of random games: the referee state is for checks only."""
    rules: Any = get_rules(game)
    opts = options or {}
    rng = random.Random(seed)
    out: list[tuple[Any, Turn]] = []
    while len(out) < count:
        state = rules.new_game(rules.parse_config(opts, seats), seed_bytes(rng.randrange(1 << 30)))
        history: list[str] = []
        stop = rng.randrange(60 if game == "pylos" else 36)
        while rules.to_move(state) is not None and len(history) < stop:
            move = rules.random_move(state, rng)
            state = rules.apply(state, move)
            history.append(move)
        if rules.to_move(state) is not None:
            out.append((state, turn_for(game, opts, state, history)))
    return out
