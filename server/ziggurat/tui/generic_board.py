"""The generic board: any game as the server writes it, for a game the TUI has no board for.

Why it exists: a game added to the server (registered in the rules registry) is playable here
before anyone draws it. It reads only the fields every ``GameView`` has: the position text as
this viewer may see it (hidden parts are ``?``) and the game's enum value; the legal moves are
the screen's list, as for every game. A player may also choose it for Pylos and Kabaleo (Ctrl+N,
docs/tui.md): the notation reads better than a picture to a screen reader, and it is how this
board is tested while every game the server hosts has a drawing.
"""

from __future__ import annotations

from rich.text import Text

from ziggurat.rules.registry import GAMES
from ziggurat.tui.i18n import t
from ziggurat.v1 import game_pb2
from ziggurat.wire.codec import GAME_NAMES

DRAWN = frozenset({game_pb2.GAME_PYLOS, game_pb2.GAME_KABALEO})
"""The games this TUI draws (pylos_board, kabaleo_board); every other one gets this board."""


def has_board(game: int) -> bool:
    """Whether the TUI draws ``game`` (a ``Game`` enum value) on a board of its own."""
    return game in DRAWN


def game_name(game: int) -> str:
    """A game's title as its rules declare it (``GAME_PHANTOM_TIC_TAC_TOE``: "Phantom tic-tac-toe"),
    its enum's words for a game this build's registry lacks, or "game 7" for a value this build's
    generated code does not know."""
    rules = GAMES.get(GAME_NAMES.get(game, ""))
    if rules is not None:
        return rules.title
    try:
        name = game_pb2.Game.Name(game)  # type: ignore[arg-type]
    except ValueError:
        return t("game.numbered", n=game)
    return name.removeprefix("GAME_").replace("_", " ").lower().capitalize()


def draw(view: game_pb2.GameView) -> Text:
    """The game's name, then its position text as sent (wrapped by the pane, never cut)."""
    out = Text()
    out.append(t("game.positionTitle", game=game_name(view.game)), style="bold")
    out.append("\n")
    out.append(view.position or "—")
    return out
