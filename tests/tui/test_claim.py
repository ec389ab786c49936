"""Claiming an abandoned match from the terminal UI (Ctrl+T): refused in words while the
opponent has not been away long enough, then the match ends as abandoned. A real server, the
app driven by textual's Pilot."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.servers import pylos_config
from tests.tui.test_tui import screen_of, text_of, until
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.tui import ZigguratApp
from ziggurat.tui.game import GameScreen
from ziggurat.tui.lobby import LobbyScreen
from ziggurat.v1 import game_pb2
from ziggurat_client import ZigguratClient

SIZE = (80, 24)


@pytest.fixture
async def address(tmp_path: Path) -> AsyncIterator[str]:
    """A server whose absent seats may be claimed after 3 s (time enough to press too soon)."""
    options = ServeOptions(
        host="127.0.0.1", port=0, db_path=str(tmp_path / "z.db"), grace_seconds=0.5, claim_after_s=3.0
    )
    server = ZigguratServer(options)
    port = await server.start()
    yield f"127.0.0.1:{port}"
    await server.stop()


async def test_ctrl_t_claims_a_game_whose_opponent_left(address: str) -> None:
    async with ZigguratClient(address) as others:
        match = await others.create_match(pylos_config())
        bob = await others.join(match.match_id, "bob")

        async def bob_s_stream() -> None:
            async for _ in others.watch(match.match_id, handle=bob):
                pass

        bob_here = asyncio.create_task(bob_s_stream())  # bob is in the game until the test says
        app = ZigguratApp(server=address, player_name="ann")
        async with app.run_test(size=SIZE) as pilot:
            await screen_of(pilot, LobbyScreen)
            assert app.client is not None
            handle = await app.client.join(match.match_id, "ann")
            app.push_screen(GameScreen(app.client, match.match_id, handle))
            game: GameScreen = await screen_of(pilot, GameScreen)
            await until(pilot, lambda: game.state.view is not None)
            assert "Claim" in str(app.active_bindings["ctrl+t"].binding.description)
            bob_here.cancel()  # bob leaves now: whatever the load, a claim at once is too soon
            with contextlib.suppress(asyncio.CancelledError):
                await bob_here
            await pilot.press("ctrl+t")  # the server says why not (how long to wait, or bob is here)
            await until(pilot, lambda: "not claimed" in text_of(game, "#message"))
            assert game.state.ended is None
            await asyncio.sleep(3.1)
            await pilot.press("ctrl+t")
            await until(pilot, lambda: game.state.ended is not None)
            await pilot.pause()
            assert "a player left: claimed" in text_of(game, "#result")
        record = await others.record(match.match_id)
        assert record.outcome.termination == game_pb2.TERMINATION_ABANDONED
        assert record.seats[bob.seat - 1].player_name == "bob"


async def test_a_spectator_is_not_offered_the_claim(address: str) -> None:
    async with ZigguratClient(address) as players:
        match = await players.create_match(pylos_config())
        await players.join(match.match_id, "ann")
        await players.join(match.match_id, "bob")
        app = ZigguratApp(server=address, watch_match=match.match_id)
        async with app.run_test(size=SIZE) as pilot:
            game: GameScreen = await screen_of(pilot, GameScreen)
            await until(pilot, lambda: game.state.view is not None)
            assert "ctrl+t" not in app.active_bindings
