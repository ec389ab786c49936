"""Phantom tic-tac-toe (``docs/phantom-tic-tac-toe.md``): the :class:`PhantomRules` contract.

Tic-tac-toe where each seat sees only its own marks. Trying a cell the opponent holds shows
that cell to the trier, counts as a move (a ply), and the trier tries again; the first three
in a row wins and a full board is a draw. The board itself is in
:mod:`~ziggurat.rules.phantom_ttt_board`.

Decisions this module documents (the rules page says them for players):

* Moves are private: the other seat and spectators learn only that a ply passed (the ply and
  the seat to move are public in every game), so a failed attempt is known to have happened,
  never where. This is what ``private_moves`` tells the contract suite.
* Legal moves are the cells the mover has neither marked nor found taken: trying a known
  cell again would tell nothing and could go on forever.
* A seat's view shows what it knows, which is what every board it cannot rule out agrees on
  (its marks, the opponent cells it found, and anything the public counts force, such as
  "every one of my marks was found"). A spectator sees no mark before the released end, so a
  spectator can pass nothing to a seat.
* Forfeits end the game at once (two seats), the forfeiting seat losing.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
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
from ziggurat.rules.phantom_ttt_board import (
    EMPTY,
    NAMES,
    Board,
    board_over,
    cell_chars,
    format_board,
    parse_board,
    ply,
    rows_text,
    seat_chars,
    seat_twin,
    spectator_twin,
    winner,
)
from ziggurat.rules.phantom_ttt_board import to_move as board_to_move

SEATS = 2
_CELL = {name: index for index, name in enumerate(NAMES)}


@dataclass(frozen=True, slots=True)
class PhantomConfig:
    """Phantom tic-tac-toe has no options: two seats, x (seat 1) moves first."""

    seats: int = SEATS


@dataclass(frozen=True, slots=True)
class PhantomState:
    """A board plus, when a seat resigned or lost on time, that early end."""

    board: Board
    early_end: Outcome | None = None


@dataclass(frozen=True, slots=True)
class PhantomTicTacToeView(View):
    """What one viewer may know: ``cells`` is nine characters, ``a1, b1, c1, a2, ..., c3``, as in
    the position text (``.`` empty or unknown, ``x``/``o`` a mark, upper case once found by the
    opponent); the same text, row 3 first, is ``position``."""

    cells: str


def outcome_of(state: PhantomState) -> Outcome | None:
    """The early end, else three in a row wins, else a full board draws, else None."""
    if state.early_end is not None:
        return state.early_end
    won = winner(state.board)
    if won is not None:
        return Outcome.win_for(SEATS, won, Termination.NORMAL)
    if board_over(state.board):
        return Outcome.draw(SEATS, Termination.NORMAL)
    return None


def mover(state: PhantomState) -> int | None:
    """The seat to move, None when over."""
    return None if outcome_of(state) is not None else board_to_move(state.board)


def legal_moves(state: PhantomState) -> list[str]:
    """The cells the mover has neither marked nor found taken, sorted; empty when over."""
    seat = mover(state)
    if seat is None:
        return []
    known = state.board[seat] | state.board[2 + seat]
    return sorted(name for index, name in enumerate(NAMES) if not known >> index & 1)


def parse_cell(text: str) -> int:
    """``"b2"`` is 4; MalformedMoveError for anything but ``a1`` .. ``c3``."""
    cell = _CELL.get(text)
    if cell is None:
        raise MalformedMoveError(f"{text!r} is not a cell: moves are a1 to c3")
    return cell


def apply(state: PhantomState, text: str) -> PhantomState:
    """Mark the cell, or find it the opponent's (a move that shows it; the turn stays)."""
    cell = parse_cell(text)
    seat = mover(state)
    if seat is None:
        raise GameOverError("the game is over")
    bit = 1 << cell
    marks0, marks1, seen0, seen1 = state.board
    if state.board[seat] & bit:
        raise IllegalMoveError(f"{text} is already yours")
    if state.board[2 + seat] & bit:
        raise IllegalMoveError(f"{text} is already known to be your opponent's")
    if state.board[1 - seat] & bit:
        board = (marks0, marks1, seen0 | bit, seen1) if seat == 0 else (marks0, marks1, seen0, seen1 | bit)
    else:
        board = (marks0 | bit, marks1, seen0, seen1) if seat == 0 else (marks0, marks1 | bit, seen0, seen1)
    return PhantomState(board)


def build_view(
    state: PhantomState, viewer: int | None, *, referee: bool, released: bool
) -> PhantomTicTacToeView:
    """Assemble a view from what the viewer knows: the whole board for the referee and a
    released end, the seat's knowledge for a seat, no mark for a spectator."""
    outcome = outcome_of(state)
    shown = referee or (released and outcome is not None)
    if shown:
        chars = cell_chars(state.board)
    elif viewer is None:
        chars = ["."] * len(NAMES)
    else:
        chars = seat_chars(state.board, viewer)
    seat = mover(state)
    return PhantomTicTacToeView(
        game=PhantomRules.name,
        viewer=viewer,
        referee=referee,
        seats=SEATS,
        to_move=seat,
        ply=ply(state.board),
        position=rows_text(chars),
        legal_moves=tuple(legal_moves(state)) if referee or (viewer is not None and viewer == seat) else (),
        outcome=outcome if shown else None,
        cells="".join(chars),
    )


def perft(state: PhantomState, depth: int) -> int:
    """Move sequences of exactly ``depth`` moves (failed attempts are moves too)."""
    if depth == 0:
        return 1
    moves = legal_moves(state)
    if depth == 1:
        return len(moves)
    return sum(perft(apply(state, move), depth - 1) for move in moves)


class PhantomRules:
    """Phantom tic-tac-toe behind the :class:`~ziggurat.rules.core.GameRules` contract."""

    name = "phantom-ttt"
    title = "Phantom tic-tac-toe"
    min_seats = SEATS
    max_seats = SEATS
    options: tuple[GameOption, ...] = ()
    hidden_information = True
    private_moves = True
    duplicate_deals = False  # nothing is dealt: secrets arise only in play, from the seats' own marks
    # No openings, although every game starts from the same empty board: the moves are private,
    # and an opening book is public text, so pre-played marks would tell each seat where the
    # other's marks are, which the game exists to hide.
    openings = False
    perft_ignores: frozenset[Termination] = frozenset()

    def option_examples(self, seats: int) -> list[dict[str, str]]:
        """The game has no options."""
        return [{}]

    def parse_config(self, options: Mapping[str, str], seats: int) -> PhantomConfig:
        """No options, two seats."""
        if seats != SEATS:
            raise InvalidConfigError(f"phantom-ttt is played by exactly 2 seats, not {seats}")
        if options:
            raise InvalidConfigError(f"phantom-ttt has no options, got {sorted(options)}")
        return PhantomConfig()

    def config_options(self, config: PhantomConfig) -> dict[str, str]:
        """No options."""
        return {}

    def new_game(self, config: PhantomConfig, seed: bytes) -> PhantomState:
        """The empty board: nothing is dealt, so the seed is not used."""
        return PhantomState(EMPTY)

    def legal_moves(self, state: PhantomState) -> list[str]:
        """See :func:`legal_moves`."""
        return legal_moves(state)

    def apply(self, state: PhantomState, move: str) -> PhantomState:
        """See :func:`apply`."""
        return apply(state, move)

    def canonical_move(self, state: PhantomState, move: str) -> str:
        """The notation is strict, so a legal move is its own canonical form."""
        apply(state, move)
        return move

    def apply_canonical(self, state: PhantomState, move: str) -> tuple[PhantomState, str]:
        """The state after ``move`` and ``move`` itself."""
        return apply(state, move), move

    def parse_move(self, text: str) -> int:
        """``"b2"`` is cell 4."""
        return parse_cell(text)

    def format_move(self, move: int) -> str:
        """Cell 4 is ``"b2"``."""
        return NAMES[move]

    def to_move(self, state: PhantomState) -> int | None:
        """The seat to move, None when over."""
        return mover(state)

    def outcome(self, state: PhantomState) -> Outcome | None:
        """See :func:`outcome_of`."""
        return outcome_of(state)

    def seats(self, state: PhantomState) -> int:
        """Always two."""
        return SEATS

    def parse_position(self, text: str, config: PhantomConfig) -> PhantomState:
        """Read a full position (``x.O/.o./X..``); InvalidPositionError if no game reaches it."""
        return PhantomState(parse_board(text))

    def format_position(self, state: PhantomState) -> str:
        """The full position text (a forfeit is the match's record, not the board's)."""
        return format_board(state.board)

    def random_move(self, state: PhantomState, rng: random.Random) -> str:
        """A uniformly random legal move."""
        moves = legal_moves(state)
        if not moves:
            raise GameOverError("the game is over")
        return moves[rng.randrange(len(moves))]

    def forfeit(self, state: PhantomState, seat: int, termination: Termination) -> PhantomState:
        """End the game with ``seat`` losing."""
        if outcome_of(state) is not None:
            raise GameOverError("the game is over")
        if seat not in (0, 1):
            raise ValueError(f"phantom-ttt has seats 0 and 1, not {seat}")
        return PhantomState(state.board, Outcome.loss_for(SEATS, seat, termination))

    def view(self, state: PhantomState, seat: int | None, *, released: bool = False) -> PhantomTicTacToeView:
        """What ``seat`` knows (None: a spectator, who sees no mark until the released end)."""
        if seat is not None and seat not in (0, 1):
            raise ValueError(f"seat {seat} does not exist")
        return build_view(state, seat, referee=False, released=released)

    def referee_view(self, state: PhantomState) -> PhantomTicTacToeView:
        """The whole board."""
        return build_view(state, None, referee=True, released=True)

    def twin(self, state: PhantomState, seat: int | None, rng: random.Random) -> PhantomState | None:
        """Another board ``seat`` cannot rule out: the opponent's unfound marks elsewhere, or
        other marks of the seat's found (for a spectator, any board with the same counts)."""
        board = spectator_twin(state.board, rng) if seat is None else seat_twin(state.board, seat, rng)
        return None if board is None else PhantomState(board, state.early_end)

    def perft(self, state: PhantomState, depth: int) -> int:
        """See :func:`perft`."""
        return perft(state, depth)


PHANTOM_TTT = PhantomRules()
"""The module instance the server registers under ``"phantom-ttt"``."""

if TYPE_CHECKING:
    _CONTRACT: GameRules[PhantomConfig, PhantomState, int] = PHANTOM_TTT
