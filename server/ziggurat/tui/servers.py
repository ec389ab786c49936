"""Choosing a server: what mDNS finds on the LAN, or an address typed by hand.

Why: LAN play should need no configuration, but discovery can fail (a network
that drops multicast, a server started with ``--no-mdns``), so typing an address
is always possible too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Input, OptionList, Static
from textual.widgets.option_list import Option

from ziggurat.tui.discovery import ServerInfo

Discover = Callable[[], Awaitable[list[ServerInfo]]]
DEFAULT_PORT = 50051


def normalise_address(text: str) -> str:
    """``host`` → ``host:50051`` (the server's default port); ``host:port`` as typed."""
    text = text.strip()
    if not text:
        return text
    if text.startswith("["):  # [IPv6] or [IPv6]:port
        return text if "]:" in text else f"{text}:{DEFAULT_PORT}"
    if text.count(":") == 1:  # host:port
        return text
    if ":" in text:  # a bare IPv6 address
        return f"[{text}]:{DEFAULT_PORT}"
    return f"{text}:{DEFAULT_PORT}"


class ServerScreen(Screen[str]):
    """Dismisses with the chosen ``host:port``."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f5", "scan", "Scan again"),
        Binding("escape", "app.quit", "Quit"),
    ]

    DEFAULT_CSS = """
    #servers { height: 1fr; border: round $secondary; }
    #scan-status { height: auto; padding: 0 1; }
    """

    def __init__(self, discover: Discover) -> None:
        super().__init__()
        self.discover = discover
        self.found: list[ServerInfo] = []

    def compose(self) -> ComposeResult:
        """Found servers, a status line and the address input."""
        yield Static("ziggurat · choose a server", id="title")
        yield OptionList(id="servers")
        yield Static(id="scan-status")
        yield Input(placeholder="or type an address (host:port) and press Enter", id="address")
        yield Footer()

    def on_mount(self) -> None:
        """Start browsing at once."""
        self.query_one("#servers", OptionList).border_title = "servers on the LAN"
        self.action_scan()

    @work(exclusive=True, group="scan")
    async def action_scan(self) -> None:
        """Browse the LAN once and list what answered."""
        status = self.query_one("#scan-status", Static)
        status.update("searching the LAN (mDNS _ziggurat._tcp)…")
        try:
            self.found = await self.discover()
        except OSError as error:
            status.update(f"LAN search failed: {error}; type an address instead")
            return
        listing = self.query_one("#servers", OptionList)
        listing.clear_options()
        for server in self.found:
            games = ",".join(server.games)
            tls = " tls" if server.tls else ""
            listing.add_option(
                Option(f"{server.name}  {server.address}  api {server.api}  {games}{tls}", id=server.address)
            )
        status.update(f"{len(self.found)} server(s) found · F5 to search again")
        if self.found:
            listing.highlighted = 0
            listing.focus()

    @on(OptionList.OptionSelected, "#servers")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.dismiss(event.option.id)

    @on(Input.Submitted, "#address")
    def _typed(self, event: Input.Submitted) -> None:
        address = normalise_address(event.value)
        if address:
            self.dismiss(address)
