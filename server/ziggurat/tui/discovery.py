"""Find ziggurat servers on the LAN by mDNS/DNS-SD (``_ziggurat._tcp.local.``).

Why: ``ziggurat play`` with no ``--server`` should show the servers on the local
network instead of asking for an address. Servers advertise themselves (see
``ziggurat serve --no-mdns``); this module browses for a fixed time, resolves each
service (address, port, TXT record) and returns what it found, sorted.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from zeroconf import DNSQuestionType, InterfaceChoice, IPVersion, ServiceStateChange, Zeroconf
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

SERVICE_TYPE = "_ziggurat._tcp.local."


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """One advertised server, as its TXT record describes it."""

    name: str  # the service instance name without the service type
    host: str  # an IP address to connect to
    port: int
    api: str
    games: tuple[str, ...]
    tls: bool
    version: str = ""

    @property
    def address(self) -> str:
        """``host:port`` for :class:`~ziggurat_client.ZigguratClient` (IPv6 in brackets)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def server_info(info: AsyncServiceInfo) -> ServerInfo | None:
    """A resolved service as a :class:`ServerInfo` (None without an address)."""
    addresses = info.parsed_scoped_addresses(IPVersion.V4Only) or info.parsed_scoped_addresses()
    if not addresses or info.port is None:
        return None
    txt = {
        key.decode(errors="replace"): (value or b"").decode(errors="replace")
        for key, value in info.properties.items()
    }
    name = info.name.removesuffix("." + SERVICE_TYPE)
    games = tuple(g for g in txt.get("games", "").split(",") if g)
    return ServerInfo(
        name=name,
        host=addresses[0],
        port=info.port,
        api=txt.get("api", ""),
        games=games,
        tls=txt.get("tls", "0") == "1",
        version=txt.get("version", ""),
    )


async def discover(
    timeout: float = 2.0,
    *,
    interfaces: InterfaceChoice | Sequence[str] = InterfaceChoice.All,
    ip_version: IPVersion = IPVersion.V4Only,
) -> list[ServerInfo]:
    """Browse for ``timeout`` seconds; the servers found, sorted by name.

    Each service is resolved as soon as it is seen, so a slow responder does not
    delay the others; one still unresolved when the time is up is left out.
    Questions ask for multicast answers (QM, not zeroconf's default QU first query):
    a unicast answer to port 5353 reaches only one of the sockets bound to it, so
    with a server on the same machine it was lost about half the time.
    """
    zeroconf = AsyncZeroconf(interfaces=interfaces, ip_version=ip_version)
    resolving: dict[str, asyncio.Task[ServerInfo | None]] = {}

    def on_change(zeroconf: Zeroconf, service_type: str, name: str, state_change: ServiceStateChange) -> None:
        if state_change is not ServiceStateChange.Removed and name not in resolving:
            resolving[name] = asyncio.ensure_future(_resolve(zeroconf, service_type, name, timeout))

    browser = AsyncServiceBrowser(
        zeroconf.zeroconf, SERVICE_TYPE, handlers=[on_change], question_type=DNSQuestionType.QM
    )
    try:
        await asyncio.sleep(timeout)
        tasks = list(resolving.values())
        if tasks:
            await asyncio.wait(tasks, timeout=0.5)
        found = [
            task.result()
            for task in tasks
            if task.done() and not task.cancelled() and task.exception() is None
        ]
    finally:
        for task in resolving.values():
            task.cancel()
        await browser.async_cancel()
        await zeroconf.async_close()
    return sorted((s for s in found if s is not None), key=lambda s: (s.name, s.address))


async def _resolve(zeroconf: Zeroconf, service_type: str, name: str, timeout: float) -> ServerInfo | None:
    info = AsyncServiceInfo(service_type, name)
    if not await info.async_request(zeroconf, int(timeout * 1000), question_type=DNSQuestionType.QM):
        return None
    return server_info(info)
