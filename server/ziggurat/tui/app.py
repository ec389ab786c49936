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

from ziggurat.tui.discovery import ServerInfo, discover
from ziggurat.tui.game import GameScreen
from ziggurat.tui.lobby import LobbyScreen
from ziggurat.tui.seats import SeatStore
from ziggurat.tui.servers import Discover, ServerScreen
from ziggurat.tui.watching import WatchError, check_watchable
from ziggurat_client.client import ZigguratClient


class ZigguratApp(App[None]):
    """Plays (``watch_match=None``) or spectates one match (``watch_match=ID``)."""

    TITLE = "ziggurat"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+q", "quit", "Quit")]
    CSS = """
    #title { height: 1; background: $primary; color: $text; padding: 0 1; }
    """

    def __init__(
        self,
        *,
        server: str | None = None,
        player_name: str = "player",
        watch_match: str | None = None,
        discover_servers: Discover | None = None,
        seats: SeatStore | None = None,
    ) -> None:
        super().__init__()
        self.server_address = server
        self.player_name = player_name
        self.watch_match = watch_match
        self.discover_servers: Discover = discover_servers or partial(_discover_default)
        self.client: ZigguratClient | None = None
        self.seats = seats or SeatStore()

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
        self.client = ZigguratClient(address)
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

    async def on_unmount(self) -> None:
        """Close the gRPC channel with the app."""
        if self.client is not None:
            await self.client.close()


async def _discover_default() -> list[ServerInfo]:
    return await discover(2.0)
