"""Issue 22, as a person at the keyboard sees it, against a real server: the focused control
stands out on every screen (not by colour 234 vs 235), the create form shows only the chosen
game's fields, a spectator is not offered Resign, seat states read as words, and Ctrl-C
ends the program with 130 (tests/cli/test_tui_interrupt.py does it in a real terminal)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from rich.color import Color
from rich.style import Style
from textual.geometry import Region
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, Input, Select
from textual.widgets._select import SelectCurrent

from tests.servers import RunningServer, pylos_config
from tests.tui.test_tui import screen_of, shown_moves, text_of, until
from ziggurat.tui import ZigguratApp
from ziggurat.tui.discovery import ServerInfo
from ziggurat.tui.game import ConfirmResign, GameScreen
from ziggurat.tui.lobby import LobbyScreen
from ziggurat.tui.servers import ServerScreen
from ziggurat_client import ZigguratClient

SIZE = (80, 24)
# Two colours a person tells apart at a glance differ by this much in some RGB channel; the
# 5% tint textual gives a focused compact field (colour 234 vs 235) differs by about 10.
VISIBLE = 40


@dataclass(frozen=True)
class Look:
    """How the first line of a control is drawn (its border's, if it has one): its characters,
    and the colours and reverse flag most of its cells have (one cell, such as a text
    cursor, does not count)."""

    text: str
    foreground: tuple[int, int, int]
    background: tuple[int, int, int]
    reverse: bool


def _rgb(color: Color | None, default: tuple[int, int, int]) -> tuple[int, int, int]:
    if color is None or color.is_default:
        return default
    triplet = color.get_truecolor()
    return (triplet.red, triplet.green, triplet.blue)


def look(widget: Widget) -> Look:
    shown = widget.query_one(SelectCurrent) if isinstance(widget, Select) else widget
    cells: list[Style] = []
    text = ""
    for segment in shown.render_lines(Region(0, 0, shown.outer_size.width, 1))[0]:
        style = segment.style or Style()
        cells += [style] * len(segment.text)
        text += segment.text
    foreground = Counter(_rgb(s.color, (255, 255, 255)) for s in cells).most_common(1)[0][0]
    background = Counter(_rgb(s.bgcolor, (0, 0, 0)) for s in cells).most_common(1)[0][0]
    reverse = Counter(bool(s.reverse) for s in cells).most_common(1)[0][0]
    return Look(text, foreground, background, reverse)


def differs_visibly(focused: Look, blurred: Look) -> bool:
    def far(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
        return max(abs(x - y) for x, y in zip(a, b, strict=True)) >= VISIBLE

    return (
        focused.text != blurred.text  # a border drawn with other characters
        or focused.reverse != blurred.reverse
        or far(focused.foreground, blurred.foreground)
        or far(focused.background, blurred.background)
    )


async def assert_focus_shows(pilot: Pilot[Any], screen: Screen[Any], expected: set[str]) -> None:
    """Every control that can take the focus looks clearly different with it than without."""
    chain = [widget for widget in screen.focus_chain if widget.display]
    assert {widget.id for widget in chain} >= expected, [widget.id for widget in chain]
    for index, widget in enumerate(chain):
        widget.focus()
        await pilot.pause()
        focused = look(widget)
        chain[index - 1].focus()  # another control takes the focus
        await pilot.pause()
        blurred = look(widget)
        assert differs_visibly(focused, blurred), (widget.id, focused, blurred)


async def test_the_focus_shows_on_the_server_chooser() -> None:
    async def found() -> list[ServerInfo]:
        return [ServerInfo("lan", "127.0.0.1", 9, "1", ("pylos",), False)]

    app = ZigguratApp(discover_servers=found)
    async with app.run_test(size=SIZE) as pilot:
        chooser: ServerScreen = await screen_of(pilot, ServerScreen)
        await until(pilot, lambda: chooser.found != [])
        await assert_focus_shows(pilot, chooser, {"servers", "address"})


@pytest.mark.slow
async def test_the_create_form_shows_the_focus_and_the_chosen_game_s_fields_only(
    server: RunningServer,
) -> None:
    app = ZigguratApp(server=server.address, player_name="human")
    async with app.run_test(size=SIZE) as pilot:
        lobby: LobbyScreen = await screen_of(pilot, LobbyScreen)
        await until(pilot, lambda: len(lobby.opponents) == 4)

        def shown_fields() -> set[str]:
            return {
                str(widget.id)
                for widget in lobby.query("#create Input, #create Select, #create Checkbox")
                if widget.region.area > 0  # a hidden row leaves its field no room
            }

        common = {"game", "per-move", "base", "increment", "timeout", "opponents"}
        pylos = {"pylos-variant", "pylos-max-moves"}
        assert shown_fields() == common | pylos
        await assert_focus_shows(
            pilot, lobby, {"matches", "game", *pylos, "per-move", "create-button", "add-bot"}
        )
        # Kabaleo chosen with the keyboard: its fields only, and the seat count (Pylos always has 2).
        lobby.query_one("#game", Select).focus()
        await pilot.press("enter", "down", "enter")
        await until(pilot, lambda: lobby.query_one("#game", Select).value == "kabaleo")
        await pilot.pause()
        kabaleo = {"seats", "kabaleo-deal", "kabaleo-last-stack", "kabaleo-colours"}
        assert shown_fields() == common | kabaleo
        await assert_focus_shows(pilot, lobby, kabaleo)
        # A game with no options and one seat count: nothing but the common fields.
        lobby.query_one("#game", Select).value = "phantom-ttt"
        await pilot.pause()
        assert shown_fields() == common
        lobby.query_one("#game", Select).value = "pylos"
        await pilot.pause()
        assert shown_fields() == common | pylos


async def test_the_focus_shows_in_a_game_and_in_the_resign_question(server: RunningServer) -> None:
    app = ZigguratApp(server=server.address, player_name="human")
    async with app.run_test(size=SIZE) as pilot:
        lobby: LobbyScreen = await screen_of(pilot, LobbyScreen)
        await until(pilot, lambda: len(lobby.opponents) == 4)
        lobby.query_one("#opponents", Select).value = "builtin:random"
        lobby.query_one("#create-button", Button).press()
        game: GameScreen = await screen_of(pilot, GameScreen)
        await until(pilot, lambda: game.state.my_turn and bool(shown_moves(game)))
        await assert_focus_shows(pilot, game, {"move-input"})
        assert "Resign" in str(app.active_bindings.get("ctrl+r").binding.description)  # type: ignore[union-attr]
        await pilot.press("ctrl+r")
        question: ConfirmResign = await screen_of(pilot, ConfirmResign)
        await assert_focus_shows(pilot, question, {"keep", "resign"})
        await pilot.press("n")


async def test_a_spectator_is_not_offered_resign_and_reads_seat_states_as_words(
    server: RunningServer,
) -> None:
    async with ZigguratClient(server.address) as players:
        match = await players.create_match(pylos_config())
        ann = await players.join(match.match_id, "ann")
        await players.join(match.match_id, "bob")
        app = ZigguratApp(server=server.address, watch_match=match.match_id)
        async with app.run_test(size=SIZE) as pilot:
            game: GameScreen = await screen_of(pilot, GameScreen)
            await until(pilot, lambda: game.state.view is not None)
            assert "ctrl+r" not in app.active_bindings  # not in the footer
            await pilot.press("ctrl+r")  # and the key does nothing
            await pilot.pause()
            assert app.screen is game
            label = f"Seat {ann.seat} {'L' if ann.seat == 1 else 'D'} ann"

            def ann_s_state() -> str:
                seats = [ln for ln in text_of(game, "#status").splitlines() if " to move" not in ln]
                line = next(ln for ln in seats if ln.startswith(label))  # not "… ann to move"
                return line.rpartition(" · ")[2] if " · " in line else ""

            # Nobody has opened a stream with their seat token yet: words, not enum names.
            await until(pilot, lambda: ann_s_state() == "not connected yet")

            async def ann_s_stream() -> None:
                async for _ in players.watch(match.match_id, handle=ann):
                    pass

            streaming = asyncio.create_task(ann_s_stream())  # ann's own stream is open: online
            await until(pilot, lambda: ann_s_state() == "online")
            streaming.cancel()  # and closed: away
            with contextlib.suppress(asyncio.CancelledError):
                await streaming
            await until(pilot, lambda: ann_s_state() == "away")
            await players.resign(ann)
            await until(pilot, lambda: game.state.ended is not None)
            await pilot.pause()
            shown = text_of(game, "#status")
            assert ann_s_state() == "resigned", shown
            assert "away" not in shown and "online" not in shown and "connected" not in shown, shown
            assert "[" not in shown and "_" not in shown, shown


async def test_ctrl_c_ends_the_program_with_130_from_any_screen(server: RunningServer) -> None:
    app = ZigguratApp(server=server.address, player_name="human")
    async with app.run_test(size=SIZE) as pilot:
        lobby: LobbyScreen = await screen_of(pilot, LobbyScreen)
        lobby.query_one("#per-move", Input).focus()  # a text box, where Ctrl-C would copy
        await pilot.press("ctrl+c")
        await until(pilot, lambda: app.return_code is not None)
    assert app.return_code == 130
    async with ZigguratClient(server.address) as players:
        match = await players.create_match(pylos_config())
        watching = ZigguratApp(server=server.address, watch_match=match.match_id)
        async with watching.run_test(size=SIZE) as pilot:
            await screen_of(pilot, GameScreen)
            await pilot.press("ctrl+c")
            await until(pilot, lambda: watching.return_code is not None)
        assert watching.return_code == 130
