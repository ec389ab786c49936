"""The ``ziggurat play`` / ``ziggurat watch`` application: server → lobby → game.

Why one app for both commands: watching is playing without a seat, so both share
the server choice and the game screen; only the entry point differs.
"""

from __future__ import annotations

from functools import partial
from typing import ClassVar

from textual import work
from textual.app import App
from textual.binding import Binding, BindingType

from ziggurat.cli import exits
from ziggurat.cli.tls_options import Tls
from ziggurat.tui.discovery import ServerInfo, discover
from ziggurat.tui.game import GameScreen
from ziggurat.tui.i18n import set_language, translate_bindings
from ziggurat.tui.lobby import LobbyScreen
from ziggurat.tui.seats import SeatStore
from ziggurat.tui.servers import Discover, ServerScreen
from ziggurat.tui.watching import WatchError, check_watchable
from ziggurat_client.client import ZigguratClient


class ZigguratApp(App[None]):
    """Plays (``watch_match=None``) or spectates one match (``watch_match=ID``)."""

    TITLE = "ziggurat"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "app.quit"),
        # Ctrl-C ends the program, as in every other command (textual's own binding only
        # hints at Ctrl+Q); priority: also when a text box, which would copy, has the focus.
        Binding("ctrl+c", "interrupt", show=False, priority=True),
    ]
    # The focused control must stand out on every screen: textual's compact fields differ
    # from the others only by a 5% tint (colour 234 vs 235), so they get the accent colour
    # as background, and a focused pane a double border in the accent colour.
    CSS = """
    #title { height: 1; background: $primary; color: $text; padding: 0 1; }
    Input.-textual-compact:focus { background: $accent 45%; }
    Select.-textual-compact:focus > SelectCurrent { background: $accent 45%; }
    Checkbox.-textual-compact:focus { background: $accent 45%; }
    Button:focus { background: $accent 60%; }
    #matches:focus, #servers:focus, #history-pane:focus { border: double $accent; }
    #address:focus { border: tall $accent; }
    """

    def __init__(
        self,
        *,
        server: str | None = None,
        player_name: str = "player",
        watch_match: str | None = None,
        discover_servers: Discover | None = None,
        seats: SeatStore | None = None,
        tls: Tls | None = None,
        language: str = "en",
    ) -> None:
        """``tls``: how to speak to ``server`` (``--tls``/``--ca``); a server found on the LAN
        that says it speaks TLS is spoken to with TLS, trusting ``tls``'s CA if one was given.
        ``language``: the screens' language (``en``, ``ro``, ``hu``, ``eu``), for the whole process."""
        set_language(language)
        super().__init__()
        translate_bindings(self)
        self.tls = tls or Tls(enabled=False, root=None)
        self.server_address = server
        self.player_name = player_name
        self.watch_match = watch_match
        self._found: Discover = discover_servers or partial(_discover_default)
        self._tls_addresses: set[str] = set()  # servers found on the LAN that said they speak TLS
        self.client: ZigguratClient | None = None
        self.seats = seats or SeatStore()

    async def discover_servers(self) -> list[ServerInfo]:
        """The servers found on the LAN, noting which speak TLS (their mDNS record says so)."""
        found = await self._found()
        self._tls_addresses |= {server.address for server in found if server.tls}
        return found

    def _tls_for(self, address: str) -> Tls:
        """TLS as asked (``--tls``/``--ca``), or as a server found on the LAN said it speaks."""
        if not self.tls.enabled and address in self._tls_addresses:
            return Tls(enabled=True, root=self.tls.root)
        return self.tls

    def on_mount(self) -> None:
        """Start at the server chooser unless an address was given."""
        if self.server_address:
            self.connect(self.server_address)
        else:
            self.push_screen(ServerScreen(self.discover_servers), self.connect)

    def connect(self, address: str | None) -> None:
        """Open the connection, then the lobby (or the watched match)."""
        if not address:
            return
        self.server_address = address
        self.client = ZigguratClient(address, **self._tls_for(address).client_options())
        if self.watch_match:
            self.open_watched(self.client, self.watch_match)
        else:
            self.push_screen(LobbyScreen(self.client, self.player_name, seats=self.seats, server=address))

    @work(exclusive=True, group="watch")
    async def open_watched(self, client: ZigguratClient, match_id: str) -> None:
        """The spectator's screen, once the match is known to exist; otherwise exit (status 1) saying why."""
        try:
            await check_watchable(client, match_id)
        except WatchError as error:
            self.exit(return_code=1, message=f"ziggurat watch: {error}")
            return
        self.push_screen(GameScreen(client, match_id))

    def action_interrupt(self) -> None:
        """Ctrl-C: leave at once with 130, the exit status of an interrupted command."""
        self.exit(return_code=exits.INTERRUPTED)

    async def on_unmount(self) -> None:
        """Close the gRPC channel with the app."""
        if self.client is not None:
            await self.client.close()


async def _discover_default() -> list[ServerInfo]:
    return await discover(2.0)
