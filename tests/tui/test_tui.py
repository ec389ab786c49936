"""The terminal UI, headless (textual's Pilot), against a real in-process server.

A human seat plays whole games by typing moves picked from the legal moves the
screen shows, while random bots play the other seats through the SDK. Set
ZIGGURAT_TUI_SCREENSHOTS=DIR to save SVG screenshots of the screens (for a human
to look at; the tests never read them).
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Button, Input, OptionList, Select, Static
from textual.worker import WorkerState

from tests.lan import discovered
from tests.servers import RunningServer, random_chooser
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.rules.kabaleo_model import score_key
from ziggurat.tui import ZigguratApp
from ziggurat.tui.game import ConfirmResign, GameScreen
from ziggurat.tui.lobby import LobbyScreen
from ziggurat.tui.recovery import bases
from ziggurat.tui.servers import ServerScreen, normalise_address
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat_client import ZigguratClient

SEAT_CONNECTED = match_pb2.SEAT_STATE_CONNECTED
SIZE = (130, 44)
SCREENSHOTS = os.environ.get("ZIGGURAT_TUI_SCREENSHOTS")


async def until(pilot: Pilot[Any], predicate: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting for the UI"
        await pilot.pause(0.01)


async def screen_of(pilot: Pilot[Any], kind: type[Screen[Any]]) -> Any:
    await until(pilot, lambda: isinstance(pilot.app.screen, kind) and pilot.app.screen.is_mounted)
    return pilot.app.screen


def text_of(screen: Screen[Any], selector: str) -> str:
    content = screen.query_one(selector, Static).content
    return content if isinstance(content, str) else str(getattr(content, "plain", content))


def shown_moves(game: GameScreen) -> list[str]:
    """What the legal-move list offers (each entry's move, or a recovery's ball)."""
    moves = game.query_one("#moves", OptionList)
    return [str(moves.get_option_at_index(i).id) for i in range(moves.option_count)]


def snap(pilot: Pilot[Any], name: str) -> None:
    if SCREENSHOTS:
        pilot.app.save_screenshot(f"{name}.svg", path=SCREENSHOTS)


async def type_move(pilot: Pilot[Any], game: GameScreen, move: str) -> None:
    game.query_one("#move-input", Input).focus()
    await pilot.press(*move, "enter")


async def create_and_join(pilot: Pilot[Any], game: str = "pylos", per_move: str = "") -> GameScreen:
    lobby: LobbyScreen = await screen_of(pilot, LobbyScreen)
    await until(pilot, lambda: bool(lobby.games))  # the form is built from what ListGames says
    lobby.query_one("#game", Select).value = game
    if game == "kabaleo":
        await pilot.pause()
        lobby.query_one("#seats", Input).value = "3"
    if per_move:
        lobby.query_one("#per-move", Input).value = per_move
    snap(pilot, f"lobby-{game}")
    lobby.query_one("#create-button", Button).press()
    return await screen_of(pilot, GameScreen)  # type: ignore[no-any-return]


async def play_to_the_end(
    pilot: Pilot[Any], game: GameScreen, rng: random.Random, on_turn: Callable[[], None] | None = None
) -> int:
    """Type a move shown in the legal-move list at every turn of the human; returns moves typed."""
    typed = 0
    while game.state.ended is None:
        await until(
            pilot, lambda: game.state.ended is not None or (game.state.my_turn and bool(shown_moves(game)))
        )
        if game.state.ended is not None:
            break
        if on_turn is not None:
            on_turn()
        legal = game.state.legal_moves
        assert sorted(shown_moves(game)) == sorted(bases(legal) if game.state.game == "pylos" else legal)
        before = game.state.view.ply if game.state.view else 0
        await type_move(pilot, game, rng.choice(shown_moves(game)))
        while game.recovery is not None:  # a square: take balls back one at a time, as offered
            await until(pilot, lambda: "take back" in game.query_one("#moves", OptionList).border_title)
            await type_move(pilot, game, rng.choice(shown_moves(game)))
        typed += 1
        await until(
            pilot,
            lambda before=before: (  # type: ignore[misc]
                game.state.ended is not None or (game.state.view is not None and game.state.view.ply > before)
            ),
        )
        assert "refused" not in game.message, game.message
    return typed


@pytest.mark.slow
async def test_pylos_whole_game_with_refused_moves(server: RunningServer) -> None:
    app = ZigguratApp(server=server.address, player_name="human")
    async with app.run_test(size=SIZE) as pilot, ZigguratClient(server.address) as bots:
        # The bot opens a match and sits down; the human joins it from the lobby list.
        match = await bots.create_match(game_pb2.GameConfig(game=game_pb2.GAME_PYLOS, seats=2))
        handle = await bots.join(match.match_id, "randombot")
        bot = asyncio.create_task(bots.play(handle, random_chooser(7)))
        lobby: LobbyScreen = await screen_of(pilot, LobbyScreen)
        listing = lobby.matches_list
        # The list may first show the match as created, before the bot's seat: wait for the join.
        await until(
            pilot,
            lambda: (
                match.match_id in lobby.matches
                and "1/2 seats" in str(listing.get_option(match.match_id).prompt)
            ),
        )
        listing.focus()
        listing.highlighted = listing.get_option_index(match.match_id)
        await pilot.press("enter")
        game: GameScreen = await screen_of(pilot, GameScreen)
        assert game.state.match_id == match.match_id and game.state.my_seat in (1, 2)

        await until(pilot, lambda: game.state.my_turn and bool(shown_moves(game)))
        board, position, ply = text_of(game, "#board"), game.state.view.position, game.state.view.ply  # type: ignore[union-attr]
        assert "Level 1" in board and "Level 4" in board and "a b c d" in board
        assert "Your turn" in text_of(game, "#status")
        snap(pilot, "pylos-turn")
        for bad, reason in (("4a1", "ILLEGAL_MOVE"), ("zz9", "MALFORMED_MOVE")):
            await type_move(pilot, game, bad)
            await until(pilot, lambda reason=reason: reason in text_of(game, "#message"))  # type: ignore[misc]
            assert f"{bad} refused" in text_of(game, "#message")
            assert game.state.view.position == position and game.state.view.ply == ply  # type: ignore[union-attr]
            assert text_of(game, "#board") == board and game.state.my_turn
        snap(pilot, "pylos-refused")

        typed = await play_to_the_end(pilot, game, random.Random(3))
        ended = await asyncio.wait_for(bot, 10)
        assert typed >= 7 and ended is not None
        assert list(game.state.ended.outcome.ranks) == list(ended.outcome.ranks)  # type: ignore[union-attr]
        result = text_of(game, "#result")
        assert "Result" in result and "seed verified" in result
        assert "Game over" in text_of(game, "#status")
        snap(pilot, "pylos-end")


async def test_kabaleo_whole_game_secret_only_own_then_revealed(server: RunningServer) -> None:
    app = ZigguratApp(server=server.address, player_name="human")
    async with app.run_test(size=SIZE) as pilot, ZigguratClient(server.address) as bots:
        game = await create_and_join(pilot, "kabaleo")
        tasks = []
        for i in range(2):
            handle = await bots.join(game.state.match_id, f"bot{i + 1}")
            tasks.append(asyncio.create_task(bots.play(handle, random_chooser(i))))
        me = game.state.my_seat

        def only_own_objective() -> None:
            view = game.state.view
            assert view is not None
            objectives = list(view.kabaleo.objectives)
            assert [s for s, o in enumerate(objectives, 1) if o != "?"] == [me]
            assert set(view.kabaleo.unheld) == {"?"}
            hands = text_of(game, "#facts")
            assert f"Your secret colour: {objectives[me - 1]}" in hands
            assert "objective" not in hands  # nobody else's colour is drawn
            assert text_of(game, "#result") == ""

        await until(pilot, lambda: game.state.my_turn and bool(shown_moves(game)))
        only_own_objective()
        table = text_of(game, "#board")
        assert " 1 " in table and "20 " in table and "21 " not in table  # 5 colours x 4 bases
        snap(pilot, "kabaleo-turn")

        typed = await play_to_the_end(pilot, game, random.Random(5), on_turn=only_own_objective)
        assert typed == 10  # 30 pieces, 3 seats
        await asyncio.wait_for(asyncio.gather(*tasks), 10)
        final = game.state.ended
        assert final is not None and "?" not in "".join(final.view.kabaleo.objectives)
        result = text_of(game, "#result")
        assert "seed verified" in result
        # Beside the board: every revealed colour with the score key that ranked it, by rank.
        facts = text_of(game, "#facts").splitlines()
        stacks = list(final.view.kabaleo.stacks)
        for seat, letter in enumerate(final.view.kabaleo.objectives, 1):
            rank = final.outcome.ranks[seat - 1]
            shown, covered, tallest = score_key(stacks, letter)
            line = next(line for line in facts if f"Seat {seat} " in line)
            assert line.startswith(f"{rank}. ") and f" {letter} {shown:>2} · {covered} · {tallest}" in line
        assert "Nobody held: " + " ".join(final.view.kabaleo.unheld) in facts[-1]
        snap(pilot, "kabaleo-end")


async def test_clock_counts_down_between_events_and_resign_ends(server: RunningServer) -> None:
    app = ZigguratApp(server=server.address, player_name="human")
    async with app.run_test(size=SIZE) as pilot, ZigguratClient(server.address) as bots:
        game = await create_and_join(pilot, "pylos", per_move="30")
        await until(pilot, lambda: game.state.time_control.per_move_ms == 30_000)
        handle = await bots.join(game.state.match_id, "randombot")
        bot = asyncio.create_task(bots.play(handle, random_chooser(1)))
        await until(pilot, lambda: game.state.my_turn and bool(shown_moves(game)))
        while (await bots.get_match(handle.match_id)).seats[handle.seat - 1].state != SEAT_CONNECTED:
            await pilot.pause(0.05)  # the bot's stream is up: its seat event is in the log
        # Let the public seat events (the bot's stream connecting) arrive before measuring.
        seq = -1
        while seq != game.state.last_seq:
            seq = game.state.last_seq
            await pilot.pause(0.3)
        first = text_of(game, "#status")
        assert "⏱ 0:" in first
        await pilot.pause(0.35)
        second = text_of(game, "#status")
        assert game.state.last_seq == seq  # no event came: the clock moved on its own
        reading = [
            line.split("⏱ ")[1] for line in (first, second) for line in line.splitlines() if "⏱" in line
        ]
        assert reading[0] > reading[1] and reading[0] <= "0:30.0", reading
        # Resigning asks first: "n" (and a stray Enter on the default button) keeps playing.
        for cancel in ("n", "enter", "escape"):
            await pilot.press("ctrl+r")
            await until(pilot, lambda: isinstance(pilot.app.screen, ConfirmResign))
            snap(pilot, "resign-confirm")
            await pilot.press(cancel)
            await until(pilot, lambda: pilot.app.screen is game)
            await pilot.pause(0.2)
            assert game.state.ended is None, cancel
        await pilot.press("ctrl+r")
        await until(pilot, lambda: isinstance(pilot.app.screen, ConfirmResign))
        await pilot.press("y")
        await until(pilot, lambda: game.state.ended is not None)
        assert "resignation" in text_of(game, "#result")
        assert (await asyncio.wait_for(bot, 5)) is not None


@pytest.mark.slow
async def test_typing_goes_to_the_move_box_and_enter_plays_what_was_typed(server: RunningServer) -> None:
    """Nothing is focused by hand: the keys typed on the game screen are the move played,
    never the highlighted entry of the legal-move list."""
    app = ZigguratApp(server=server.address, player_name="human")
    async with app.run_test(size=SIZE) as pilot, ZigguratClient(server.address) as bots:
        game = await create_and_join(pilot, "kabaleo")
        tasks = []
        for i in range(2):
            handle = await bots.join(game.state.match_id, f"bot{i + 1}")
            tasks.append(asyncio.create_task(bots.play(handle, random_chooser(i))))
        played: list[tuple[int, str]] = []  # every move of the match, as a spectator sees it

        async def spectate() -> None:
            async for event in bots.watch(game.state.match_id):
                if event.WhichOneof("kind") == "move_played":
                    played.append((event.move_played.seat, event.move_played.move))

        tasks.append(asyncio.create_task(spectate()))
        for _ in range(3):
            await until(pilot, lambda: game.state.my_turn and bool(shown_moves(game)))
            assert isinstance(pilot.app.focused, Input) and pilot.app.focused.id == "move-input"
            shown = shown_moves(game)
            wanted = shown[-1]  # not the highlighted first entry
            assert wanted != shown[0]
            await pilot.press(*wanted, "enter")

            mine = (game.state.my_seat, wanted)
            await until(pilot, lambda mine=mine: mine in played)  # type: ignore[misc]
            assert "refused" not in game.message
        await pilot.press("ctrl+r")
        await until(pilot, lambda: isinstance(pilot.app.screen, ConfirmResign))
        await pilot.press("y")
        await until(pilot, lambda: game.state.ended is not None)
        await asyncio.wait_for(asyncio.gather(*tasks), 30)


async def test_watch_a_finished_match_replays_it_without_input(server: RunningServer) -> None:
    async with ZigguratClient(server.address) as bots:
        config = game_pb2.GameConfig(game=game_pb2.GAME_KABALEO, seats=2, kabaleo=game_pb2.KabaleoConfig())
        match = await bots.create_match(config)
        handles = [await bots.join(match.match_id, f"bot{i}") for i in range(2)]
        await asyncio.gather(*(bots.play(h, random_chooser(i)) for i, h in enumerate(handles)))
    app = ZigguratApp(server=server.address, watch_match=match.match_id)
    async with app.run_test(size=SIZE) as pilot:
        game: GameScreen = await screen_of(pilot, GameScreen)
        await until(pilot, lambda: game.state.ended is not None)
        assert game.state.my_seat == 0 and not game.query("#move-input")
        assert "spectating" in text_of(game, "#title")
        assert "seed verified" in text_of(game, "#result")
        assert "Your secret colour" not in text_of(game, "#facts")


async def test_server_list_from_lan_discovery_leads_to_the_lobby(tmp_path: Path) -> None:
    running = ZigguratServer(
        ServeOptions(host="127.0.0.1", port=0, db_path=str(tmp_path / "z.db"), mdns=True)
    )
    port = await running.start()
    try:
        assert running.advertiser is not None
        await running.advertiser.wait_announced()

        app = ZigguratApp(discover_servers=lambda: discovered(port))
        async with app.run_test(size=SIZE) as pilot:
            servers: ServerScreen = await screen_of(pilot, ServerScreen)
            listing = servers.query_one("#servers", OptionList)
            await until(
                pilot,
                lambda: (
                    "found" in text_of(servers, "#scan-status")
                    or "failed" in text_of(servers, "#scan-status")
                ),
            )
            print("STATUS", text_of(servers, "#scan-status"))
            await until(pilot, lambda: listing.option_count == 1, timeout=30.0)
            assert f"127.0.0.1:{port}" in str(listing.get_option_at_index(0).prompt)
            snap(pilot, "servers")
            await pilot.press("enter")
            lobby: LobbyScreen = await screen_of(pilot, LobbyScreen)
            assert app.server_address == f"127.0.0.1:{port}"
            assert "no open match" in str(lobby.matches_list.get_option_at_index(0).prompt)
    finally:
        await running.stop()


async def test_typed_address_is_used(server: RunningServer) -> None:
    async def nothing() -> Any:
        return []

    app = ZigguratApp(discover_servers=nothing)
    async with app.run_test(size=SIZE) as pilot:
        servers: ServerScreen = await screen_of(pilot, ServerScreen)
        await until(pilot, lambda: "0 servers found" in text_of(servers, "#scan-status"))
        servers.query_one("#address", Input).focus()
        await pilot.press(*server.address, "enter")
        lobby: LobbyScreen = await screen_of(pilot, LobbyScreen)
        assert app.server_address == server.address
        await until(pilot, lambda: lobby.matches_list.option_count == 1)


@pytest.mark.parametrize(
    ("typed", "address"),
    [
        ("host:1234", "host:1234"),
        (" host ", "host:50051"),
        ("10.0.0.7", "10.0.0.7:50051"),
        ("[::1]:9", "[::1]:9"),
        ("[::1]", "[::1]:50051"),
        ("fe80::1", "[fe80::1]:50051"),
        ("", ""),
    ],
)
def test_typed_addresses_get_the_default_port(typed: str, address: str) -> None:
    assert normalise_address(typed) == address


def test_state_ignores_replayed_events_and_clock_counts_down() -> None:
    from ziggurat.tui.model import Clock, MatchState
    from ziggurat.v1 import match_pb2

    state = MatchState("m", my_seat=1)
    turn = match_pb2.Event(
        seq=5, turn_started=match_pb2.TurnStartedEvent(seat=1, ply=0, legal_moves=["1a1"], time_left_ms=1000)
    )
    state.apply(turn)
    played = match_pb2.Event(seq=6, move_played=match_pb2.MovePlayedEvent(seat=1, move="1a1"))
    state.apply(played)
    state.apply(turn)  # a resumed stream replays an old event: ignored
    assert (state.last_seq, state.legal_moves, state.last_move.move) == (6, (), "1a1")  # type: ignore[union-attr]
    clock = Clock(seat=1, left_ms=1000, deadline_ms=101_000)
    assert (clock.remaining_ms(100_250), clock.remaining_ms(102_000)) == (750, 0)
    assert clock.remaining_ms(99_000) == 1000  # a clock behind the server's: never above the turn's time


@pytest.mark.slow
async def test_leaving_and_quitting_never_lose_the_seat(server: RunningServer, seat_files: Path) -> None:
    """Esc back to the lobby, then the match again: the same seat. A new program (quit and
    start again) finds the seat in its file too; nothing turns the player into a spectator."""
    async with ZigguratClient(server.address) as bots:
        app = ZigguratApp(server=server.address, player_name="human")
        async with app.run_test(size=SIZE) as pilot:
            game = await create_and_join(pilot, "pylos", per_move="60")
            match_id, seat = game.state.match_id, game.state.my_seat
            assert seat in (1, 2)
            files = list(seat_files.rglob(f"{match_id}.json"))
            assert len(files) == 1 and files[0].stat().st_mode & 0o077 == 0  # owner-only: a secret
            await pilot.press("escape")
            lobby: LobbyScreen = await screen_of(pilot, LobbyScreen)
            await until(pilot, lambda: match_id in lobby.matches)
            lobby.matches_list.focus()
            lobby.matches_list.highlighted = lobby.matches_list.get_option_index(match_id)
            await pilot.press("enter")
            again: GameScreen = await screen_of(pilot, GameScreen)
            assert again is not game and again.handle is not None
            assert (again.state.match_id, again.state.my_seat) == (match_id, seat)
            await until(pilot, lambda: again.state.last_seq > 0)
            # Reopening did not take a second seat: the other one is still open for the bot.
            handle = await bots.join(match_id, "randombot")
            assert handle.seat != seat
        bot = asyncio.create_task(bots.play(handle, random_chooser(2)))
        # A new program, as after quitting: the seat comes back from its file.
        app = ZigguratApp(server=server.address, player_name="human")
        async with app.run_test(size=SIZE) as pilot:
            lobby = await screen_of(pilot, LobbyScreen)
            await until(pilot, lambda: match_id in lobby.matches)
            lobby.matches_list.focus()
            lobby.matches_list.highlighted = lobby.matches_list.get_option_index(match_id)
            await pilot.press("enter")
            game = await screen_of(pilot, GameScreen)
            assert game.handle is not None and game.state.my_seat == seat
            typed = await play_to_the_end(pilot, game, random.Random(9))
            assert typed >= 1 and game.state.ended is not None
        await asyncio.wait_for(bot, 10)


@pytest.mark.slow
async def test_history_pane_lists_every_move_and_marks_cancellations(server: RunningServer) -> None:
    app = ZigguratApp(server=server.address, player_name="human")
    async with app.run_test(size=SIZE) as pilot, ZigguratClient(server.address) as bots:
        game = await create_and_join(pilot, "kabaleo")
        tasks = []
        for i in range(2):
            handle = await bots.join(game.state.match_id, f"bot{i + 1}")
            tasks.append(asyncio.create_task(bots.play(handle, random_chooser(i))))
        await play_to_the_end(pilot, game, random.Random(11))
        await asyncio.wait_for(asyncio.gather(*tasks), 10)
        record = await bots.record(game.state.match_id)
        history = game.state.history
        assert [(m.seat, m.move) for m in history] == [(m.seat, m.move) for m in record.moves]
        # Cancellations, recomputed from the spectator's stream: a move whose stack got lower.
        stacks: list[int] = []
        expected: list[bool] = []
        async for event in bots.watch(game.state.match_id):
            kind = event.WhichOneof("kind")
            if kind == "match_started":
                stacks = [len(s) for s in event.match_started.view.kabaleo.stacks]
            elif kind == "move_played":
                after = [len(s) for s in event.move_played.view.kabaleo.stacks]
                index = int(event.move_played.move[1:]) - 1
                expected.append(after[index] < stacks[index])
                stacks = after
        assert [m.cancelled for m in history] == expected
        pane = text_of(game, "#history")
        shown = history
        assert len(pane.strip().splitlines()) == len(shown)
        for line, played in zip(pane.strip().splitlines(), shown, strict=True):
            assert f": {played.move}" in line
            assert ("cancelled" in line) == played.cancelled
        snap(pilot, "kabaleo-history")


async def test_a_match_list_that_comes_back_after_the_lobby_went_is_dropped(server: RunningServer) -> None:
    # The lobby refreshes its list every few seconds; an answer that arrives after the lobby's
    # widgets are gone (the app closing) must end the refresh quietly, not fail its worker
    # (which fails the whole app: seen as NoMatches on #matches in loaded test runs).
    app = ZigguratApp(server=server.address, player_name="human")
    async with app.run_test(size=SIZE) as pilot:
        lobby: LobbyScreen = await screen_of(pilot, LobbyScreen)
        await until(pilot, lambda: len(lobby.opponents) == 4)
        answer = asyncio.Event()
        asked = lobby.client.list_matches

        async def late(*args: Any, **kwargs: Any) -> Any:
            await answer.wait()
            return await asked(*args, **kwargs)

        lobby.client.list_matches = late  # type: ignore[method-assign]
        worker = lobby.action_refresh()
        await pilot.pause()
        await lobby.matches_list.remove()
        answer.set()
        await worker.wait()
        assert worker.state == WorkerState.SUCCESS
