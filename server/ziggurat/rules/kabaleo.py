"""Kabaleo rules (``../shared/rules/kabaleo.md``): moves, views and the :class:`KabaleoRules` contract.

The pieces live in small modules with one job each and are re-exported here,
so callers only ever import ``ziggurat.rules.kabaleo``:

* :mod:`~ziggurat.rules.kabaleo_model` — colours, configuration, state, scoring;
* :mod:`~ziggurat.rules.kabaleo_setup` — the set-up derived from the seed;
* :mod:`~ziggurat.rules.kabaleo_position` — position text;
* :mod:`~ziggurat.rules.kabaleo_playout` — fast random playouts and perft.

Decisions this module documents:

* ``legal_moves`` is sorted by plain string order (``B1 < B10 < B2``): the
  simplest deterministic order, reproducible by a thin client in any language.
* Forfeits: the forfeited seat is ranked last at the end (tied with any other
  forfeited seat) and its turns still come — the server plays random moves for
  it — so everybody else can finish. When at most one seat is left that has not
  forfeited (always the case in a two-seat game) the game ends at once with the
  forfeit's termination and the remaining seat ranked first.
* ``View.legal_moves`` is filled only for the seat to move (and the referee):
  the list is public knowledge, but a bot should act only when it is asked to.
* Error messages name the move and public facts only, never an objective.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ziggurat.rules.core import (
    GameOption,
    GameOverError,
    GameRules,
    IllegalMoveError,
    InvalidConfigError,
    MalformedMoveError,
    Outcome,
    Termination,
    View,
)
from ziggurat.rules.kabaleo_model import (
    COLOUR_INDEX,
    COLOUR_NAMES,
    COLOURS,
    MAX_PLAYERS,
    Deal,
    Hand,
    KabaleoConfig,
    KabaleoState,
    outcome_of,
    score_key,
)
from ziggurat.rules.kabaleo_playout import perft, random_playout
from ziggurat.rules.kabaleo_position import format_fields, format_position, parse_position
from ziggurat.rules.kabaleo_setup import new_game, twin

__all__ = [
    "COLOURS",
    "KABALEO",
    "Deal",
    "KabaleoConfig",
    "KabaleoRules",
    "KabaleoState",
    "KabaleoView",
    "apply",
    "forfeit",
    "format_position",
    "legal_moves",
    "new_game",
    "outcome_of",
    "parse_move",
    "parse_position",
    "perft",
    "random_move",
    "random_playout",
    "referee_view",
    "score_key",
    "twin",
    "view",
]

_MOVE = re.compile(f"([{COLOURS}])([1-9][0-9]*)")


KabaleoMove = tuple[str, int]
"""A parsed move: the colour letter and the 0-based stack."""


def parse_move(move: str) -> KabaleoMove:
    """Split ``"B7"`` into ``("B", 6)`` (0-based stack); MalformedMoveError if it is not the notation.

    Only the notation is checked here (colour letter, decimal stack number,
    no leading zeros), so ``"P30"`` parses even when pink is not in play or
    there is no stack 30: those are IllegalMoveError, raised by :func:`apply`.
    """
    match = _MOVE.fullmatch(move) if isinstance(move, str) else None
    if match is None:
        raise MalformedMoveError(
            f"{move!r} is not a Kabaleo move: a colour letter of {COLOURS} then a stack number, like 'B7'"
        )
    return match.group(1), int(match.group(2)) - 1


def _check_legal(state: KabaleoState, colour: str, stack: int) -> None:
    """Raise IllegalMoveError naming the first rule the move breaks (public facts only)."""
    seat = state.to_move
    assert seat is not None
    if not state.hands[seat][COLOUR_INDEX[colour]]:
        raise IllegalMoveError(f"no {COLOUR_NAMES[colour]} piece in your hand")
    if stack >= len(state.stacks):
        raise IllegalMoveError(f"stack {stack + 1} does not exist (there are {len(state.stacks)})")
    if state.stacks[stack] == colour:
        raise IllegalMoveError(f"stack {stack + 1} is a bare {COLOUR_NAMES[colour]} base")
    if state.config.last_stack and stack == state.last:
        raise IllegalMoveError(f"last_stack: stack {stack + 1} was played last")


def _checked(state: KabaleoState, move: str) -> tuple[str, int]:
    """Game not over, notation valid, move legal: the checks shared by apply and canonical_move."""
    if state.to_move is None:
        raise GameOverError("the game is over")
    colour, stack = parse_move(move)
    _check_legal(state, colour, stack)
    return colour, stack


def legal_moves(state: KabaleoState) -> list[str]:
    """Every legal move of the seat to move, unique and in plain string order; empty when over."""
    seat = state.to_move
    if seat is None:
        return []
    banned = state.last if state.config.last_stack else None
    moves = [
        f"{colour}{number}"
        for colour, count in zip(COLOURS, state.hands[seat], strict=True)
        if count
        for number, stack in enumerate(state.stacks, start=1)
        if stack != colour and number - 1 != banned
    ]
    moves.sort()
    return moves


def apply(state: KabaleoState, move: str) -> KabaleoState:
    """Return the state after ``move``; a piece on its own colour cancels with the top piece."""
    colour, index = _checked(state, move)
    seat = state.to_move
    assert seat is not None
    stack = state.stacks[index]
    placed = stack[:-1] if stack[-1] == colour else stack + colour
    stacks = (*state.stacks[:index], placed, *state.stacks[index + 1 :])
    hands = list(state.hands)
    hands[seat] = _take(state.hands[seat], COLOUR_INDEX[colour])
    ply = state.ply + 1
    over = ply == state.config.total_plies
    return replace(
        state,
        stacks=stacks,
        hands=tuple(hands),
        to_move=None if over else (seat + 1) % state.config.players,
        last=index,
        ply=ply,
    )


def _take(hand: Hand, index: int) -> Hand:
    """Return the hand with one piece of colour ``index`` removed (hands are immutable tuples)."""
    counts = list(hand)
    counts[index] -= 1
    return (counts[0], counts[1], counts[2], counts[3], counts[4], counts[5])


def random_move(state: KabaleoState, rng: random.Random) -> str:
    """Draw a move uniformly from :func:`legal_moves` (time-out substitution, forfeited seats)."""
    moves = legal_moves(state)
    if not moves:
        raise GameOverError("the game is over")
    return moves[rng.randrange(len(moves))]


def forfeit(state: KabaleoState, seat: int, termination: Termination) -> KabaleoState:
    """Record that ``seat`` resigned or lost on time; see the module docstring for the policy.

    Forfeiting twice is a no-op so that a retried server request is harmless.
    """
    if state.to_move is None:
        raise GameOverError("the game is over")
    if not 0 <= seat < state.config.players:
        raise ValueError(f"seat {seat} does not exist")
    if seat in state.forfeited:
        return state
    forfeited = state.forfeited | {seat}
    if state.config.players - len(forfeited) <= 1:
        return replace(state, forfeited=forfeited, to_move=None, early_end=termination)
    return replace(state, forfeited=forfeited)


@dataclass(frozen=True, slots=True)
class KabaleoView(View):
    """What one viewer may know of a Kabaleo game; the only Kabaleo value sent to clients.

    ``objectives[i]`` is None while seat i's objective is hidden from the
    viewer; ``unheld`` is ``(None, None)`` until the end. ``last`` is the
    0-based stack of the previous move. Hands are public in Kabaleo, so they
    are always shown.
    """

    stacks: tuple[str, ...]
    hands: tuple[Hand, ...]
    last: int | None
    objectives: tuple[str | None, ...]
    unheld: tuple[str | None, str | None]
    forfeited: frozenset[int]


def _build_view(state: KabaleoState, viewer: int | None, referee: bool, released: bool) -> KabaleoView:
    """Assemble a view field by field from public values plus what this viewer may see.

    Every objective, the unheld colours and the outcome are shown only once the game is over
    *and* its match has released the end (``released``); the referee sees everything.
    """
    over = state.to_move is None and released
    objectives = tuple(
        colour if over or referee or seat == viewer else None for seat, colour in enumerate(state.objectives)
    )
    unheld: tuple[str | None, str | None] = state.unheld if over or referee else (None, None)
    shows_moves = referee or (viewer is not None and viewer == state.to_move)
    return KabaleoView(
        game=KabaleoRules.name,
        viewer=viewer,
        referee=referee,
        seats=state.config.players,
        to_move=state.to_move,
        ply=state.ply,
        position=format_fields(
            state.stacks,
            state.hands,
            to_move=state.to_move,
            last=state.last,
            objectives=objectives,
            unheld=unheld,
        ),
        legal_moves=tuple(legal_moves(state)) if shows_moves else (),
        outcome=outcome_of(state) if over or referee else None,
        stacks=state.stacks,
        hands=state.hands,
        last=state.last,
        objectives=objectives,
        unheld=unheld,
        forfeited=state.forfeited,
    )


def view(state: KabaleoState, seat: int | None, *, released: bool = False) -> KabaleoView:
    """Show ``seat`` its own objective only, until a released end reveals every objective."""
    if seat is not None and not 0 <= seat < state.config.players:
        raise ValueError(f"seat {seat} does not exist")
    return _build_view(state, seat, referee=False, released=released)


def referee_view(state: KabaleoState) -> KabaleoView:
    """Show everything, for the server's records and the end-of-game reveal."""
    return _build_view(state, None, referee=True, released=True)


_OPTION_KEYS = ("deal", "last_stack", "colours")


class KabaleoRules:
    """Kabaleo behind the :class:`~ziggurat.rules.core.GameRules` contract the server and bots use."""

    name = "kabaleo"
    title = "Kabaleo"
    min_seats = 2
    max_seats = 4
    options: tuple[GameOption, ...] = (
        GameOption(
            "deal", "how pieces are dealt ('equal': 2 or 3 players only)", ("random", "equal"), "random"
        ),
        GameOption("last_stack", "forbid the stack of the previous move", ("false", "true"), "false"),
        GameOption(
            "colours",
            "colours in play as letters of RYGBOP, seats + 2 of them; empty: drawn from the seed",
            (),
            "",
        ),
    )
    hidden_information = True
    private_moves = False  # every move is public
    duplicate_deals = True  # the seed deals the objectives: a deal can be replayed, seats rotated
    openings = False  # the set-up is the seed's deal: no one opening fits every game
    perft_ignores: frozenset[Termination] = frozenset()

    def option_examples(self, seats: int) -> list[dict[str, str]]:
        """Defaults, ``last_stack``, fixed colours and (below four seats) the ``equal`` deal."""
        examples: list[dict[str, str]] = [
            {},
            {"last_stack": "true"},
            {"colours": COLOURS[::-1][: seats + 2], "last_stack": "false", "deal": "random"},
        ]
        if seats < MAX_PLAYERS:  # the equal deal is for 2 or 3 players only
            examples.append({"deal": "equal", "last_stack": "true"})
        return examples

    def parse_config(self, options: Mapping[str, str], seats: int) -> KabaleoConfig:
        """Options ``deal`` (random|equal), ``last_stack`` (true|false), ``colours`` (e.g. ``RGBO``)."""
        unknown = sorted(set(options) - set(_OPTION_KEYS))
        if unknown:
            raise InvalidConfigError(f"unknown Kabaleo option(s) {unknown}; known: {list(_OPTION_KEYS)}")
        deal_text = options.get("deal", Deal.RANDOM.value)
        try:
            deal = Deal(deal_text)
        except ValueError:
            raise InvalidConfigError(f"deal must be 'random' or 'equal', got {deal_text!r}") from None
        last_text = options.get("last_stack", "false")
        if last_text not in ("true", "false"):
            raise InvalidConfigError(f"last_stack must be 'true' or 'false', got {last_text!r}")
        return KabaleoConfig(seats, deal, last_text == "true", options.get("colours"))

    def config_options(self, config: KabaleoConfig) -> dict[str, str]:
        """Invert :meth:`parse_config`, omitting defaults so records stay short."""
        options: dict[str, str] = {}
        if config.deal is not Deal.RANDOM:
            options["deal"] = config.deal.value
        if config.last_stack:
            options["last_stack"] = "true"
        if config.colours is not None:
            options["colours"] = config.colours
        return options

    def new_game(self, config: KabaleoConfig, seed: bytes) -> KabaleoState:
        """Derive the initial state from the 32-byte seed (``docs/setup-derivation.md``)."""
        return new_game(config, seed)

    def legal_moves(self, state: KabaleoState) -> list[str]:
        """Sorted, unique legal moves of the seat to move; empty when over."""
        return legal_moves(state)

    def apply(self, state: KabaleoState, move: str) -> KabaleoState:
        """Return the state after ``move``; raise MalformedMoveError, IllegalMoveError or GameOverError."""
        return apply(state, move)

    def apply_canonical(self, state: KabaleoState, move: str) -> tuple[KabaleoState, str]:
        """The state after ``move`` and the move itself (the notation is strict: a legal
        move is already canonical), checked once."""
        return apply(state, move), move

    def canonical_move(self, state: KabaleoState, move: str) -> str:
        """Check ``move`` and return it: the notation is strict, so a legal move is already canonical."""
        _checked(state, move)
        return move

    def parse_move(self, text: str) -> KabaleoMove:
        """``"B7"`` is ``("B", 6)``: the notation only (see :func:`parse_move`)."""
        return parse_move(text)

    def format_move(self, move: KabaleoMove) -> str:
        """``("B", 6)`` is ``"B7"``: stacks print 1-based."""
        colour, stack = move
        return f"{colour}{stack + 1}"

    def to_move(self, state: KabaleoState) -> int | None:
        """Return the seat to move, None when over."""
        return state.to_move

    def outcome(self, state: KabaleoState) -> Outcome | None:
        """Return the outcome once over, else None."""
        return outcome_of(state)

    def seats(self, state: KabaleoState) -> int:
        """Return the number of seats (players)."""
        return state.config.players

    def parse_position(self, text: str, config: KabaleoConfig) -> KabaleoState:
        """Read a full position; raise InvalidPositionError if impossible."""
        return parse_position(text, config)

    def format_position(self, state: KabaleoState) -> str:
        """Write the full (referee) position string."""
        return format_position(state)

    def random_move(self, state: KabaleoState, rng: random.Random) -> str:
        """Draw a uniformly random legal move."""
        return random_move(state, rng)

    def forfeit(self, state: KabaleoState, seat: int, termination: Termination) -> KabaleoState:
        """Rank the seat last; end the game only when at most one seat has not forfeited."""
        return forfeit(state, seat, termination)

    def view(self, state: KabaleoState, seat: int | None, *, released: bool = False) -> KabaleoView:
        """Build what ``seat`` (None: spectator) may know (``released``: see GameRules.view)."""
        return view(state, seat, released=released)

    def referee_view(self, state: KabaleoState) -> KabaleoView:
        """Build the view that shows everything."""
        return referee_view(state)

    def twin(self, state: KabaleoState, seat: int | None, rng: random.Random) -> KabaleoState:
        """Redraw the objectives ``seat`` may not see and the unheld colours (see :func:`twin`)."""
        return twin(state, seat, rng)

    def perft(self, state: KabaleoState, depth: int) -> int:
        """Count legal move sequences of exactly ``depth`` moves."""
        return perft(state, depth)

    def random_playout(self, state: KabaleoState, rng: random.Random) -> Outcome:
        """Play uniformly random moves to the end and return the outcome (for MCTS bots)."""
        return random_playout(state, rng)


KABALEO = KabaleoRules()
"""The module instance the server registers under ``"kabaleo"``."""

if TYPE_CHECKING:
    _CONTRACT: GameRules[KabaleoConfig, KabaleoState, KabaleoMove] = KABALEO
