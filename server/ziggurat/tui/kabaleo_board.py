"""The Kabaleo table as a person needs it: every stack in full, the hands, the viewer's secret
colour and its live score.

Why full stacks: what lies under a top piece decides what a cancellation uncovers, and bots
get the whole stack (``KabaleoView.stacks``, bottom to top), so people must too. The score
is the rules' own key (:func:`ziggurat.rules.kabaleo_model.score_key`), computed from the
public stacks for the viewer's own colour only.
"""

from __future__ import annotations

from rich.text import Text

from ziggurat.rules.kabaleo_model import score_key
from ziggurat.tui.i18n import t
from ziggurat.v1 import game_pb2

# Background colours for Kabaleo letters (text drawn black on them).
COLOURS = {
    "R": "red3",
    "Y": "yellow1",
    "G": "green3",
    "B": "dodger_blue2",
    "O": "dark_orange",
    "P": "hot_pink",
}
COLUMNS = 3  # stacks drawn in three columns: 24 stacks take 8 lines, which fits 80x24


def colour_letter(letter: str) -> Text:
    """One Kabaleo colour letter on its colour."""
    style = f"bold black on {COLOURS[letter]}" if letter in COLOURS else "bold"
    return Text(letter, style=style)


def stacks(view: game_pb2.GameView, columns: int = COLUMNS) -> Text:
    """Every stack in full, bottom (its base) to top, numbered as moves name them.

    Stacks run down the columns (1 to 8 in the first of three for 24 stacks); the last move's
    stack number is underlined.
    """
    board = list(view.kabaleo.stacks)
    rows = -(-len(board) // columns) if board else 0
    width = max((len(stack) for stack in board), default=1)
    last = view.kabaleo.last_stack
    out = Text(t("kabaleo.stacksNote") + "\n", style="dim")
    for row in range(rows):
        for column in range(columns):
            index = column * rows + row
            if index >= len(board):
                break
            number, stack = index + 1, board[index]
            if column:
                out.append("  ")
            out.append(f"{number:>2}", style="bold underline" if number == last else "dim")
            out.append(" ")
            for letter in stack:
                out.append_text(colour_letter(letter))
            out.append(" " * (width - len(stack)))
        out.rstrip()
        out.append("\n")
    out.rstrip()
    return out


def describe_key(key: tuple[int, int, int], *, short: bool = False) -> str:
    """``5 stacks, 3 covered, tallest covered 4``: the score key in words (``short``: ``tallest 4``)."""
    shown, covered, tallest = key
    return t(
        "kabaleo.scoreShort" if short else "kabaleo.score", count=shown, covered=covered, tallest=tallest
    )


def own_score(view: game_pb2.GameView, seat: int) -> Text:
    """The viewer's secret colour and its live score (nothing for a spectator or a hidden colour)."""
    objectives = list(view.kabaleo.objectives)
    if not seat or seat > len(objectives) or objectives[seat - 1] not in COLOURS:
        return Text()
    mine = objectives[seat - 1]
    out = Text(t("kabaleo.secret"), style="bold")
    out.append_text(colour_letter(mine))
    out.append(f" ({t('colour.' + mine)})\n" + t("kabaleo.yourScore"))
    out.append(describe_key(score_key(list(view.kabaleo.stacks), mine), short=True), style="bold")
    return out


def seat_scores(view: game_pb2.GameView) -> list[tuple[int, str, tuple[int, int, int]]]:
    """At the end: (seat, objective, score key) for each seat whose objective is revealed."""
    board = list(view.kabaleo.stacks)
    return [
        (seat, letter, score_key(board, letter))
        for seat, letter in enumerate(view.kabaleo.objectives, start=1)
        if letter in COLOURS
    ]
