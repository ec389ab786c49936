"""Playing the computer from the lobby: the server's built-in bots (AddBot) and remote bots
connected to the server (BotService.InviteBot) are offered in one chooser, seated in the
highlighted open match, or in every other seat of a new match ("Opponents")."""

from __future__ import annotations

import asyncio
import random

import pytest
from textual.widgets import Button, Input, Select

from tests.servers import RunningServer, pylos_config, random_chooser
from tests.tui.test_tui import SIZE, screen_of, shown_moves, text_of, type_move, until
from ziggurat.tui import ZigguratApp
from ziggurat.tui.game import GameScreen
from ziggurat.tui.lobby import LobbyScreen
from ziggurat.v1 import match_pb2
from ziggurat_client import ZigguratClient
from ziggurat_client.remote import RemoteBot
from ziggurat_client.runner import FunctionBot


async def test_a_builtin_bot_is_seated_in_the_highlighted_match(server: RunningServer) -> None:
    app = ZigguratApp(server=server.address, player_name="human")
    async with app.run_test(size=(80, 24)) as pilot, ZigguratClient(server.address) as other:
        match = await other.create_match(pylos_config())
        handle = await other.join(match.match_id, "ann")
        ann = asyncio.create_task(other.play(handle, random_chooser(1)))
        lobby: LobbyScreen = await screen_of(pilot, LobbyScreen)
        await until(pilot, lambda: match.match_id in lobby.matches and len(lobby.opponents) == 4)
        lobby.matches_list.highlighted = lobby.matches_list.get_option_index(match.match_id)
        lobby.query_one("#bot", Select).value = "builtin:greedy"
        lobby.query_one("#add-bot", Button).press()
        await until(pilot, lambda: "took seat" in text_of(lobby, "#lobby-message"))
        seated = await other.get_match(match.match_id)
        names = sorted(seat.player_name for seat in seated.seats)
        assert names == ["ann", "greedy (bot)"] and seated.status == match_pb2.MATCH_STATUS_ACTIVE
        assert f"greedy took seat {3 - handle.seat} of match {match.match_id}" in text_of(
            lobby, "#lobby-message"
        )
        # A running match takes no bot: refused with the reason, nothing changes.
        await until(pilot, lambda: lobby.matches[match.match_id].status == match_pb2.MATCH_STATUS_ACTIVE)
        lobby.query_one("#add-bot", Button).press()
        await until(pilot, lambda: "open match" in text_of(lobby, "#lobby-message"))
        ended = await asyncio.wait_for(ann, 60)
        assert ended.outcome.ranks


@pytest.mark.slow
async def test_a_new_match_against_builtin_bots_is_played_to_the_end(server: RunningServer) -> None:
    app = ZigguratApp(server=server.address, player_name="human")
    async with app.run_test(size=SIZE) as pilot:
        lobby: LobbyScreen = await screen_of(pilot, LobbyScreen)
        await until(pilot, lambda: len(lobby.opponents) == 4)
        lobby.query_one("#game", Select).value = "kabaleo"
        await until(pilot, lambda: lobby.query_one("#seats").region.area > 0)  # Kabaleo: a choice of seats
        lobby.query_one("#seats", Input).value = "3"
        options = lobby.query_one("#opponents", Select)
        await until(pilot, lambda: "builtin:alphabeta" not in [v for _, v in options._options])  # Pylos only
        options.value = "builtin:random"
        lobby.query_one("#create-button", Button).press()
        game: GameScreen = await screen_of(pilot, GameScreen)
        rng = random.Random(2)
        while game.state.ended is None:
            await until(
                pilot,
                lambda: game.state.ended is not None or (game.state.my_turn and bool(shown_moves(game))),
            )
            if game.state.ended is None:
                before = len(game.state.history)
                await type_move(pilot, game, rng.choice(shown_moves(game)))
                await until(pilot, lambda before=before: len(game.state.history) > before)  # type: ignore[misc]
        bots = [s.player_name for n, s in game.state.seats.items() if n != game.state.my_seat]
        assert bots == ["random (bot)", "random (bot)"]
        assert len(game.state.history) == 30 and "seed verified" in text_of(game, "#result")


async def test_a_remote_bot_is_invited_into_a_new_match(server: RunningServer) -> None:
    async with ZigguratClient(server.address) as remote_client:
        rng = random.Random(3)
        remote = RemoteBot(
            remote_client,
            lambda _: FunctionBot(lambda turn: rng.choice(list(turn.legal_moves))),
            name="annbot",
            token="ann-secret",
            games=["pylos"],
        )
        running = asyncio.create_task(remote.run())
        try:
            app = ZigguratApp(server=server.address, player_name="human")
            async with app.run_test(size=(80, 24)) as pilot:
                lobby: LobbyScreen = await screen_of(pilot, LobbyScreen)
                await until(pilot, lambda: any(bot.key == "remote:annbot" for bot in lobby.opponents))
                options = lobby.query_one("#opponents", Select)
                assert ("annbot (remote)", "remote:annbot") in options._options
                options.value = "remote:annbot"
                lobby.query_one("#create-button", Button).press()
                game: GameScreen = await screen_of(pilot, GameScreen)
                await until(pilot, lambda: game.state.view is not None and len(game.state.seats) == 2)
                assert sorted(s.player_name for s in game.state.seats.values()) == ["annbot", "human"]
                await until(pilot, lambda: game.state.my_turn and bool(shown_moves(game)))
                await type_move(pilot, game, shown_moves(game)[0])
                await until(pilot, lambda: len(game.state.history) >= 2)  # the remote bot answered
                assert remote.played == [game.state.match_id]
                await pilot.press("ctrl+r", "y")
                await until(pilot, lambda: game.state.ended is not None)
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
