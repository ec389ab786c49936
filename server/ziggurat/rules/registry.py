"""The games ziggurat hosts, by name: the one place that knows every game module."""

from __future__ import annotations

from typing import Any

from ziggurat.rules.core import GameRules, InvalidConfigError
from ziggurat.rules.kabaleo import KABALEO
from ziggurat.rules.phantom_ttt import PHANTOM_TTT
from ziggurat.rules.pylos import PYLOS

AnyRules = GameRules[Any, Any, Any]

GAMES: dict[str, AnyRules] = {PYLOS.name: PYLOS, KABALEO.name: KABALEO, PHANTOM_TTT.name: PHANTOM_TTT}


def get_rules(name: str) -> AnyRules:
    """The rules object of ``name``; InvalidConfigError lists the known games otherwise."""
    try:
        return GAMES[name]
    except KeyError:
        known = ", ".join(sorted(GAMES))
        raise InvalidConfigError(f"unknown game {name!r} (known: {known})") from None
