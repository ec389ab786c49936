"""The lobby's create form, built from MatchService.ListGames: every game the server lists, the
seat count within its range, one field per declared option, sent by name (rule_options). Driven
by Pilot against a real in-process server: a phantom tic-tac-toe match created from the form
and played to its end on the generic board against the built-in random bot; Pylos's and
Kabaleo's options chosen in the form reach the server; a value the server refuses is shown with
its reason and creates nothing."""

from __future__ import annotations

import random
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Button, Checkbox, Input, Select

from tests.servers import RunningServer
from tests.tui.test_tui import screen_of, shown_moves, snap, text_of, type_move, until
from ziggurat.tui import ZigguratApp
from ziggurat.tui.game import GameScreen
from ziggurat.tui.lobby import LobbyScreen
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat_client import ZigguratClient

SIZE = (100, 30)


async def lobby_with_games(pilot: Pilot[Any]) -> LobbyScreen:
    """The lobby once ListGames and the bots have answered (the form is built from them)."""
    lobby: LobbyScreen = await screen_of(pilot, LobbyScreen)
    await until(pilot, lambda: bool(lobby.games) and len(lobby.opponents) == 4)
    return lobby


async def test_a_phantom_tic_tac_toe_match_from_the_form_is_played_to_the_end(server: RunningServer) -> None:
    app = ZigguratApp(server=server.address, player_name="ann")
    async with app.run_test(size=SIZE) as pilot, ZigguratClient(server.address) as client:
        lobby = await lobby_with_games(pilot)
        chooser = lobby.query_one("#game", Select)
        listed = [value for _, value in chooser._options]
        assert listed == [info.name for info in await client.list_games()]
        assert listed == ["pylos", "kabaleo", "phantom-ttt"]
        # With the keyboard: the third game of the list.
        chooser.focus()
        await pilot.press("enter", "down", "down", "enter")
        await until(pilot, lambda: chooser.value == "phantom-ttt")
        await pilot.pause()
        assert lobby.query_one("#seats", Input).region.area == 0, "one seat count: not asked"
        opponents = lobby.query_one("#opponents", Select)
        await until(pilot, lambda: "builtin:random" in [v for _, v in opponents._options])
        assert "builtin:alphabeta" not in [v for _, v in opponents._options], "only the bots that play it"
        opponents.value = "builtin:random"
        snap(pilot, "tui-new-phantom")
        lobby.query_one("#create-button", Button).press()
        game: GameScreen = await screen_of(pilot, GameScreen)
        # No board of its own here: the generic one (the position as the server writes it).
        await until(pilot, lambda: text_of(game, "#board").startswith("Phantom tic-tac-toe: the position"))
        assert text_of(game, "#title").startswith("Phantom tic-tac-toe"), "the title its rules declare"
        match = await client.get_match(game.state.match_id)
        assert (match.config.game, match.config.seats) == (game_pb2.GAME_PHANTOM_TIC_TAC_TOE, 2)
        assert sorted(seat.player_name for seat in match.seats) == ["ann", "random (bot)"]
        rng = random.Random(5)
        typed = 0
        while game.state.ended is None:
            await until(
                pilot, lambda: game.state.ended is not None or bool(game.state.my_turn and shown_moves(game))
            )
            if game.state.ended is not None:
                break
            before = game.state.view.ply if game.state.view else 0
            await type_move(pilot, game, rng.choice(shown_moves(game)))
            typed += 1
            await until(
                pilot,
                lambda before=before: (  # type: ignore[misc]
                    game.state.ended is not None
                    or (game.state.view is not None and game.state.view.ply > before)
                ),
            )
        assert typed >= 3
        ended = await client.get_match(game.state.match_id)
        assert ended.status == match_pb2.MATCH_STATUS_FINISHED
        await until(pilot, lambda: "seed verified" in text_of(game, "#result"))


async def test_options_chosen_in_the_form_reach_the_server_by_name(server: RunningServer) -> None:
    app = ZigguratApp(server=server.address, player_name="ann")
    async with app.run_test(size=SIZE) as pilot, ZigguratClient(server.address) as client:
        lobby = await lobby_with_games(pilot)
        assert lobby.query_one("#pylos-variant", Select).value == "standard", "the declared default"
        assert lobby.query_one("#pylos-max-moves", Input).value == ""
        lobby.query_one("#pylos-variant", Select).value = "advanced"
        lobby.query_one("#pylos-max-moves", Input).value = "60"
        lobby.query_one("#create-button", Button).press()
        game: GameScreen = await screen_of(pilot, GameScreen)
        pylos = (await client.get_match(game.state.match_id)).config
        assert pylos.pylos.variant == game_pb2.PYLOS_VARIANT_ADVANCED and pylos.pylos.max_moves == 60
        await pilot.press("escape")
        lobby = await screen_of(pilot, LobbyScreen)

        lobby.query_one("#game", Select).value = "kabaleo"
        await pilot.pause()
        lobby.query_one("#seats", Input).value = "3"
        lobby.query_one("#kabaleo-deal", Select).value = "equal"
        lobby.query_one("#kabaleo-last-stack", Checkbox).value = True
        lobby.query_one("#kabaleo-colours", Input).value = "RYGBO"
        await pilot.pause()
        snap(pilot, "tui-new-kabaleo")
        lobby.query_one("#create-button", Button).press()
        game = await screen_of(pilot, GameScreen)
        kabaleo = (await client.get_match(game.state.match_id)).config
        assert (kabaleo.game, kabaleo.seats) == (game_pb2.GAME_KABALEO, 3)
        assert kabaleo.kabaleo == game_pb2.KabaleoConfig(
            deal=game_pb2.KABALEO_DEAL_EQUAL, last_stack=True, colours="RYGBO"
        )
        await pilot.press("escape")
        lobby = await screen_of(pilot, LobbyScreen)

        # A value the server refuses: its reason and sentence under the list, nothing created.
        before = len(await client.list_matches())
        lobby.query_one("#game", Select).value = "pylos"
        lobby.query_one("#pylos-max-moves", Input).value = "0"
        await pilot.pause()
        lobby.query_one("#create-button", Button).press()
        await until(pilot, lambda: "INVALID_CONFIG" in text_of(lobby, "#lobby-message"))
        assert "max_moves" in text_of(lobby, "#lobby-message")
        assert len(await client.list_matches()) == before
        # Seats outside the game's range: said beside the form, nothing sent.
        lobby.query_one("#game", Select).value = "kabaleo"
        await pilot.pause()
        lobby.query_one("#seats", Input).value = "5"
        lobby.query_one("#create-button", Button).press()
        await until(pilot, lambda: "2 to 4 for Kabaleo" in text_of(lobby, "#lobby-message"))
        assert len(await client.list_matches()) == before
