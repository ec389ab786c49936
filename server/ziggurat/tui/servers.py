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
from ziggurat.tui.i18n import t, translate_bindings

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
        Binding("f5", "scan", "servers.scan"),
        Binding("escape", "app.quit", "app.quit"),
    ]

    DEFAULT_CSS = """
    #servers { height: 1fr; border: round $secondary; }
    #scan-status { height: auto; padding: 0 1; }
    """

    def __init__(self, discover: Discover) -> None:
        super().__init__()
        translate_bindings(self)
        self.discover = discover
        self.found: list[ServerInfo] = []

    def compose(self) -> ComposeResult:
        """Found servers, a status line and the address input."""
        yield Static(t("servers.title"), id="title")
        yield OptionList(id="servers")
        yield Static(id="scan-status")
        yield Input(placeholder=t("servers.address"), id="address")
        yield Footer()

    def on_mount(self) -> None:
        """Start browsing at once."""
        self.query_one("#servers", OptionList).border_title = t("servers.list")
        self.action_scan()

    @work(exclusive=True, group="scan")
    async def action_scan(self) -> None:
        """Browse the LAN once and list what answered."""
        status = self.query_one("#scan-status", Static)
        status.update(t("servers.searching"))
        try:
            self.found = await self.discover()
        except OSError as error:
            status.update(t("servers.failed", error=error))
            return
        listing = self.query_one("#servers", OptionList)
        listing.clear_options()
        for server in self.found:
            games = ",".join(server.games)
            tls = " tls" if server.tls else ""
            listing.add_option(
                Option(f"{server.name}  {server.address}  api {server.api}  {games}{tls}", id=server.address)
            )
        status.update(t("servers.found", count=len(self.found)))
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
