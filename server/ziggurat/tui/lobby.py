"""The lobby: open matches to join, running ones to watch, and a form to create one.

Why one screen: on a LAN the usual flow is "someone creates, the others join
within seconds", so the list refreshes itself and creating a match joins it at once.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Button, Checkbox, Footer, Input, Label, OptionList, Select, Static
from textual.widgets.option_list import Option

from ziggurat.tui.forms import FormError, MatchForm, describe_match, parse_form
from ziggurat.tui.game import GameScreen
from ziggurat.tui.seats import SeatStore
from ziggurat.v1 import match_pb2
from ziggurat_client.client import ZigguratClient, ZigguratError

REFRESH_SECONDS = 2.0


class LobbyScreen(Screen[None]):
    """Lists waiting and running matches; Enter on one joins (or watches) it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f5", "refresh", "Refresh"),
        Binding("escape", "app.quit", "Quit"),
    ]

    DEFAULT_CSS = """
    #lobby { height: 1fr; }
    #matches-pane { width: 1fr; }
    #matches { height: 1fr; border: round $secondary; }
    #create { width: 46; border: round $secondary; padding: 0 1; }
    #create Input, #create Select { margin-bottom: 0; }
    #lobby-message { height: auto; padding: 0 1; }
    .row { height: auto; }
    .row Label { width: 16; padding: 1 0 0 0; }
    .row Input, .row Select { width: 1fr; }
    """

    def __init__(
        self, client: ZigguratClient, player_name: str, *, seats: SeatStore | None = None, server: str = ""
    ) -> None:
        super().__init__()
        self.client = client
        self.player_name = player_name
        self.matches: dict[str, match_pb2.Match] = {}
        self.seats = seats or SeatStore()
        self.server = server

    def compose(self) -> ComposeResult:
        """Match list left, create form right."""
        yield Static(f"ziggurat · {self.client.address} · playing as {self.player_name}", id="title")
        with Horizontal(id="lobby"):
            with Vertical(id="matches-pane"):
                yield OptionList(id="matches")
                yield Static(id="lobby-message")
            with VerticalScroll(id="create"):
                yield _row(
                    "Game",
                    Select(
                        [("Pylos", "pylos"), ("Kabaleo", "kabaleo")],
                        value="pylos",
                        allow_blank=False,
                        id="game",
                    ),
                )
                yield _row("Seats", Input("2", id="seats", restrict=r"[0-9]*"))
                yield _row(
                    "Pylos variant",
                    Select(
                        [(v, v) for v in ("standard", "beginner", "advanced")],
                        value="standard",
                        allow_blank=False,
                        id="variant",
                    ),
                )
                yield _row("Max moves", Input("0", id="max-moves", restrict=r"[0-9]*"))
                yield _row(
                    "Kabaleo deal",
                    Select(
                        [("random", "random"), ("equal", "equal")],
                        value="random",
                        allow_blank=False,
                        id="deal",
                    ),
                )
                yield Checkbox("last-stack rule", id="last-stack")
                yield _row("Per move (s)", Input("0", id="per-move", restrict=r"[0-9.]*"))
                yield _row("Clock base (s)", Input("0", id="base", restrict=r"[0-9.]*"))
                yield _row("Increment (s)", Input("0", id="increment", restrict=r"[0-9.]*"))
                yield _row(
                    "On timeout",
                    Select(
                        [("forfeit", "forfeit"), ("random move", "random")],
                        value="forfeit",
                        allow_blank=False,
                        id="timeout",
                    ),
                )
                yield Button("Create and join", id="create-button", variant="primary")
        yield Footer()

    def on_mount(self) -> None:
        """List the matches now and every few seconds."""
        self.matches_list.border_title = "open matches (Enter: join) · running (Enter: watch)"
        self.action_refresh()
        self.set_interval(REFRESH_SECONDS, self.action_refresh)

    @property
    def matches_list(self) -> OptionList:
        """The list of matches."""
        return self.query_one("#matches", OptionList)

    @work(exclusive=True, group="refresh")
    async def action_refresh(self) -> None:
        """Fetch waiting and running matches (keeps the highlighted one highlighted)."""
        try:
            waiting = await self.client.list_matches(match_pb2.MATCH_STATUS_WAITING)
            active = await self.client.list_matches(match_pb2.MATCH_STATUS_ACTIVE)
        except ZigguratError as error:
            self.say(f"cannot list matches: {error.reason or error.code.name}: {error.message}")
            return
        self.matches = {m.match_id: m for m in [*waiting, *active]}
        listing = self.matches_list
        highlighted = listing.highlighted_option.id if listing.highlighted_option else None
        listing.clear_options()
        listing.add_options(Option(describe_match(m), id=m.match_id) for m in self.matches.values())
        if not self.matches:
            listing.add_option(Option("no open match: create one →", id="", disabled=True))
        if highlighted in self.matches:
            listing.highlighted = listing.get_option_index(highlighted)

    def say(self, text: str) -> None:
        """A line under the list: errors and hints."""
        self.query_one("#lobby-message", Static).update(text)

    @on(OptionList.OptionSelected, "#matches")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        match = self.matches.get(event.option.id or "")
        if match is None:
            return
        held = self.seats.load(self.server, match.match_id)
        if held is not None:  # our own seat: back into it, never as a spectator
            self.app.push_screen(GameScreen(self.client, match.match_id, held))
        elif match.status == match_pb2.MATCH_STATUS_WAITING:
            self.join(match.match_id)
        else:
            self.app.push_screen(GameScreen(self.client, match.match_id))

    @work(group="join")
    async def join(self, match_id: str) -> None:
        """Take a seat and open the game screen for it."""
        try:
            handle = await self.client.join(match_id, self.player_name)
        except ZigguratError as error:
            self.say(f"cannot join: {error.reason or error.code.name}: {error.message}")
            return
        self.seats.save(self.server, handle)
        self.app.push_screen(GameScreen(self.client, match_id, handle))

    @on(Button.Pressed, "#create-button")
    @work(group="join")
    async def create(self) -> None:
        """Create the match described by the form, then join it."""
        try:
            config, time_control = parse_form(self._form())
        except FormError as error:
            self.say(f"cannot create: {error}")
            return
        try:
            match = await self.client.create_match(config, time_control=time_control)
        except ZigguratError as error:
            self.say(f"cannot create: {error.reason or error.code.name}: {error.message}")
            return
        self.join(match.match_id)

    def _form(self) -> MatchForm:
        def text(widget_id: str) -> str:
            return self.query_one(f"#{widget_id}", Input).value

        def choice(widget_id: str) -> str:
            return str(self.query_one(f"#{widget_id}", Select).value)

        return MatchForm(
            game=choice("game"),
            seats=text("seats"),
            variant=choice("variant"),
            max_moves=text("max-moves"),
            deal=choice("deal"),
            last_stack=self.query_one("#last-stack", Checkbox).value,
            per_move=text("per-move"),
            base=text("base"),
            increment=text("increment"),
            on_timeout=choice("timeout"),
        )

    @on(Select.Changed, "#game")
    def _game_changed(self, event: Select.Changed) -> None:
        seats = self.query_one("#seats", Input)
        if event.value == "pylos":
            seats.value = "2"
        elif seats.value == "2":
            seats.value = "3"


def _row(label: str, widget: Input | Select[str]) -> Horizontal:
    return Horizontal(Label(label), widget, classes="row")
