"""The lobby and the game screens at the sizes people use: 80x24 (the smallest terminal)
and 120x40. Every control must be on screen and not covered by anything else; each game's
board must be drawn whole. Opponents are the server's built-in bots, seated from the
lobby's create form (AddBot), against a real server on a loopback port.
"""

from __future__ import annotations

from typing import Any

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, Checkbox, Input, Select, Static

from tests.servers import RunningServer
from tests.tui.test_tui import screen_of, shown_moves, snap, until
from ziggurat.tui import ZigguratApp
from ziggurat.tui.game import GameScreen
from ziggurat.tui.lobby import LobbyScreen

SIZES = [(80, 24), (120, 40)]


def assert_visible(screen: Screen[Any], widget: Widget) -> None:
    """Whole inside the terminal and inside every container around it (nothing scrolled or cut
    off), and the widget (or a part of it) is what shows at its centre (not covered)."""
    size = screen.app.size
    region = widget.region
    assert region.area > 0, f"{widget!r} has no room"
    assert Region(0, 0, size.width, size.height).contains_region(region), f"{widget!r} off-screen: {region}"
    for container in widget.ancestors:
        if isinstance(container, Widget) and not isinstance(container, Screen):
            assert container.region.contains_region(region), f"{widget!r} cut off by {container!r}"
    shown, _ = screen.get_widget_at(*region.center)
    assert shown is widget or widget in shown.ancestors, f"{widget!r} is covered by {shown!r}"


def assert_drawn_whole(widget: Static) -> None:
    """A drawing (a board) fits its box unwrapped: no line cut or folded, none cut at the bottom."""
    lines = str(getattr(widget.content, "plain", widget.content)).splitlines()
    width = max((len(line) for line in lines), default=0)
    inner = widget.content_region
    assert width <= inner.width and len(lines) <= inner.height, (width, len(lines), inner)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_every_lobby_control_is_on_screen(server: RunningServer, size: tuple[int, int]) -> None:
    app = ZigguratApp(server=server.address, player_name="human")
    async with app.run_test(size=size) as pilot:
        lobby: LobbyScreen = await screen_of(pilot, LobbyScreen)
        await until(pilot, lambda: len(lobby.opponents) == 4)  # the built-in bots are listed
        for game in ("kabaleo", "pylos"):  # the form shows the chosen game's fields only
            lobby.query_one("#game", Select).value = game
            await pilot.pause()
            controls = [lobby.matches_list, *lobby.query(Input), *lobby.query(Select), *lobby.query(Checkbox)]
            controls += list(lobby.query(Button))
            shown = [
                c for c in controls if all(w.display for w in (c, *c.ancestors) if isinstance(w, Widget))
            ]
            assert {c.id for c in shown} >= {
                "create-button",
                "add-bot",
                "opponents",
                "bot",
                "game",
                "timeout",
            }
            assert {c.id for c in shown} >= (
                {"seats", "kabaleo-deal", "kabaleo-colours"}
                if game == "kabaleo"
                else {"pylos-variant", "pylos-max-moves"}
            )
            for control in shown:
                assert_visible(lobby, control)
        snap(pilot, f"lobby-{size[0]}x{size[1]}")


async def play_until_my_turn(pilot: Pilot[Any], game: str, seats: str, size: tuple[int, int]) -> GameScreen:
    lobby: LobbyScreen = await screen_of(pilot, LobbyScreen)
    await until(pilot, lambda: len(lobby.opponents) == 4)
    lobby.query_one("#game", Select).value = game
    lobby.query_one("#seats", Input).value = seats
    await pilot.pause()
    lobby.query_one("#opponents", Select).value = "builtin:random"
    lobby.query_one("#create-button", Button).press()
    screen: GameScreen = await screen_of(pilot, GameScreen)
    await until(pilot, lambda: screen.state.my_turn and bool(shown_moves(screen)))
    return screen


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize(("game", "seats"), [("pylos", "2"), ("kabaleo", "4")])
async def test_game_screens_fit(server: RunningServer, size: tuple[int, int], game: str, seats: str) -> None:
    app = ZigguratApp(server=server.address, player_name="human")
    async with app.run_test(size=size) as pilot:
        screen = await play_until_my_turn(pilot, game, seats, size)
        # the turn's state is in; let the screen lay out what it now shows before measuring
        # (a check in between saw the board of the previous layout, wider than its column)
        await pilot.pause()
        await pilot.pause()
        assert (
            len([s for s in screen.state.seats.values() if s.player_name.endswith("(bot)")]) == int(seats) - 1
        )
        snap(pilot, f"{game}-{size[0]}x{size[1]}")
        for selector in ("#title", "#board", "#facts", "#status", "#moves", "#history-pane", "#move-input"):
            assert_visible(screen, screen.query_one(selector))
        assert_drawn_whole(screen.query_one("#board", Static))
        # The end (resigned): the result with its score lines is on screen too.
        await pilot.press("ctrl+r", "y")
        await until(pilot, lambda: screen.state.ended is not None)
        await pilot.pause()
        snap(pilot, f"{game}-end-{size[0]}x{size[1]}")
        for selector in ("#board", "#facts", "#status", "#result"):
            assert_visible(screen, screen.query_one(selector))
        assert_drawn_whole(screen.query_one("#board", Static))
