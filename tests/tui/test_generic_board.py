"""The generic board (ziggurat.tui.generic_board): the position in notation and the legal moves
picked from the list with the keyboard, what a game the TUI has no board for gets. Tested on
Pylos through the notation view (Ctrl+N), against a real in-process server and its built-in
random bot: Tab reaches the moves, Down and Enter play one, the position text follows the game,
and Ctrl+N brings the drawn board back with the move box holding the keyboard again.
"""

from __future__ import annotations

from textual.widgets import Button, Input, OptionList, Select

from tests.servers import RunningServer
from tests.tui.test_i18n import screen_text
from tests.tui.test_tui import screen_of, shown_moves, snap, text_of, until
from ziggurat.tui import ZigguratApp
from ziggurat.tui import generic_board as board
from ziggurat.tui.forms import describe_match
from ziggurat.tui.game import GameScreen
from ziggurat.tui.lobby import LobbyScreen
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat_client import ZigguratClient

SIZE = (100, 30)


def position_shown(game: GameScreen) -> str:
    """The board's text below its title line (the position as drawn)."""
    return text_of(game, "#board").split("\n", 1)[1]


async def test_pylos_played_through_the_notation_view_with_the_keyboard(server: RunningServer) -> None:
    app = ZigguratApp(server=server.address, player_name="ann")
    async with app.run_test(size=SIZE) as pilot:
        lobby: LobbyScreen = await screen_of(pilot, LobbyScreen)
        await until(pilot, lambda: len(lobby.opponents) > 0)
        lobby.query_one("#opponents", Select).value = "builtin:random"
        lobby.query_one("#create-button", Button).press()
        game: GameScreen = await screen_of(pilot, GameScreen)
        await until(pilot, lambda: game.state.my_turn and bool(shown_moves(game)))
        moves = game.query_one("#moves", OptionList)
        assert not game.generic and not moves.can_focus, "the drawn board by default"

        await pilot.press("ctrl+n")
        assert game.generic
        assert text_of(game, "#board").startswith("Pylos: the position in notation\n")
        assert position_shown(game) == game.state.view.position if game.state.view else False
        assert "notation view" in game.message
        # Every legal move listed whole (a square's take-backs included), not folded as the board does.
        assert sorted(shown_moves(game)) == sorted(game.state.legal_moves)
        assert "Notation view" in screen_text(pilot), "Ctrl+N is offered in the footer"
        await pilot.press("tab")
        assert moves.has_focus, "Tab reaches the legal moves"
        snap(pilot, "tui-notation-pylos")

        def moves_of() -> list[str]:
            return shown_moves(game)

        played: list[str] = []
        for _ in range(5):
            await until(
                pilot, lambda: game.state.ended is not None or (game.state.my_turn and bool(moves_of()))
            )
            if game.state.ended is not None:
                break
            before = game.state.view.ply if game.state.view else 0
            shown_before = position_shown(game)
            assert moves.has_focus, "the focus stays on the moves between turns"
            await pilot.press("down")
            assert moves.highlighted is not None
            picked = str(moves.get_option_at_index(moves.highlighted).id)
            await pilot.press("enter")
            await until(
                pilot,
                lambda before=before: (  # type: ignore[misc]
                    game.state.ended is not None
                    or (game.state.view is not None and game.state.view.ply > before)
                ),
            )
            mine = game.state.history[before]
            assert (mine.seat, mine.move) == (game.state.my_seat, picked), "the highlighted move, as written"
            assert "refused" not in game.message, game.message
            played.append(mine.move)
            await until(pilot, lambda shown_before=shown_before: position_shown(game) != shown_before)  # type: ignore[misc]
            assert game.state.view is not None
            assert position_shown(game) == game.state.view.position
        assert len(played) == 5, played

        await pilot.press("ctrl+n")
        assert not game.generic and not moves.can_focus
        assert game.query_one("#move-input", Input).has_focus, "the move box has the keyboard again"
        assert not text_of(game, "#board").startswith("Pylos: the position")


async def test_a_game_without_a_board_here_is_named_and_gets_the_generic_board() -> None:
    assert board.game_name(game_pb2.GAME_PYLOS) == "Pylos"
    assert board.game_name(99) == "game 99"
    assert board.has_board(game_pb2.GAME_KABALEO) and not board.has_board(99)
    listed = match_pb2.Match(match_id="m1", config=game_pb2.GameConfig(game=99, seats=2))  # type: ignore[arg-type]
    assert " game 99 " in describe_match(listed), "the lobby's list names it too"
    async with ZigguratClient("127.0.0.1:1") as client:  # never called: the screen is not shown
        screen = GameScreen(client, "m1")
        assert not screen.generic, "before the game is known: nothing to choose"
        screen.state.config.game = 99  # type: ignore[assignment]
        assert screen.generic
    view = game_pb2.GameView(game=99, position="x?o/???/o.x", to_move=1)  # type: ignore[arg-type]
    assert board.draw(view).plain == "game 99: the position in notation\nx?o/???/o.x"
