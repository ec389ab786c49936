"""Kabaleo values: colours, configuration, the immutable state and scoring.

This module holds the plain data every other Kabaleo module shares, so that the
set-up, position notation, fast playouts and the rules object can live in
separate small modules without importing each other in a circle.

Hidden information: ``KabaleoState.objectives`` and ``KabaleoState.unheld`` are
SECRET until the game is over. They are excluded from ``repr`` so a state that
ends up in a log line or a traceback does not leak them; every client-facing
value must be built by ``ziggurat.rules.kabaleo.view``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ziggurat.rules.core import InvalidConfigError, Outcome, Termination, competition_ranks

COLOURS = "RYGBOP"
"""The six colour letters in canonical order: every sorted list of colours uses it."""

COLOUR_NAMES = {"R": "red", "Y": "yellow", "G": "green", "B": "blue", "O": "orange", "P": "pink"}
"""English names used in error messages (public facts only)."""

COLOUR_INDEX = {c: i for i, c in enumerate(COLOURS)}
"""Position of each letter in :data:`COLOURS`, the index into a hand's count tuple."""

BASES_PER_COLOUR = 4
PIECES_PER_COLOUR = 6
MIN_PLAYERS = 2
MAX_PLAYERS = 4


class Deal(enum.Enum):
    """How pieces are dealt: the two methods of the rule text (values are the option strings)."""

    RANDOM = "random"
    EQUAL = "equal"


def canonical_colours(letters: Iterable[str]) -> str:
    """Letters sorted in RYGBOP order, so equal colour sets always compare and print equal."""
    return "".join(sorted(letters, key=COLOUR_INDEX.__getitem__))


@dataclass(frozen=True, slots=True)
class KabaleoConfig:
    """A match configuration; constructing an invalid one raises InvalidConfigError.

    ``colours`` fixes the colours in play (exactly ``players + 2`` distinct
    letters); None lets the seed choose them. Letters given in any order are
    stored in RYGBOP order so that two equal configurations are equal values.
    """

    players: int
    deal: Deal = Deal.RANDOM
    last_stack: bool = False
    colours: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.players, bool) or not isinstance(self.players, int):
            raise InvalidConfigError("players must be an integer from 2 to 4")
        if not MIN_PLAYERS <= self.players <= MAX_PLAYERS:
            raise InvalidConfigError(f"Kabaleo is played by 2 to 4 players, not {self.players}")
        if not isinstance(self.deal, Deal):
            raise InvalidConfigError("deal must be 'random' or 'equal'")
        if self.deal is Deal.EQUAL and self.players == MAX_PLAYERS:
            raise InvalidConfigError("the equal deal is for 2 or 3 players only")
        if not isinstance(self.last_stack, bool):
            raise InvalidConfigError("last_stack must be true or false")
        if self.colours is not None:
            object.__setattr__(self, "colours", _checked_colours(self.colours, self.players))

    @property
    def colour_count(self) -> int:
        """Colours in play: always two more than players."""
        return self.players + 2

    @property
    def stack_count(self) -> int:
        """Stacks on the board: 4 bases per colour in play (16, 20 or 24)."""
        return BASES_PER_COLOUR * self.colour_count

    @property
    def pieces_per_player(self) -> int:
        """Hand size at the start (12, 10 or 9): every piece in play is dealt."""
        return PIECES_PER_COLOUR * self.colour_count // self.players

    @property
    def total_plies(self) -> int:
        """Length of a complete game: one ply per piece in play (24, 30 or 36)."""
        return PIECES_PER_COLOUR * self.colour_count


def _checked_colours(colours: object, players: int) -> str:
    """Validate fixed colours and return them in canonical order."""
    if not isinstance(colours, str):
        raise InvalidConfigError("colours must be a string of colour letters")
    for letter in colours:
        if letter not in COLOUR_INDEX:
            raise InvalidConfigError(f"unknown colour letter {letter!r}; use letters of {COLOURS}")
    if len(set(colours)) != len(colours):
        raise InvalidConfigError("colours must not repeat a letter")
    if len(colours) != players + 2:
        raise InvalidConfigError(
            f"{players} players need exactly {players + 2} colours in play, got {len(colours)}"
        )
    return canonical_colours(colours)


Hand = tuple[int, int, int, int, int, int]
"""Piece counts of one seat in RYGBOP order (colours not in play are always 0)."""


@dataclass(frozen=True, slots=True)
class KabaleoState:
    """An immutable Kabaleo position: the authoritative state, never sent to clients.

    PUBLIC: ``config``, ``stacks`` (each stack's letters bottom to top, base
    first), ``hands``, ``to_move`` (0-based seat, None once the game is over),
    ``last`` (0-based stack index of the previous move or None), ``forfeited``,
    ``ply`` (moves made so far) and ``early_end`` (set only when forfeits ended
    the game before every piece was placed).

    SECRET until the game is over: ``objectives`` (one letter per seat) and
    ``unheld`` (the two colours nobody holds, RYGBOP order). They are left out
    of ``repr`` so a stray log line cannot reveal them.
    """

    config: KabaleoConfig
    stacks: tuple[str, ...]
    hands: tuple[Hand, ...]
    to_move: int | None
    last: int | None
    objectives: tuple[str, ...] = field(repr=False)  # SECRET
    unheld: tuple[str, str] = field(repr=False)  # SECRET
    forfeited: frozenset[int] = frozenset()
    ply: int = 0
    early_end: Termination | None = None

    @property
    def is_over(self) -> bool:
        """True once nobody is to move (every piece placed, or forfeits ended the game)."""
        return self.to_move is None

    @property
    def colours_in_play(self) -> str:
        """The colours of the bases, RYGBOP order; derived from the board, which never changes colour."""
        return canonical_colours({stack[0] for stack in self.stacks})


def score_key(stacks: Sequence[str], colour: str) -> tuple[int, int, int]:
    """Score one colour by the key that decides who wins, compared left to right.

    ``(stacks showing the colour, those topped by a piece, height of the tallest
    such piece-topped stack)`` — the rule text's count, then its two tie-breaks.
    Height counts every pyramid, base included; 0 when no piece tops the colour.
    """
    shown = covered = tallest = 0
    for stack in stacks:
        if stack[-1] != colour:
            continue
        shown += 1
        if len(stack) > 1:
            covered += 1
            tallest = max(tallest, len(stack))
    return (shown, covered, tallest)


def ranks_with_forfeits(keys: Sequence[tuple[int, ...]], forfeited: frozenset[int]) -> tuple[int, ...]:
    """Competition ranks where forfeited seats come last, sharing the last rank among themselves.

    Active seats are ranked by key among themselves first ("1224" ranking), so a
    forfeit can never lift or sink an active seat; every forfeited seat then
    gets rank ``active + 1`` whatever its key.
    """
    active = [seat for seat in range(len(keys)) if seat not in forfeited]
    active_ranks = competition_ranks([keys[seat] for seat in active])
    ranks = [len(active) + 1] * len(keys)
    for seat, rank in zip(active, active_ranks, strict=True):
        ranks[seat] = rank
    return tuple(ranks)


def outcome_of(state: KabaleoState) -> Outcome | None:
    """Return the outcome of a finished game, scoring each seat on its own objective colour."""
    if state.to_move is not None:
        return None
    keys = [score_key(state.stacks, colour) for colour in state.objectives]
    termination = state.early_end if state.early_end is not None else Termination.NORMAL
    return Outcome(termination, ranks_with_forfeits(keys, state.forfeited))
