"""A Pylos square and its recovery, played through the terminal UI the way a person does: the
ball that completes the square is typed, then the balls to take back are picked one at a time
from the ones the legal moves allow (not from a flat list of every combination); the board
shows the square, the last move and both reserves. The opponent is a scripted seat, so the
square forms on a known move."""

from __future__ import annotations

import asyncio
import random

from rich.text import Text
from textual.widgets import OptionList, Static

from tests.servers import RunningServer
from tests.tui.test_tui import create_and_join, shown_moves, snap, text_of, type_move, until
from ziggurat.tui import ZigguratApp
from ziggurat.tui.game import GameScreen
from ziggurat.tui.pylos_board import LAST_STYLE, PICK_STYLE, SQUARE_STYLE
from ziggurat_client import ZigguratClient
from ziggurat_client.bot import Turn

MINE = ["1c1", "1a1", "1b1", "1a2"]  # then 1b2 completes the square 1a1-1b2
THEIRS = ["1d4", "1b4", "1d2", "1d3", "1c3"]  # never a square, never in the way


def styled(board: Static, style: str) -> list[str]:
    """The characters of the board drawn in ``style``."""
    content = board.content
    assert isinstance(content, Text)
    return [content.plain[span.start : span.end] for span in content.spans if str(span.style) == style]


async def test_a_square_is_recovered_one_ball_at_a_time(server: RunningServer) -> None:
    app = ZigguratApp(server=server.address, player_name="human")
    release = asyncio.Event()
    script = iter(THEIRS)
    rng = random.Random(4)

    async def scripted(turn: Turn) -> str:
        move = next(script, None)
        if move is None or any(played.startswith("1b2") for played in turn.history):
            await release.wait()  # the square was played: hold the board still while the test reads it
            return rng.choice(list(turn.legal_moves))
        return move

    async with app.run_test(size=(80, 24)) as pilot, ZigguratClient(server.address) as bots:
        game = await create_and_join(pilot, "pylos")
        handle = await bots.join(game.state.match_id, "scripted")
        bot = asyncio.create_task(bots.play(handle, scripted))
        me = "L" if game.state.my_seat == 1 else "D"

        async def my_turn() -> None:
            await until(pilot, lambda: game.state.my_turn and bool(shown_moves(game)))

        for move in MINE:
            await my_turn()
            await type_move(pilot, game, move)
            await until(pilot, lambda move=move: any(m.move == move for m in game.state.history))  # type: ignore[misc]
        await my_turn()
        # The list offers 1b2 once, marked as a move that takes balls back (not 5+ spellings).
        assert shown_moves(game).count("1b2") == 1
        assert sum(move.startswith("1b2x") for move in game.state.legal_moves) > 5
        await type_move(pilot, game, "1b2")
        await until(pilot, lambda: game.recovery is not None)
        assert "completes a square" in game.message and game.state.my_turn  # nothing sent yet
        # Esc drops the half-chosen move (and stays in the game); typing 1b2 again starts over.
        await pilot.press("escape")
        await until(pilot, lambda: game.recovery is None)
        assert pilot.app.screen is game
        await type_move(pilot, game, "1b2")
        await until(pilot, lambda: game.recovery is not None)
        assert shown_moves(game) == ["1a1", "1a2", "1b1", "1b2", "1c1"]  # own free balls, 1b2 counts
        assert "take back" in game.query_one("#moves", OptionList).border_title
        board = game.query_one("#board", Static)
        assert sorted(styled(board, PICK_STYLE)) == [me] * 5  # 1b2 is drawn, not yet sent
        assert game.state.view is not None and game.state.view.pylos.levels[0][5] == "."
        snap(pilot, "pylos-recovery")
        await type_move(pilot, game, "1c1")
        await until(pilot, lambda: shown_moves(game)[-1] == "done")
        assert shown_moves(game) == ["1a1", "1a2", "1b1", "1b2", "done"]
        snap(pilot, "pylos-recovery-second")
        await type_move(pilot, game, "done")
        await until(pilot, lambda: game.state.history[-1].move.startswith("1b2") or "refused" in game.message)
        assert game.state.history[-1].move == "1b2x1c1" and "refused" not in game.message
        # The square stands (1c1 came back, not one of its balls): drawn and named; the last
        # move is marked and the place of the ball taken back shows "*"; reserves counted.
        await until(pilot, lambda: bool(styled(board, LAST_STYLE)))
        assert styled(board, LAST_STYLE) == [me]
        assert styled(board, SQUARE_STYLE[me]) == [me] * 3  # 1b2 is drawn as the last move
        assert "*" in text_of(game, "#board")
        facts = text_of(game, "#facts")
        assert f"Squares: {me} 1a1-1b2" in facts
        view = game.state.view
        assert view is not None
        mine, theirs = 15 - 5 + 1, 15 - sum(m.seat != game.state.my_seat for m in game.state.history)
        light, dark = (mine, theirs) if me == "L" else (theirs, mine)  # mine: 5 played, 1 taken back
        assert (view.pylos.light_reserve, view.pylos.dark_reserve) == (light, dark)
        assert f"Reserve balls: L {light}  D {dark}" in facts
        snap(pilot, "pylos-after-recovery")
        release.set()
        await pilot.press("ctrl+r", "y")
        await until(pilot, lambda: game.state.ended is not None)
        await asyncio.wait_for(bot, 10)


async def test_two_balls_taken_back_are_sent_in_the_servers_spelling(server: RunningServer) -> None:
    app = ZigguratApp(server=server.address, player_name="human")
    script = iter(THEIRS)
    rng = random.Random(5)

    def scripted(turn: Turn) -> str:
        return next(script, None) or rng.choice(list(turn.legal_moves))

    async with app.run_test(size=(80, 24)) as pilot, ZigguratClient(server.address) as bots:
        game: GameScreen = await create_and_join(pilot, "pylos")
        handle = await bots.join(game.state.match_id, "scripted")
        bot = asyncio.create_task(bots.play(handle, scripted))
        for move in [*MINE, "1b2"]:
            await until(pilot, lambda: game.state.my_turn and bool(shown_moves(game)))
            await type_move(pilot, game, move)
        await until(pilot, lambda: game.recovery is not None)
        await type_move(pilot, game, "1b1")  # picked in the "wrong" order: 1b1 before 1a2
        await until(pilot, lambda: "done" in shown_moves(game))
        await type_move(pilot, game, "x1a2")
        await until(pilot, lambda: any(m.move.startswith("1b2") for m in game.state.history))
        played = [m.move for m in game.state.history if m.seat == game.state.my_seat]
        assert played == [*MINE, "1b2x1a2x1b1"]  # same level: plain string order
        assert "refused" not in game.message
        await pilot.press("ctrl+r", "y")
        await until(pilot, lambda: game.state.ended is not None)
        await asyncio.wait_for(bot, 10)
