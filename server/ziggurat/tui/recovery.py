"""A Pylos recovery chosen one ball at a time, following the server's legal moves.

Why: a move that completes a square has up to 23 spellings (which one or two balls come
back), too many to pick from a flat list. The player instead plays the ball, then picks
the balls to take back one at a time among those the legal moves allow, and the full move
is assembled in the canonical spelling the server listed. Nothing here decides legality:
every choice offered is read from the legal-move list of the turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ziggurat.tui.i18n import t

DONE = "done"  # the choice "take back no second ball"


def base_of(move: str) -> str:
    """The move without its recoveries: ``1b2x1a1`` → ``1b2``."""
    return move.split("x", 1)[0]


def bases(legal: Sequence[str]) -> list[str]:
    """Each placement or raise once, whatever it may take back (what the move list shows)."""
    return list(dict.fromkeys(base_of(move) for move in legal))


def with_recovery(base: str, legal: Sequence[str]) -> bool:
    """Whether playing ``base`` completes a square, so a ball must be taken back."""
    return base not in legal and any(move.startswith(base + "x") for move in legal)


@dataclass(frozen=True, slots=True)
class Recovery:
    """A recovery under way: the ball played (``base``) and the balls picked so far."""

    base: str
    picked: tuple[str, ...] = ()

    def choices(self, legal: Sequence[str]) -> list[str]:
        """The balls that may be taken back next (and ``done`` once one is taken)."""
        parts = [move.split("x") for move in legal if base_of(move) == self.base]
        if not self.picked:
            return sorted({p[1] for p in parts if len(p) >= 2})
        first = self.picked[0]
        second = {p[2] for p in parts if len(p) == 3 and p[1] == first}
        second |= {p[1] for p in parts if len(p) == 3 and p[2] == first}
        return [*sorted(second), DONE]

    def pick(self, ball: str) -> Recovery:
        """One more ball taken back."""
        return Recovery(self.base, (*self.picked, ball))

    def move(self, legal: Sequence[str]) -> str | None:
        """The legal move (canonical spelling) of this recovery once complete, else None."""
        if not self.picked:
            return None
        wanted = {self.base + "x" + "x".join(order) for order in (self.picked, self.picked[::-1])}
        return next((move for move in legal if move in wanted), None)

    def prompt(self) -> str:
        """What the player is asked now."""
        if not self.picked:
            return t("recovery.first", move=self.base)
        return t("recovery.second", move=self.base, ball=self.picked[0], done=DONE)
