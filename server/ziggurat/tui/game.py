"""The game screen: board, seats and clocks, move entry, and the end-of-game reveal.

Why it is built this way: the screen draws only what the server's event stream
says (through :class:`MatchState`); a typed move is sent as is and the server's
verdict decides, so an illegal move shows the server's reason and changes nothing.
A spectator (``ziggurat watch``) gets the same screen without the move widgets.
A game with no board drawn here, or any game once Ctrl+N chose the notation view, is shown by
:mod:`ziggurat.tui.generic_board` (the position text) with the legal-move list focusable.
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
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Footer, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from ziggurat.rules.registry import GAMES
from ziggurat.tui import generic_board, kabaleo_board, pylos_board, render
from ziggurat.tui.i18n import t, translate_bindings
from ziggurat.tui.model import MatchState
from ziggurat.tui.recovery import DONE, Recovery, bases, with_recovery
from ziggurat_client.client import MatchHandle, ZigguratClient, ZigguratError
from ziggurat_client.runner import RETRYABLE

CLOCK_TICK_SECONDS = 0.1


class ConfirmResign(ModalScreen[bool]):
    """Asks "Resign this game?": y or the Resign button confirms; n, Esc or Keep playing cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "game.resign"),
        Binding("n,escape", "answer(False)", "game.keepPlaying"),
    ]

    DEFAULT_CSS = """
    ConfirmResign { align: center middle; }
    #confirm { width: 44; height: auto; border: thick $error; padding: 1 2; background: $surface; }
    #confirm Horizontal { height: auto; margin-top: 1; }
    """

    def __init__(self) -> None:
        super().__init__()
        translate_bindings(self)

    def compose(self) -> ComposeResult:
        """The question and two buttons (keep playing is the default)."""
        with Vertical(id="confirm"):
            yield Label(t("game.resignAsk"))
            with Horizontal():
                yield Button(f"{t('game.keepPlaying')} (n)", id="keep", variant="primary")
                yield Button(f"{t('game.resign')} (y)", id="resign", variant="error")

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
    """Plays one seat (``handle``) or spectates (``handle=None``) one match.

    Laid out to fit 80x24: board and the game's facts on the left; turn, clocks, result,
    legal moves and the history on the right; one line for the move box at the bottom.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "leave", "game.back"),
        Binding("ctrl+r", "resign", "game.resignMenu"),
        Binding("ctrl+t", "claim", "game.claim"),
        Binding("ctrl+n", "notation", "game.notation"),
    ]

    DEFAULT_CSS = """
    GameScreen { layout: vertical; }
    #title { height: 1; background: $primary; color: $text; padding: 0 1; }
    #main { height: 1fr; }
    #left { width: auto; max-width: 46; height: 1fr; overflow-y: auto; }
    #board { width: auto; padding: 0 1; border: round $secondary; height: auto; }
    #facts { width: auto; height: auto; padding: 0 1; }
    #side { width: 1fr; height: 1fr; }
    #status, #result { height: auto; padding: 0 1; }
    #moves { height: 1fr; min-height: 4; border: round $secondary; }
    #history-pane { height: 1fr; min-height: 4; border: round $secondary; }
    #history { height: auto; }
    #entry { height: auto; }
    #move-input { width: 34; }
    #message { width: 1fr; height: auto; max-height: 3; padding: 0 1; }
    """

    def __init__(
        self,
        client: ZigguratClient,
        match_id: str,
        handle: MatchHandle | None = None,
        *,
        notice: str = "",
        notation: bool = False,
    ) -> None:
        super().__init__()
        translate_bindings(self)
        self.client = client
        self.handle = handle
        self.state = MatchState(match_id, my_seat=handle.seat if handle else 0)
        self._shown_moves: tuple[object, ...] = ()
        self.message = ""
        self.notice = notice
        self.recovery: Recovery | None = None
        self.notation = notation  # the notation view chosen (Ctrl+N), for a game drawn here too

    @property
    def generic(self) -> bool:
        """Whether the generic board shows: the notation view chosen, or a game with no board here."""
        game = self.state.config.game
        return self.notation or (bool(game) and not generic_board.has_board(game))

    def compose(self) -> ComposeResult:
        """Board and facts left; status, result, moves and history right; the move box below."""
        yield Static(id="title")
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield Static(id="board")
                yield Static(id="facts")
            with Vertical(id="side"):
                yield Static(id="status")
                yield Static(id="result")
                if self.handle is not None:
                    yield OptionList(id="moves")
                with VerticalScroll(id="history-pane"):
                    yield Static(id="history")
        if self.handle is not None:
            with Horizontal(id="entry"):
                yield Input(placeholder=t("game.moveInput"), id="move-input", compact=True)
                yield Static(id="message")
        else:
            yield Static(id="message")  # a spectator's line: connection trouble
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
        if self.notice:
            self.show_message(self.notice, error=True)
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
                    self.state.clock_offset_ms = self.client.server_clock_offset_ms
                    self.state.apply(event)
                    self.redraw()
                    delay = 0.1
            except ZigguratError as error:
                if error.code not in RETRYABLE:
                    self.show_message(f"{error.reason or error.code.name}: {error.message}", error=True)
                    return
                self.show_message(t("game.reconnecting"), error=True)
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
            for status in self.query("#status").results(Static):  # none once the app is closing
                status.update(render.status(self.state))

    def redraw(self) -> None:
        """Redraw every part from the state (nothing once the screen is being taken down)."""
        if not self.on_stack:
            return
        try:
            self._redraw()
        except NoMatches:
            return  # the app is closing: its widgets went first

    def _redraw(self) -> None:
        state = self.state
        if self.recovery is not None and (
            not state.my_turn or self.recovery.base not in bases(state.legal_moves)
        ):
            self.recovery = None  # the turn is over (or another began): nothing is half-chosen
        rules = GAMES.get(state.game)
        game = (
            rules.title
            if rules is not None
            else (generic_board.game_name(state.config.game) if state.config.game else t("game.match"))
        )
        role = t("game.youAreSeat", seat=state.my_seat) if state.my_seat else t("game.spectating")
        self.query_one("#title", Static).update(t("game.title", game=game, id=state.match_id, role=role))
        board = self.query_one("#board", Static)
        facts = self.query_one("#facts", Static)
        if state.view is not None and self.generic:
            board.update(generic_board.draw(state.view))
            facts.update("")
        elif state.view is not None and state.game == "pylos":
            picks: list[str] = []
            pending = None
            if self.recovery is not None:  # the ball being played is drawn, with what may come back
                picks = self.recovery.choices(state.legal_moves)
                pending = (self.recovery.base, "L" if state.my_seat == 1 else "D")
            last = state.last_move.move if state.last_move is not None else ""
            board.update(pylos_board.draw(state.view, last_move=last, picks=picks, pending=pending))
            facts.update(pylos_board.summary(state.view))
        elif state.view is not None and state.game == "kabaleo":
            board.update(kabaleo_board.stacks(state.view))
            facts.update(render.kabaleo_hands(state))
        else:
            board.update(Text(t("game.waitingJoin", id=state.match_id), style="italic"))
            facts.update("")
        self.query_one("#status", Static).update(render.status(state))
        self.query_one("#result", Static).update(render.result(state))
        history = self.query_one("#history", Static)
        history.update(render.history(state, limit=len(state.history)))
        pane = self.query_one("#history-pane", VerticalScroll)
        pane.border_title = t("game.movesPlayed", count=len(state.history))
        pane.scroll_end(animate=False)
        if self.handle is not None:
            self.query_one("#moves", OptionList).display = state.ended is None  # room for the result
            self._redraw_moves()

    def _redraw_moves(self) -> None:
        """The legal moves (a Pylos square's recoveries once each), or the balls a recovery may take."""
        moves = self.query_one("#moves", OptionList)
        legal = self.state.legal_moves
        if self.recovery is not None:
            choices = self.recovery.choices(legal)
            options = [Option(_choice_label(ball), id=ball) for ball in choices]
            title = t("game.takeBackTitle")
        elif self.state.game == "pylos" and not self.generic:
            options = [
                Option(t("game.withTakeBack", move=base) if with_recovery(base, legal) else base, id=base)
                for base in render.move_order(tuple(bases(legal)))
            ]
            title = t("game.legalMoves", count=len(options)) if options else t("game.moves")
        else:
            options = [Option(move, id=move) for move in render.move_order(legal)]
            title = t("game.legalMoves", count=len(options)) if options else t("game.moves")
        shown = tuple((option.id, str(option.prompt)) for option in options)
        if shown != self._shown_moves:
            self._shown_moves = shown
            moves.clear_options()
            moves.add_options(options)
        moves.border_title = title
        # The generic board's moves are picked in the list (Tab, arrows, Enter); otherwise the
        # move box keeps the keyboard and the list is for reading.
        if moves.can_focus != self.generic:
            moves.can_focus = self.generic
            if not self.generic and moves.has_focus:
                self.query_one("#move-input", Input).focus()

    def show_message(self, text: str, *, error: bool = False) -> None:
        """The line beside the move input: the server's verdict on the last move, or a prompt."""
        self.message = text
        if self.on_stack:
            for line in self.query("#message").results(Static):  # none once the app is closing
                line.update(Text(text, style="bold red" if error else ""))

    @on(Input.Submitted, "#move-input")
    def _typed(self, event: Input.Submitted) -> None:
        move = event.value.strip()
        event.input.value = ""
        if move:
            self.enter(move)

    @on(OptionList.OptionSelected, "#moves")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.enter(event.option.id or str(event.option.prompt))

    def enter(self, text: str) -> None:
        """A move typed or clicked: played as is, unless it starts or continues a Pylos recovery.

        A Pylos ball that completes a square is not sent yet: the balls to take back are
        then picked one at a time (typed or clicked), and the whole move goes when complete.
        """
        legal = self.state.legal_moves
        if self.generic:
            self.submit(text)  # whole moves only: no guided Pylos recovery in the notation view
            return
        if self.recovery is not None:
            ball = text.removeprefix("x")
            if ball == DONE or ball in self.recovery.choices(legal):
                self._recover(ball)
                return
            self.recovery = None  # something else typed: a new move
        if self.state.game == "pylos" and self.state.my_turn and with_recovery(text, legal):
            self.recovery = Recovery(text)
            self.show_message(self.recovery.prompt())
            self.redraw()
            return
        self.submit(text)

    def _recover(self, ball: str) -> None:
        assert self.recovery is not None
        legal = self.state.legal_moves
        recovery = self.recovery if ball == DONE else self.recovery.pick(ball)
        if ball != DONE and recovery.choices(legal) != [DONE] and len(recovery.picked) < 2:
            self.recovery = recovery
            self.show_message(recovery.prompt())
            self.redraw()
            return
        move = recovery.move(legal)
        self.recovery = None
        self.redraw()
        if move is not None:
            self.submit(move)

    def action_notation(self) -> None:
        """Ctrl+N: the notation view (position text, moves picked from the list) on or off."""
        self.notation = not self.notation
        self.recovery = None
        self.show_message(t("game.notationOn") if self.generic else t("game.notationOff"))
        self.redraw()

    def action_leave(self) -> None:
        """Esc: drop a recovery being chosen; otherwise back to where we came from (the lobby)."""
        if self.recovery is not None:
            self.recovery = None
            self.show_message(t("game.recoveryDropped"))
            self.redraw()
            return
        self.workers.cancel_group(self, "follow")
        if len(self.app.screen_stack) > 2:
            self.app.pop_screen()
        else:
            self.app.exit()

    @work(group="submit")
    async def submit(self, move: str) -> None:
        """Send a move; the position changes only when the server's event says so."""
        assert self.handle is not None
        ply = self.state.turn_ply if self.state.my_turn else 0
        try:
            await self.client.submit_move(self.handle, move, ply=ply)
        except ZigguratError as error:
            self.show_message(
                t("game.refused", move=move, why=f"{error.reason or error.code.name}: {error.message}"),
                error=True,
            )
        else:
            self.show_message(t("game.played", move=move))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A spectator holds no seat: Resign and Claim are neither offered (in the footer) nor run."""
        return not (action in ("resign", "claim") and self.handle is None)

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
            self.show_message(t("game.resignRefused", why=f"{error.reason}: {error.message}"), error=True)

    def action_claim(self) -> None:
        """Ctrl+T: claim the match against the seats that left (ClaimAbandoned); the server says
        how long to wait while nobody has been away long enough."""
        if self.handle is not None and self.state.ended is None:
            self.claim()

    @work(group="submit")
    async def claim(self) -> None:
        """Claim the match (the server decides which seats have been away long enough)."""
        assert self.handle is not None
        try:
            seats = await self.client.claim_abandoned(self.handle)
        except ZigguratError as error:
            self.show_message(t("game.notClaimed", why=error.message), error=True)
        else:
            gone = ", ".join(t("game.seat", seat=seat) for seat in seats)
            self.show_message(t("game.claimed", seats=gone))


def _choice_label(ball: str) -> str:
    return t("game.done") if ball == DONE else t("game.takeBack", ball=ball)
