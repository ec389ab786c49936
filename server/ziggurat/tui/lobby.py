"""The lobby: open matches to join, running ones to watch, and a form to create one.

Why one screen: on a LAN the usual flow is "someone creates, the others join
within seconds", so the list refreshes itself and creating a match joins it at once.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, Checkbox, Footer, Input, Label, OptionList, Select, Static
from textual.widgets.option_list import Option

from ziggurat.tui.forms import (
    FormError,
    MatchForm,
    choice_label,
    choices_of,
    describe_match,
    is_switch,
    option_hint,
    option_label,
    parse_form,
)
from ziggurat.tui.game import GameScreen
from ziggurat.tui.i18n import t, translate_bindings
from ziggurat.tui.opponents import Opponent, opponents, parse_key, seat_bot
from ziggurat.tui.seats import SeatStore
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.v1.match_service_pb2 import BuiltinBot
from ziggurat_client.client import ZigguratClient, ZigguratError

REFRESH_SECONDS = 2.0
PEOPLE = "people"  # the create form's "Opponents" value for "people join from their own screens"


class LobbyScreen(Screen[None]):
    """Lists waiting and running matches; Enter on one joins (or watches) it.

    The create form and the bot chooser are compact (one line per control) so that the
    whole lobby, Create button included, fits an 80x24 terminal.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f5", "refresh", "lobby.refresh"),
        Binding("escape", "app.quit", "app.quit"),
    ]

    DEFAULT_CSS = """
    #lobby { height: 1fr; }
    #matches-pane { width: 1fr; }
    #matches { height: 1fr; border: round $secondary; }
    #side { width: 38; height: 1fr; overflow-y: auto; }
    #create, #bots { height: auto; border: round $secondary; padding: 0 1; }
    #game-fields { height: auto; }
    #create SelectCurrent #label { text-wrap: nowrap; text-overflow: ellipsis; }
    #lobby-message { height: auto; max-height: 4; padding: 0 1; }
    .row { height: 1; }
    .row Label { width: 15; }
    .row Input, .row Select { width: 1fr; }
    #create-button, #add-bot { width: 1fr; }
    #bot { width: 1fr; }
    """

    def __init__(
        self, client: ZigguratClient, player_name: str, *, seats: SeatStore | None = None, server: str = ""
    ) -> None:
        super().__init__()
        translate_bindings(self)
        self.client = client
        self.player_name = player_name
        self.matches: dict[str, match_pb2.Match] = {}
        self.seats = seats or SeatStore()
        self.server = server
        self.builtin_bots: list[BuiltinBot] = []
        self.opponents: list[Opponent] = []
        self.games: dict[str, game_pb2.GameInfo] = {}
        """The games the server hosts (ListGames), by name: what the create form offers."""

    def compose(self) -> ComposeResult:
        """Match list left; the create form and the bot chooser right."""
        yield Static(t("lobby.title", address=self.client.address, name=self.player_name), id="title")
        with Horizontal(id="lobby"):
            with Vertical(id="matches-pane"):
                yield OptionList(id="matches")
                yield Static(id="lobby-message")
            with Vertical(id="side"):
                with Vertical(id="create"):
                    yield _row(t("form.game"), _select([("…", "")], "game"))
                    seats = Input("2", id="seats", restrict=r"[0-9]*", compact=True)
                    yield _row(t("form.seats"), seats, only="seats")
                    # Each game's option fields, mounted once ListGames has answered.
                    yield Vertical(id="game-fields")
                    yield _row(
                        t("form.perMove"), Input("0", id="per-move", restrict=r"[0-9.]*", compact=True)
                    )
                    yield _row(t("form.base"), Input("0", id="base", restrict=r"[0-9.]*", compact=True))
                    yield _row(
                        t("form.increment"), Input("0", id="increment", restrict=r"[0-9.]*", compact=True)
                    )
                    yield _row(
                        t("form.onTimeout"),
                        _select(
                            [(t("timeout.forfeit"), "forfeit"), (t("timeout.random"), "random")], "timeout"
                        ),
                    )
                    yield _row(t("form.opponents"), _select([(t("form.people"), PEOPLE)], "opponents"))
                    yield Button(t("form.create"), id="create-button", variant="primary", compact=True)
                with Vertical(id="bots"):
                    yield Select([], id="bot", prompt=t("bots.none"), compact=True)
                    yield Button(t("bots.seat"), id="add-bot", compact=True)
        yield Footer()

    def on_mount(self) -> None:
        """List the matches (and the bots) now and every few seconds."""
        self._show_fields_of("")
        self.matches_list.border_title = t("lobby.matches")
        self.query_one("#create").border_title = t("form.title")
        self.query_one("#bots").border_title = t("bots.title")
        self.action_refresh()
        self.set_interval(REFRESH_SECONDS, self.action_refresh)

    @property
    def matches_list(self) -> OptionList:
        """The list of matches."""
        return self.query_one("#matches", OptionList)

    @work(exclusive=True, group="refresh")
    async def action_refresh(self) -> None:
        """Fetch waiting and running matches and the bots (keeps the highlighted match highlighted)."""
        try:
            waiting = await self.client.list_matches(match_pb2.MATCH_STATUS_WAITING)
            active = await self.client.list_matches(match_pb2.MATCH_STATUS_ACTIVE)
        except ZigguratError as error:
            self.say(t("lobby.cannotList", why=f"{error.reason or error.code.name}: {error.message}"))
            return
        self.matches = {m.match_id: m for m in [*waiting, *active]}
        try:
            listing = self.matches_list
        except NoMatches:  # the lobby was taken down (the app is closing) while the list came
            return
        highlighted = listing.highlighted_option.id if listing.highlighted_option else None
        listing.clear_options()
        listing.add_options(Option(describe_match(m), id=m.match_id) for m in self.matches.values())
        if not self.matches:
            listing.add_option(Option(t("lobby.noMatches"), id="", disabled=True))
        if highlighted in self.matches:
            listing.highlighted = listing.get_option_index(highlighted)
        if not self.games:
            await self._load_games()
        await self._refresh_bots()

    async def _load_games(self) -> None:
        """The games the server hosts (asked until it answers), into the create form: the game
        chooser, and each game's option fields (hidden unless that game is chosen)."""
        try:
            listed = await self.client.list_games()
        except ZigguratError as error:
            self.say(t("lobby.cannotList", why=f"{error.reason or error.code.name}: {error.message}"))
            return
        if not listed or self.games:
            return
        try:
            fields = self.query_one("#game-fields", Vertical)
            chooser = self.query_one("#game", Select)
        except NoMatches:  # the lobby was taken down (the app is closing) while the games came
            return
        await fields.mount_all(widget for info in listed for widget in _option_fields(info))
        if not chooser.is_attached:
            return
        chooser.set_options([(info.title or info.name, info.name) for info in listed])
        self.games = {info.name: info for info in listed}  # the form is ready: every game chosen can be
        chooser.value = listed[0].name
        self._choose(listed[0].name)

    async def _refresh_bots(self) -> None:
        """The built-in bots (asked once) and the remote bots connected now, into both choosers."""
        try:
            if not self.builtin_bots:
                self.builtin_bots = await self.client.list_builtin_bots()
            remote = await self.client.list_bots()
        except ZigguratError:
            remote = []  # an older server without these calls: people only
        found = opponents(self.builtin_bots, remote)
        if found == self.opponents or self not in self.app.screen_stack:
            return  # unchanged, or the lobby was left while asking
        self.opponents = found
        self._fill_opponents()
        chooser = self.query_one("#bot", Select)
        keep = chooser.value
        chooser.set_options([(bot.label, bot.key) for bot in found])
        if keep != Select.BLANK and any(bot.key == keep for bot in found):
            chooser.value = keep
        elif found:
            chooser.value = found[0].key

    def _fill_opponents(self) -> None:
        """The create form's opponents: people, or a bot that plays the chosen game."""
        chooser = self.query_one("#opponents", Select)
        if not chooser.children:
            return  # not composed yet (a change at start-up): filled when the bots are known
        keep = chooser.value
        info = self.games.get(str(self.query_one("#game", Select).value))
        game = info.game if info is not None else 0
        choices = [(t("form.people"), PEOPLE)] + [
            (bot.label, bot.key) for bot in self.opponents if bot.plays(game)
        ]
        chooser.set_options(choices)
        chooser.value = keep if any(value == keep for _, value in choices) else PEOPLE

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
    async def join(self, match_id: str, bots: tuple[str, ...] = ()) -> None:
        """Take a seat, seat the chosen bots in the others, and open the game screen."""
        try:
            handle = await self.client.join(match_id, self.player_name)
        except ZigguratError as error:
            self.say(t("lobby.cannotJoin", why=f"{error.reason or error.code.name}: {error.message}"))
            return
        self.seats.save(self.server, handle)
        notice = ""
        for key in bots:
            try:
                await seat_bot(self.client, match_id, key)
            except ZigguratError as error:
                notice = t(
                    "bots.notSeated",
                    name=parse_key(key)[1],
                    why=f"{error.reason or error.code.name}: {error.message}",
                )
                break
        self.app.push_screen(GameScreen(self.client, match_id, handle, notice=notice))

    @on(Button.Pressed, "#create-button")
    @work(group="join")
    async def create(self) -> None:
        """Create the match described by the form, join it, and seat the chosen opponents."""
        try:
            config, time_control = parse_form(self._form(), self.games)
        except FormError as error:
            self.say(t("lobby.cannotCreate", why=error))
            return
        try:
            match = await self.client.create_match(config, time_control=time_control)
        except ZigguratError as error:
            self.say(t("lobby.cannotCreate", why=f"{error.reason or error.code.name}: {error.message}"))
            return
        opponent = str(self.query_one("#opponents", Select).value)
        self.join(match.match_id, (opponent,) * (config.seats - 1) if opponent != PEOPLE else ())

    @on(Button.Pressed, "#add-bot")
    @work(group="join")
    async def add_bot(self) -> None:
        """Seat the chosen bot (built-in or remote) in the highlighted waiting match."""
        key = self.query_one("#bot", Select).value
        option = self.matches_list.highlighted_option
        match = self.matches.get(option.id or "") if option is not None else None
        if key == Select.BLANK:
            self.say(t("bots.noneToSeat"))
            return
        if match is None or match.status != match_pb2.MATCH_STATUS_WAITING:
            self.say(t("bots.highlight"))
            return
        name = parse_key(str(key))[1]
        try:
            seat = await seat_bot(self.client, match.match_id, str(key))
        except ZigguratError as error:
            self.say(
                t("bots.cannotSeat", name=name, why=f"{error.reason or error.code.name}: {error.message}")
            )
            return
        self.say(t("bots.seated", name=name, seat=seat, match=match.match_id))
        self.action_refresh()

    def _form(self) -> MatchForm:
        def text(widget_id: str) -> str:
            return self.query_one(f"#{widget_id}", Input).value

        def choice(widget_id: str) -> str:
            return str(self.query_one(f"#{widget_id}", Select).value)

        game = choice("game")
        info = self.games.get(game)
        options: list[tuple[str, str]] = []
        for option in info.options if info is not None else ():
            field = self.query_one(f"#{field_id(game, option.key)}")
            if isinstance(field, Checkbox):
                options.append((option.key, str(field.value).lower()))
            elif isinstance(field, Input):
                options.append((option.key, field.value))
            elif isinstance(field, Select):
                options.append((option.key, str(field.value)))
        return MatchForm(
            game=game,
            seats=text("seats"),
            options=tuple(options),
            per_move=text("per-move"),
            base=text("base"),
            increment=text("increment"),
            on_timeout=choice("timeout"),
        )

    @on(Select.Changed, "#game")
    def _game_changed(self, event: Select.Changed) -> None:
        self._choose(str(event.value))

    def _choose(self, game: str) -> None:
        """The form for ``game``: a seat count it takes, its fields, the bots that play it."""
        info = self.games.get(game)
        if info is None:
            return
        seats = self.query_one("#seats", Input)
        if not seats.value.isdigit() or not info.min_seats <= int(seats.value) <= info.max_seats:
            seats.value = str(info.min_seats)  # a count the game takes (the only one, for most)
        self._show_fields_of(info.name)
        self._fill_opponents()

    def _show_fields_of(self, game: str) -> None:
        """Only the chosen game's fields (a Pylos variant means nothing to Kabaleo), and the seat
        count only when the game has a choice of it; the hidden ones keep their values and are
        not read."""
        info = self.games.get(game)
        for widget in self.query(".only-seats"):
            widget.display = info is not None and info.max_seats > info.min_seats
        for widget in self.query(".game-field"):
            widget.display = widget.has_class(f"only-{css_name(game)}")


def css_name(text: str) -> str:
    """A game name or option key as a class or id fragment ("phantom-ttt", "max_moves" → "max-moves")."""
    return "".join(c if c.isalnum() else "-" for c in text.lower())


def field_id(game: str, key: str) -> str:
    """The id of a game's option field: "pylos-variant", "kabaleo-last-stack"."""
    return f"{css_name(game)}-{css_name(key)}"


def _option_fields(info: game_pb2.GameInfo) -> list[Widget]:
    """One line per option the game declares, at its default: a checkbox for false/true, a choice
    for a few values, a text field otherwise (its hint, translated or the server's, as placeholder)."""
    out: list[Widget] = []
    classes = f"game-field only-{css_name(info.name)}"
    for option in info.options:
        widget_id = field_id(info.name, option.key)
        label = option_label(info.name, option)
        if is_switch(option):
            box = Checkbox(label, option.default_value == "true", id=widget_id, compact=True, classes=classes)
            box.tooltip = option_hint(info.name, option)
            out.append(box)
            continue
        field: Input | Select[str]
        if option.choices:
            values = choices_of(option)
            field = Select(
                [(choice_label(info.name, option, v), v) for v in values],
                value=option.default_value if option.default_value in values else values[0],
                allow_blank=False,
                id=widget_id,
                compact=True,
            )
        else:
            field = Input(
                option.default_value, placeholder=option_hint(info.name, option), id=widget_id, compact=True
            )
        field.tooltip = option_hint(info.name, option)
        row = _row(label, field)
        row.add_class(*classes.split())
        out.append(row)
    return out


def _row(label: str, widget: Input | Select[str], *, only: str = "") -> Horizontal:
    """A label and its field on one line; ``only``: a class saying when it shows (else always)."""
    return Horizontal(Label(label), widget, classes=f"row only-{only}" if only else "row")


def _select(options: list[tuple[str, str]], widget_id: str) -> Select[str]:
    """A one-line choice that starts on its first option."""
    return Select(options, value=options[0][1], allow_blank=False, id=widget_id, compact=True)
