"""Typed, game-specific views over the wire ``GameView``: what a bot or UI reads.

The wire view is generic (position text plus a per-game detail); these classes
give it structure (levels and places for Pylos, stacks and hands for Kabaleo)
without adding anything the view did not contain.
"""

from __future__ import annotations

from dataclasses import dataclass

from ziggurat_client.v1 import game_pb2

COLOURS = "RYGBOP"
LEVEL_SIZES = (4, 3, 2, 1)


@dataclass(frozen=True, slots=True)
class PylosBoard:
    """A Pylos position: ``cells[level][row][column]`` is ``"L"``, ``"D"`` or ``"."`` (0-based)."""

    cells: tuple[tuple[tuple[str, ...], ...], ...]
    light_reserve: int
    dark_reserve: int
    to_move: int  # 1 = light, 2 = dark, 0 = game over
    ply: int
    legal_moves: tuple[str, ...]

    def at(self, place: str) -> str:
        """The ball on a place in notation (``"2b1"``), or ``"."``."""
        level, column, row = int(place[0]), ord(place[1]) - ord("a"), int(place[2:]) - 1
        return self.cells[level - 1][row][column]

    @classmethod
    def from_view(cls, view: game_pb2.GameView) -> PylosBoard:
        """Structure a Pylos GameView."""
        if view.WhichOneof("detail") != "pylos":
            raise ValueError("not a Pylos view")
        cells = tuple(
            tuple(tuple(text[row * size : (row + 1) * size]) for row in range(size))
            for text, size in zip(view.pylos.levels, LEVEL_SIZES, strict=True)
        )
        return cls(
            cells=cells,
            light_reserve=view.pylos.light_reserve,
            dark_reserve=view.pylos.dark_reserve,
            to_move=view.to_move,
            ply=view.ply,
            legal_moves=tuple(view.legal_moves),
        )


@dataclass(frozen=True, slots=True)
class KabaleoStack:
    """One stack: its colours bottom to top (base first)."""

    colours: str

    @property
    def top(self) -> str:
        """The colour the stack shows."""
        return self.colours[-1]

    @property
    def height(self) -> int:
        """Pyramids in the stack, base included."""
        return len(self.colours)

    @property
    def bare(self) -> bool:
        """True when only the base is left."""
        return len(self.colours) == 1


@dataclass(frozen=True, slots=True)
class KabaleoTable:
    """A Kabaleo table as one viewer sees it; hidden objectives are None."""

    stacks: tuple[KabaleoStack, ...]
    hands: tuple[dict[str, int], ...]  # seat 1..n → colour letter → pieces
    objectives: tuple[str | None, ...]  # seat 1..n
    unheld: tuple[str | None, ...]
    viewer_seat: int  # 0 = spectator
    to_move: int
    ply: int
    last_stack: int  # 1-based, 0 = none
    forfeited_seats: tuple[int, ...]
    legal_moves: tuple[str, ...]

    @property
    def own_objective(self) -> str | None:
        """The viewer's own secret colour (None for a spectator)."""
        return self.objectives[self.viewer_seat - 1] if self.viewer_seat else None

    @classmethod
    def from_view(cls, view: game_pb2.GameView) -> KabaleoTable:
        """Structure a Kabaleo GameView."""
        if view.WhichOneof("detail") != "kabaleo":
            raise ValueError("not a Kabaleo view")
        k = view.kabaleo
        return cls(
            stacks=tuple(KabaleoStack(colours) for colours in k.stacks),
            hands=tuple({c: hand.count(c) for c in COLOURS if c in hand} for hand in k.hands),
            objectives=tuple(None if letter == "?" else letter for letter in k.objectives),
            unheld=tuple(None if letter == "?" else letter for letter in k.unheld),
            viewer_seat=view.viewer_seat,
            to_move=view.to_move,
            ply=view.ply,
            last_stack=k.last_stack,
            forfeited_seats=tuple(k.forfeited_seats),
            legal_moves=tuple(view.legal_moves),
        )


def typed_view(view: game_pb2.GameView) -> PylosBoard | KabaleoTable:
    """The typed form of any GameView."""
    return (
        PylosBoard.from_view(view) if view.WhichOneof("detail") == "pylos" else KabaleoTable.from_view(view)
    )
