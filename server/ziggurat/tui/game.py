"""The game screen: board, seats and clocks, move entry, and the end-of-game reveal.

Why it is built this way: the screen draws only what the server's event stream
says (through :class:`MatchState`); a typed move is sent as is and the server's
verdict decides, so an illegal move shows the server's reason and changes nothing.
A spectator (``ziggurat watch``) gets the same screen without the move widgets.
The stream is resumed with ``after_seq`` when it drops, so nothing is missed or
drawn twice.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Footer, Input, Label, OptionList, Static

from ziggurat.tui import render
from ziggurat.tui.model import MatchState
from ziggurat_client.client import MatchHandle, ZigguratClient, ZigguratError
from ziggurat_client.runner import RETRYABLE

CLOCK_TICK_SECONDS = 0.1


class ConfirmResign(ModalScreen[bool]):
    """Asks "Resign this game?": y or the Resign button confirms; n, Esc or Keep playing cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Resign"),
        Binding("n,escape", "answer(False)", "Keep playing"),
    ]

    DEFAULT_CSS = """
    ConfirmResign { align: center middle; }
    #confirm { width: 44; height: auto; border: thick $error; padding: 1 2; background: $surface; }
    #confirm Horizontal { height: auto; margin-top: 1; }
    """

    def compose(self) -> ComposeResult:
        """The question and two buttons (keep playing is the default)."""
        with Vertical(id="confirm"):
            yield Label("Resign this game? It counts as a loss.")
            with Horizontal():
                yield Button("Keep playing (n)", id="keep", variant="primary")
                yield Button("Resign (y)", id="resign", variant="error")

    def on_mount(self) -> None:
        """Keep playing has the focus: a stray Enter never resigns."""
        self.query_one("#keep", Button).focus()

    def action_answer(self, confirmed: bool) -> None:
        """Close with the answer."""
        self.dismiss(confirmed)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "resign")


class GameScreen(Screen[None]):
    """Plays one seat (``handle``) or spectates (``handle=None``) one match."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "leave", "Back"),
        Binding("ctrl+r", "resign", "Resign…"),
    ]

    DEFAULT_CSS = """
    GameScreen { layout: vertical; }
    #title { height: 1; background: $primary; color: $text; padding: 0 1; }
    #main { height: auto; }
    #board { width: auto; min-width: 40; padding: 1 2; border: round $secondary; height: auto; }
    #side { width: 1fr; height: auto; padding: 0 1; }
    #status, #hands, #result { height: auto; margin-bottom: 1; }
    #history { height: auto; border: round $secondary; }
    #entry { height: 1fr; min-height: 6; }
    #moves { width: 24; height: 100%; border: round $secondary; }
    #entry-right { width: 1fr; }
    #message { height: auto; padding: 0 1; }
    """

    def __init__(self, client: ZigguratClient, match_id: str, handle: MatchHandle | None = None) -> None:
        super().__init__()
        self.client = client
        self.handle = handle
        self.state = MatchState(match_id, my_seat=handle.seat if handle else 0)
        self._shown_moves: tuple[str, ...] = ()
        self.message = ""

    def compose(self) -> ComposeResult:
        """Board left, seats/status right; move list and input below (players only)."""
        yield Static(id="title")
        with Horizontal(id="main"):
            yield Static(id="board")
            with Vertical(id="side"):
                yield Static(id="status")
                yield Static(id="hands")
                yield Static(id="result")
                yield Static(id="history")
        if self.handle is not None:
            with Horizontal(id="entry"):
                yield OptionList(id="moves")
                with Vertical(id="entry-right"):
                    yield Input(placeholder="type a move and press Enter", id="move-input")
                    yield Static(id="message")
        yield Footer()

    def on_mount(self) -> None:
        """Draw, start the clock tick and follow the event stream.

        The move box has the focus and the legal-move list cannot take it: what a player
        types always lands in the box, and Enter plays exactly what was typed (the list is
        for reading, or for a click).
        """
        if self.handle is not None:
            self.query_one("#moves", OptionList).can_focus = False
            self.query_one("#move-input", Input).focus()
        self.redraw()
        self.set_interval(CLOCK_TICK_SECONDS, self._tick)
        self.follow()

    @work(exclusive=True, group="follow")
    async def follow(self) -> None:
        """Load the match, then fold its events in until it ends, resuming after drops."""
        delay = 0.1
        while self.state.ended is None:
            try:
                if not self.state.last_seq:
                    self.state.load(await self.client.get_match(self.state.match_id, self.handle))
                async for event in self.client.watch(
                    self.state.match_id, handle=self.handle, after_seq=self.state.last_seq
                ):
                    self.state.apply(event)
                    self.redraw()
                    delay = 0.1
            except ZigguratError as error:
                if error.code not in RETRYABLE:
                    self.show_message(f"{error.reason or error.code.name}: {error.message}", error=True)
                    return
                self.show_message("connection lost; reconnecting…", error=True)
            if self.state.ended is None:
                await asyncio.sleep(delay)
                delay = min(5.0, delay * 2)
        self.show_message("")

    @property
    def on_stack(self) -> bool:
        """Whether the screen is still one of the app's: once it is left (popped), its widgets
        are being taken down, and a stream event or clock tick arriving meanwhile must draw
        nothing (the follow worker is cancelled as it is left, but may already be awake).
        """
        return self in self.app.screen_stack

    def _tick(self) -> None:
        if not self.on_stack:
            return
        if self.state.clock.left_ms and self.state.ended is None:
            self.query_one("#status", Static).update(render.status(self.state))

    def redraw(self) -> None:
        """Redraw every part from the state."""
        if not self.on_stack:
            return
        state = self.state
        game = state.game.capitalize() or "Match"
        role = f"you are seat {state.my_seat}" if state.my_seat else "spectating"
        self.query_one("#title", Static).update(f"{game} · match {state.match_id} · {role}")
        board = self.query_one("#board", Static)
        if state.view is not None and state.game == "pylos":
            board.update(render.pylos_levels(state.view))
        elif state.view is not None and state.game == "kabaleo":
            board.update(render.kabaleo_table(state.view))
        else:
            board.update(Text(f"Waiting for players to join match {state.match_id}", style="italic"))
        self.query_one("#status", Static).update(render.status(state))
        self.query_one("#hands", Static).update(
            render.kabaleo_hands(state) if state.game == "kabaleo" else ""
        )
        self.query_one("#result", Static).update(render.result(state))
        history = self.query_one("#history", Static)
        history.update(render.history(state))
        history.border_title = f"moves played ({len(state.history)})"
        if self.handle is not None:
            self._redraw_moves()

    def _redraw_moves(self) -> None:
        moves = self.query_one("#moves", OptionList)
        if self.state.legal_moves != self._shown_moves:
            self._shown_moves = self.state.legal_moves
            moves.clear_options()
            moves.add_options(render.move_order(self._shown_moves))
        moves.border_title = f"legal moves ({len(self._shown_moves)})" if self._shown_moves else "moves"

    def show_message(self, text: str, *, error: bool = False) -> None:
        """The line under the move input: the server's verdict on the last move."""
        self.message = text
        if self.handle is not None and self.on_stack:
            self.query_one("#message", Static).update(Text(text, style="bold red" if error else ""))

    @on(Input.Submitted, "#move-input")
    def _typed(self, event: Input.Submitted) -> None:
        move = event.value.strip()
        event.input.value = ""
        if move:
            self.submit(move)

    @on(OptionList.OptionSelected, "#moves")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.submit(str(event.option.prompt))

    @work(group="submit")
    async def submit(self, move: str) -> None:
        """Send a move; the position changes only when the server's event says so."""
        assert self.handle is not None
        ply = self.state.turn_ply if self.state.my_turn else 0
        try:
            await self.client.submit_move(self.handle, move, ply=ply)
        except ZigguratError as error:
            self.show_message(
                f"✗ {move} refused: {error.reason or error.code.name}: {error.message}", error=True
            )
        else:
            self.show_message(f"✓ played {move}")

    def action_leave(self) -> None:
        """Back to where we came from (the lobby)."""
        self.workers.cancel_group(self, "follow")
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:
            self.app.exit()

    def action_resign(self) -> None:
        """Ask first; resign this seat only when the player confirms (spectators cannot)."""
        if self.handle is None or self.state.ended is not None:
            return

        def answered(confirmed: bool | None) -> None:
            if confirmed:
                self.resign()

        self.app.push_screen(ConfirmResign(), answered)

    @work(group="submit")
    async def resign(self) -> None:
        """Resign this seat (after the confirmation)."""
        assert self.handle is not None
        try:
            await self.client.resign(self.handle)
        except ZigguratError as error:
            self.show_message(f"resign refused: {error.reason}: {error.message}", error=True)
