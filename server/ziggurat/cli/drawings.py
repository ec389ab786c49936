"""Positions drawn for people in a terminal (``ziggurat replay``), chosen by the game's rules.

Why a table and not a test of the game's name: a game registered in
:data:`ziggurat.rules.registry.GAMES` is replayed before anyone draws it, as its full position
text (the notation of its rules page), and drawing a game later is one entry here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ziggurat.rules.kabaleo import KABALEO
from ziggurat.rules.pylos import PYLOS
from ziggurat.rules.pylos_geometry import LEVEL_SIZE


def draw_pylos(position: str) -> str:
    """The four levels side by side, the seat to move below."""
    fields = position.split()
    levels = fields[0].split("/")
    rows = []
    for row in range(LEVEL_SIZE[0]):
        parts = []
        for level, size in zip(levels, LEVEL_SIZE, strict=True):
            cells = level[row * size : (row + 1) * size] if row < size else ""
            parts.append(" ".join(cells).ljust(2 * 4))
        rows.append("   ".join(parts).rstrip())
    return "\n".join(rows) + f"\nto move: {fields[1]}"


def draw_kabaleo(position: str) -> str:
    """The top and height of every stack, each seat's hand, then whose turn and the objectives."""
    fields = position.split()
    stacks = fields[0].split("/")
    hands = fields[1].split("/")
    tops = " ".join(f"{i + 1}:{s[-1]}{len(s)}" for i, s in enumerate(stacks))
    lines = [f"stacks {tops}"]
    lines += [f"seat {i + 1} hand {hand}" for i, hand in enumerate(hands)]
    lines.append(f"to move {fields[2]}, last stack {fields[3]}, objectives {fields[4]}")
    return "\n".join(lines)


DRAWINGS: Mapping[str, Callable[[str], str]] = {PYLOS.name: draw_pylos, KABALEO.name: draw_kabaleo}
"""The games drawn here, by registry name; every other game shows its position text."""


def draw(game: str, position: str) -> str:
    """``position`` (a full position of ``game``) drawn, or as written when the game has no drawing."""
    drawing = DRAWINGS.get(game)
    return position if drawing is None else drawing(position)
