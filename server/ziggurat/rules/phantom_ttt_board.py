"""Phantom tic-tac-toe boards as bit masks: cells, lines, position text, and what a seat can know.

A board is four 9-bit masks (bit ``i`` is cell ``i``; cell ``a1`` is 0, ``b1`` 1, ..., ``c3`` 8):
``marks[s]`` the cells seat ``s`` holds and ``seen[s]`` the opponent's cells seat ``s`` has tried
and so knows. Everything else (the seat to move, the ply, whether the game is over) follows
from those four masks, which is why the position text is the board alone
(``docs/phantom-tic-tac-toe.md``).

The knowledge functions answer "which boards could this be, for this viewer?" from what the
viewer observes (its own marks, what it has tried, the public counts), never from the board it
cannot see: the view shows what all of those boards agree on, and the twin is another of them.
"""

from __future__ import annotations

import functools
import itertools
import random

from ziggurat.rules.core import InvalidPositionError

CELLS = 9
ALL = (1 << CELLS) - 1
FILES = "abc"
NAMES = tuple(f"{FILES[i % 3]}{i // 3 + 1}" for i in range(CELLS))
"""Cell names in index order: a1, b1, c1, a2, ..., c3."""
LETTERS = ("x", "o")  # seat 0 marks x, seat 1 marks o
LINES = tuple(
    sum(1 << c for c in line)
    for line in (
        (0, 1, 2),
        (3, 4, 5),
        (6, 7, 8),
        (0, 3, 6),
        (1, 4, 7),
        (2, 5, 8),
        (0, 4, 8),
        (2, 4, 6),
    )
)
SYMMETRIES = tuple(
    tuple(perm)
    for perm in (
        (0, 1, 2, 3, 4, 5, 6, 7, 8),
        (2, 1, 0, 5, 4, 3, 8, 7, 6),
        (6, 7, 8, 3, 4, 5, 0, 1, 2),
        (0, 3, 6, 1, 4, 7, 2, 5, 8),
        (8, 5, 2, 7, 4, 1, 6, 3, 0),
        (6, 3, 0, 7, 4, 1, 8, 5, 2),
        (2, 5, 8, 1, 4, 7, 0, 3, 6),
        (8, 7, 6, 5, 4, 3, 2, 1, 0),
    )
)
"""The eight symmetries of the square as cell permutations (the first is the identity)."""

Board = tuple[int, int, int, int]
"""``(marks of seat 0, marks of seat 1, seen by seat 0, seen by seat 1)``."""

EMPTY: Board = (0, 0, 0, 0)


def cells_of(mask: int) -> list[int]:
    """The cell indices set in ``mask``, ascending."""
    return [c for c in range(CELLS) if mask >> c & 1]


def lines_of(mask: int) -> list[int]:
    """The three-in-a-row lines wholly inside ``mask``."""
    return [line for line in LINES if mask & line == line]


def to_move(board: Board) -> int:
    """The seat whose turn it is on a board that is not over: a turn ends only with a new mark."""
    return 0 if board[0].bit_count() == board[1].bit_count() else 1


def ply(board: Board) -> int:
    """Moves played: every mark and every failed attempt (each one showed a new cell)."""
    return sum(mask.bit_count() for mask in board)


def winner(board: Board) -> int | None:
    """The seat with three in a row, if any (a valid board has at most one)."""
    for seat in (0, 1):
        if lines_of(board[seat]):
            return seat
    return None


def board_over(board: Board) -> bool:
    """Three in a row or a full board."""
    return winner(board) is not None or board[0] | board[1] == ALL


def valid(board: Board) -> bool:
    """Whether a game could reach ``board``: marks alternate from x, marks do not overlap, a seat
    has seen only the opponent's cells, nothing is played after three in a row (every line of the
    winner shares the last mark, which the loser never saw), and a full board ends on x's mark,
    which o never saw."""
    m0, m1, s0, s1 = board
    if m0 & m1 or s0 & ~m1 or s1 & ~m0 or m0.bit_count() - m1.bit_count() not in (0, 1):
        return False
    lines0, lines1 = lines_of(m0), lines_of(m1)
    if lines0 and lines1:
        return False
    for lines, count_ok, loser_seen in (
        (lines0, m0.bit_count() > m1.bit_count(), s1),
        (lines1, m0.bit_count() == m1.bit_count(), s0),
    ):
        if lines:
            common = functools.reduce(int.__and__, lines)
            if not count_ok or not common & ~loser_seen:
                return False
    full_draw = not lines0 and not lines1 and m0 | m1 == ALL
    return not full_draw or bool(m0 & ~s1)


def cell_chars(board: Board) -> list[str]:
    """Each cell's character: ``.``, ``x``/``o``, upper case once the opponent has tried it."""
    m0, m1, s0, s1 = board
    chars = []
    for c in range(CELLS):
        bit = 1 << c
        if m0 & bit:
            chars.append("X" if s1 & bit else "x")
        elif m1 & bit:
            chars.append("O" if s0 & bit else "o")
        else:
            chars.append(".")
    return chars


def rows_text(chars: list[str] | str) -> str:
    """Cell characters (index order) as the position text: row 3 first, rows joined by ``/``."""
    return "/".join("".join(chars[row * 3 : row * 3 + 3]) for row in (2, 1, 0))


def format_board(board: Board) -> str:
    """The full position text, e.g. ``x.O/.o./X..``."""
    return rows_text(cell_chars(board))


def parse_board(text: str) -> Board:
    """Read a full position text; InvalidPositionError if it is not one a game can reach."""
    rows = text.split("/")
    if len(rows) != 3 or any(len(row) != 3 or set(row) - set(".xXoO") for row in rows):
        raise InvalidPositionError(f"{text!r} is not three rows of three of '.xXoO' joined by '/'")
    chars = "".join(rows[2] + rows[1] + rows[0])
    m0 = m1 = s0 = s1 = 0
    for c, char in enumerate(chars):
        bit = 1 << c
        if char in "xX":
            m0 |= bit
            s1 |= bit if char == "X" else 0
        elif char in "oO":
            m1 |= bit
            s0 |= bit if char == "O" else 0
    board = (m0, m1, s0, s1)
    if not valid(board):
        raise InvalidPositionError(f"no game reaches {text!r}")
    return board


@functools.lru_cache(maxsize=8192)
def seat_candidates(
    seat: int, own: int, seen: int, *, opponent_marks: int, tried: int, over: bool
) -> tuple[Board, ...]:
    """Every board seat ``seat`` cannot rule out, from what it observes alone.

    ``own`` and ``seen`` are its marks and the opponent cells it has tried; ``opponent_marks`` and
    ``tried`` (the opponent's failed attempts) are counts it reads off the public ply and turn;
    ``over`` is public too. The opponent's other marks may be on any cell the seat has not seen
    taken, and the opponent may have tried any ``tried`` of the seat's marks.
    """
    free = cells_of(ALL & ~own & ~seen)
    unseen = opponent_marks - seen.bit_count()
    found = []
    for hidden in itertools.combinations(free, unseen):
        theirs = seen | sum(1 << c for c in hidden)
        for probed in itertools.combinations(cells_of(own), tried):
            found_by = sum(1 << c for c in probed)
            board = (own, theirs, seen, found_by) if seat == 0 else (theirs, own, found_by, seen)
            if valid(board) and board_over(board) == over:
                found.append(board)
    return tuple(found)


def candidates_for(board: Board, seat: int) -> tuple[Board, ...]:
    """:func:`seat_candidates` for ``seat`` on ``board`` (which is always one of them)."""
    other = 1 - seat
    return seat_candidates(
        seat,
        board[seat],
        board[2 + seat],
        opponent_marks=board[other].bit_count(),
        tried=board[2 + other].bit_count(),
        over=board_over(board),
    )


def seat_chars(board: Board, seat: int) -> list[str]:
    """What ``seat`` knows, cell by cell: the character every board it cannot rule out agrees on,
    else its own mark in lower case (it does not know whether it was found) or ``.``."""
    possible = [cell_chars(b) for b in candidates_for(board, seat)]
    own = LETTERS[seat]
    chars = []
    for c in range(CELLS):
        agreed = {p[c] for p in possible}
        if len(agreed) == 1:
            chars.append(agreed.pop())
        else:
            chars.append(own if board[seat] >> c & 1 else ".")
    return chars


def seat_twin(board: Board, seat: int, rng: random.Random) -> Board | None:
    """Another board ``seat`` cannot rule out, drawn with ``rng``; None when there is none."""
    others = [b for b in candidates_for(board, seat) if b != board]
    return rng.choice(others) if others else None


def spectator_twin(board: Board, rng: random.Random) -> Board | None:
    """Another board with the same public counts and end, for a spectator who sees no mark:
    random boards first, then the board's mirror images; None when there is none."""
    counts = [mask.bit_count() for mask in board]
    over = board_over(board)
    for _ in range(200):
        cells = rng.sample(range(CELLS), counts[0] + counts[1])
        xs, os = cells[: counts[0]], cells[counts[0] :]
        candidate: Board = (
            _mask(xs),
            _mask(os),
            _mask(rng.sample(os, counts[2])),
            _mask(rng.sample(xs, counts[3])),
        )
        if candidate != board and valid(candidate) and board_over(candidate) == over:
            return candidate
    for perm in SYMMETRIES[1:]:
        image: Board = (
            _permute(board[0], perm),
            _permute(board[1], perm),
            _permute(board[2], perm),
            _permute(board[3], perm),
        )
        if image != board:
            return image
    return None


def _mask(cells: list[int]) -> int:
    return sum(1 << c for c in cells)


def _permute(mask: int, perm: tuple[int, ...]) -> int:
    return _mask([perm[c] for c in cells_of(mask)])
