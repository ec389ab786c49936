"""The Pylos pyramid as a person reads it: levels, squares of one colour, the last move marked,
and the balls a recovery may take back.

Why here and not in the rules engine: these are readings of the public view (the four level
strings the server sends), for drawing only; what is legal is still decided by the server,
whose legal-move list the guided recovery follows (:mod:`ziggurat.tui.recovery`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.text import Text

from ziggurat.tui.i18n import t
from ziggurat.v1 import game_pb2

LEVEL_WIDTH = 14  # columns per drawn level: "Level 1" and a 4x4 grid with labels, plus a gap
BALL_STYLE = {"L": "bold black on grey93", "D": "bold white on dark_red"}
SQUARE_STYLE = {"L": "bold black on cyan3", "D": "bold white on dark_cyan"}
LAST_STYLE = "bold black on bright_yellow"
PICK_STYLE = "bold black on bright_green"
EMPTY_LEVELS = ("." * 16, "." * 9, "." * 4, ".")


def place_name(level: int, column: int, row: int) -> str:
    """``1a1`` for level 1, column a, row 1 (0-based column and row in)."""
    return f"{level}{'abcd'[column]}{row + 1}"


@dataclass(frozen=True, slots=True)
class Square:
    """Four balls of one colour filling a 2x2 block; named by its corner with the lowest column and row."""

    colour: str
    level: int
    column: int
    row: int

    @property
    def corner(self) -> str:
        """``1a1``: the block's first place."""
        return place_name(self.level, self.column, self.row)

    @property
    def places(self) -> tuple[str, ...]:
        """The four places of the block."""
        return tuple(
            place_name(self.level, self.column + dc, self.row + dr) for dr in (0, 1) for dc in (0, 1)
        )


def levels_of(view: game_pb2.GameView) -> list[str]:
    """The four level strings (the empty pyramid before the game starts)."""
    return list(view.pylos.levels) or list(EMPTY_LEVELS)


def squares(levels: Sequence[str]) -> list[Square]:
    """Every 2x2 block of levels 1 to 3 filled with one colour (a mixed square gives nothing)."""
    found = []
    for level in range(1, 4):
        size, cells = 5 - level, levels[level - 1]
        for row in range(size - 1):
            for column in range(size - 1):
                block = {cells[(row + dr) * size + column + dc] for dr in (0, 1) for dc in (0, 1)}
                if len(block) == 1 and block <= {"L", "D"}:
                    found.append(Square(block.pop(), level, column, row))
    return found


def move_places(move: str) -> tuple[str, str, tuple[str, ...]]:
    """A move's parts: (raised from or "", placed on, recovered balls): ``1a1-2b2x1c1`` →
    (``1a1``, ``2b2``, (``1c1``,))."""
    head, *taken = move.split("x")
    source, _, target = head.rpartition("-")
    return source, target, tuple(taken)


def draw(
    view: game_pb2.GameView,
    *,
    last_move: str = "",
    picks: Iterable[str] = (),
    pending: tuple[str, str] | None = None,
    columns: int = 2,
) -> Text:
    """The levels in a grid ``columns`` wide (2: two rows of two levels, to fit 80 columns).

    ``L``/``D`` are balls (drawn in their square's colours when part of a square of one
    colour); ``·`` an empty place a ball may go; blank a place not yet supported. The last
    move's ball is on yellow, the place it was raised from ``◦`` and a recovered ball's
    place ``*``; ``picks`` (balls a recovery may take back) are on green. ``pending`` is
    (move, colour) of a placement or raise chosen but not yet sent (its recovery is being
    picked): the ball is drawn where it goes.
    """
    levels = levels_of(view)
    if pending is not None:
        source, target = move_places(pending[0])[:2]
        levels = _with_ball(_with_ball(levels, source, ".") if source else levels, target, pending[1])
    marked = {place for square in squares(levels) for place in square.places}
    source, target, taken = move_places(last_move) if last_move else ("", "", ())
    marks = {place: "◦" for place in ([source] if source else [])} | {place: "*" for place in taken}
    chosen = set(picks)
    blocks = [_level(number, levels, marked, target, marks, chosen) for number in range(1, 5)]
    out = Text()
    for start in range(0, 4, columns):
        group = blocks[start : start + columns]
        height = max(len(block) for block in group)
        for row in range(height):
            for block in group:
                line = block[row] if row < len(block) else Text("")
                out.append_text(line)
                out.append(" " * (LEVEL_WIDTH - line.cell_len))
            out.rstrip()
            out.append("\n")
    out.rstrip()
    return out


def _level(  # noqa: PLR0917 - one drawing's inputs, all positional at its one call
    number: int,
    levels: Sequence[str],
    in_square: set[str],
    target: str,
    marks: dict[str, str],
    picks: set[str],
) -> list[Text]:
    size = 5 - number
    lines = [
        Text(t("pylos.level", level=number), style="bold"),
        Text("   " + " ".join("abcd"[:size]), style="dim"),
    ]
    cells = levels[number - 1]
    for r in range(size):
        line = Text(f"{r + 1:>2} ", style="dim")
        for c in range(size):
            if c:
                line.append(" ")
            place, ball = place_name(number, c, r), cells[r * size + c]
            if ball in BALL_STYLE:
                style = BALL_STYLE[ball]
                if place in picks:
                    style = PICK_STYLE
                elif place == target:
                    style = LAST_STYLE
                elif place in in_square:
                    style = SQUARE_STYLE[ball]
                line.append(ball, style=style)
            elif place in marks:
                line.append(marks[place], style="bold yellow")
            else:
                line.append("·" if _supported(levels, number, c, r) else " ", style="dim")
        lines.append(line)
    return lines


def _with_ball(levels: list[str], place: str, colour: str) -> list[str]:
    """The levels with one more ball drawn (a move not yet sent); a place that is not one, unchanged."""
    try:
        level, column, row = int(place[0]), "abcd".index(place[1]), int(place[2:]) - 1
        size = 5 - level
        if not (1 <= level <= 4 and 0 <= row < size and column < size):
            return levels
    except (ValueError, IndexError):
        return levels
    cells = levels[level - 1]
    index = row * size + column
    return [*levels[: level - 1], cells[:index] + colour + cells[index + 1 :], *levels[level:]]


def _supported(levels: Sequence[str], number: int, c: int, r: int) -> bool:
    if number == 1:
        return True
    below, size = levels[number - 2], 6 - number
    return all(below[(r + dr) * size + c + dc] != "." for dr in (0, 1) for dc in (0, 1))


def summary(view: game_pb2.GameView) -> Text:
    """The reserve balls (still in hand) of both sides and the squares of one colour on the board."""
    out = Text()
    out.append(t("pylos.reserve"), style="bold")
    out.append("L", style=BALL_STYLE["L"])
    out.append(f" {view.pylos.light_reserve}  ")
    out.append("D", style=BALL_STYLE["D"])
    out.append(f" {view.pylos.dark_reserve}")
    found = squares(levels_of(view))
    out.append("\n" + t("pylos.marks"), style="bold")
    out.append("L", style=LAST_STYLE)
    out.append(f" {t('pylos.lastMove')}  ")
    out.append("L", style=SQUARE_STYLE["L"])
    out.append("D", style=SQUARE_STYLE["D"])
    out.append(f" {t('pylos.square')}  ")
    out.append("L", style=PICK_STYLE)
    out.append(f" {t('pylos.takeBack')}")
    out.append("\n" + t("pylos.squares"), style="bold")
    if not found:
        out.append(t("pylos.none"), style="dim")
    for index, square in enumerate(found):
        if index:
            out.append(", ")
        out.append(square.colour, style=SQUARE_STYLE[square.colour])
        out.append(f" {square.places[0]}-{square.places[-1]}")
    return out
