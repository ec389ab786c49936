"""Spectators: one who arrives mid-turn sees the time actually left (counted from the server's
turn deadline, not from the moment the stream reached them), and watching a match that does
not exist ends the program with a message and status 1."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.servers import RunningServer, pylos_config
from tests.tui.test_tui import SIZE, screen_of, text_of, until
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.tui import ZigguratApp
from ziggurat.tui import model as model_module
from ziggurat.tui.game import GameScreen
from ziggurat.v1 import match_pb2
from ziggurat_client import ZigguratClient
from ziggurat_client import client as client_module

LATE_SECONDS = 3.0


def shown_clock_ms(game: GameScreen) -> int:
    """The running clock drawn on the status pane (``⏱ m:ss.t``), in milliseconds."""
    found = re.search(r"⏱ (\d+):(\d\d)\.(\d)", text_of(game, "#status"))
    assert found, text_of(game, "#status")
    minutes, seconds, tenths = (int(part) for part in found.groups())
    return (minutes * 60 + seconds) * 1000 + tenths * 100


@pytest.mark.parametrize("skew_s", [0.0, 3600.0, -3600.0])
async def test_a_late_spectator_sees_the_time_actually_left(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch, skew_s: float
) -> None:
    """A spectator who arrives 3 s into a turn sees what is left of it, also when its machine's
    clock is an hour ahead of (or behind) the server's: the turn's deadline is moved onto that
    clock (WatchMatchResponse.server_time_ms), so the clock shown is neither 0 (ahead) nor the
    whole turn (behind)."""
    skewed = SimpleNamespace(time=lambda: time.time() + skew_s)
    monkeypatch.setattr(client_module, "time", skewed)  # the spectator's side only: the server
    monkeypatch.setattr(model_module, "time", skewed)  # in this process keeps the real clock
    async with ZigguratClient(server.address) as players:
        timed = match_pb2.TimeControl(per_move_ms=30_000)
        match = await players.create_match(pylos_config(), time_control=timed)
        await players.join(match.match_id, "ann")
        before = time.time()
        await players.join(match.match_id, "bob")  # the match starts: seat 1's 30 s turn begins
        after = time.time()
        await asyncio.sleep(LATE_SECONDS)  # nobody moves; the spectator comes 3 s into the turn
        app = ZigguratApp(server=server.address, watch_match=match.match_id)
        async with app.run_test(size=SIZE) as pilot:
            game: GameScreen = await screen_of(pilot, GameScreen)
            await until(pilot, lambda: game.state.clock.left_ms == 30_000)
            await until(pilot, lambda: "⏱" in text_of(game, "#status"))
            shown, now = shown_clock_ms(game), time.time()
            # The turn began between `before` and `after`; the pane was drawn at most a moment ago.
            earliest, latest = 30_000 - (now - before) * 1000, 30_000 - (now - after) * 1000
            assert shown <= 30_000 - LATE_SECONDS * 1000 + 100  # not the whole turn again
            assert earliest - 200 <= shown <= latest + 1_000, (earliest, shown, latest)
            assert abs(game.state.clock_offset_ms - skew_s * 1000) < 1_000
            await pilot.pause(0.5)
            assert shown_clock_ms(game) < shown  # and it keeps counting down


async def test_watching_an_unknown_match_exits_with_status_1(server: RunningServer) -> None:
    app = ZigguratApp(server=server.address, watch_match="no-such-match")
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: app.return_code is not None)
        assert not isinstance(app.screen, GameScreen)
    assert app.return_code == 1


async def test_a_spectator_is_told_when_the_connection_is_lost(tmp_path: Path) -> None:
    running = ZigguratServer(ServeOptions(host="127.0.0.1", port=0, db_path=str(tmp_path / "z.db")))
    port = await running.start()
    async with ZigguratClient(f"127.0.0.1:{port}") as players:
        match = await players.create_match(pylos_config())
        app = ZigguratApp(server=f"127.0.0.1:{port}", watch_match=match.match_id)
        async with app.run_test(size=SIZE) as pilot:
            game: GameScreen = await screen_of(pilot, GameScreen)
            await until(pilot, lambda: game.state.last_seq > 0)
            assert "Waiting for players" in text_of(game, "#status")
            await running.stop()
            await until(pilot, lambda: "reconnecting" in text_of(game, "#message"))
