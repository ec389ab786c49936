"""LAN advertisement of a running server over mDNS/DNS-SD (``_ziggurat._tcp.local.``).

Why: on a LAN party nobody should have to read an IP address off someone's screen;
``ziggurat play`` browses for this service type and lists what it finds. The TXT
record says what the server speaks (``api``, ``games``, ``tls``, ``version``) so a
client can skip servers it cannot talk to without connecting.

The advertiser only announces on the interfaces the gRPC server is reachable on:
a server bound to loopback is advertised on loopback only, so a test or a
private server never leaks onto the network.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import re
import socket
from collections.abc import Sequence

import ifaddr
from zeroconf import InterfaceChoice, IPVersion
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

from ziggurat import __version__
from ziggurat.rules.registry import GAMES

log = logging.getLogger("ziggurat.mdns")

SERVICE_TYPE = "_ziggurat._tcp.local."
# The web client is announced as an ordinary web site too, so any DNS-SD browser finds it:
# as an HTTPS site when the web port speaks TLS.
HTTP_SERVICE_TYPE = "_http._tcp.local."
HTTPS_SERVICE_TYPE = "_https._tcp.local."
API = "v1"

# What zeroconf accepts as ``interfaces``: a choice, or addresses.
Interfaces = InterfaceChoice | Sequence[str]


def txt_properties(
    *, tls: bool = False, http_port: int | None = None, web_tls: bool = False
) -> dict[str, str]:
    """The TXT record: what a client needs to know before it connects (``http``: the web
    client's port when it speaks plain HTTP, ``https`` when it speaks TLS; a reader that knows
    only ``http`` then finds no web port, rather than one it would talk to in the clear).
    """
    games = ",".join(GAMES)  # every registered game, in the registry's order
    properties = {"api": API, "games": games, "tls": "1" if tls else "0", "version": __version__}
    if http_port is not None:
        properties["https" if web_tls else "http"] = str(http_port)
    return properties


def interfaces_for(host: str) -> tuple[Interfaces, IPVersion, list[str]]:
    """Interfaces to announce on and addresses to announce, from the gRPC bind host.

    A wildcard host (``0.0.0.0``, ``::``, empty) means every interface; a specific
    address (loopback included) means that interface alone, so what is advertised is
    exactly what is reachable.
    """
    if host in ("", "0.0.0.0", "::", "[::]"):
        addresses = _all_ipv4_addresses()
        return InterfaceChoice.All, IPVersion.V4Only, addresses
    if host == "localhost":
        host = "127.0.0.1"
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        ip = ipaddress.ip_address(socket.gethostbyname(host))
    if ip.version == 6:
        return [str(ip)], IPVersion.V6Only, [str(ip)]
    return [str(ip)], IPVersion.V4Only, [str(ip)]


def _all_ipv4_addresses() -> list[str]:
    """Every non-loopback IPv4 address of this machine (loopback alone if there is none)."""
    found = sorted(
        {
            str(ip.ip)
            for adapter in ifaddr.get_adapters()
            for ip in adapter.ips
            if ip.is_IPv4 and not str(ip.ip).startswith("127.")
        }
    )
    return found or ["127.0.0.1"]


def _short_hostname() -> str:
    """The machine's name as a DNS label (``.local.`` host names allow no dots)."""
    return re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname().split(".")[0]) or "ziggurat"


def instance_name(port: int) -> str:
    """A human-readable, per-host-and-port unique service instance name."""
    return f"ziggurat on {_short_hostname()}:{port}.{SERVICE_TYPE}"


class Advertiser:
    """Announces one server; :meth:`start` when serving, :meth:`stop` on shutdown."""

    def __init__(
        self, host: str, port: int, *, tls: bool = False, http_port: int | None = None, web_tls: bool = False
    ) -> None:
        interfaces, ip_version, addresses = interfaces_for(host)
        self._zeroconf: AsyncZeroconf | None = None
        self._interfaces = interfaces
        self._ip_version = ip_version
        self.info = AsyncServiceInfo(
            SERVICE_TYPE,
            instance_name(port),
            parsed_addresses=addresses,
            port=port,
            properties=txt_properties(tls=tls, http_port=http_port, web_tls=web_tls),
            server=f"{_short_hostname()}.local.",
        )
        self.http_info: AsyncServiceInfo | None = None
        if http_port is not None:
            web_type = HTTPS_SERVICE_TYPE if web_tls else HTTP_SERVICE_TYPE
            self.http_info = AsyncServiceInfo(
                web_type,
                f"ziggurat web client on {_short_hostname()}:{http_port}.{web_type}",
                parsed_addresses=addresses,
                port=http_port,
                properties={"path": "/"},
                server=f"{_short_hostname()}.local.",
            )
        self._registration: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Open the mDNS sockets and begin announcing (probing finishes in the background).

        Probing takes about a second; the server must not wait for it to serve, so the
        rest of the registration runs as a task that :meth:`stop` awaits or cancels.
        """
        self._zeroconf = AsyncZeroconf(interfaces=self._interfaces, ip_version=self._ip_version)
        self._registration = asyncio.create_task(self._register(self._zeroconf))

    async def _register(self, zeroconf: AsyncZeroconf) -> None:
        try:
            for info in (self.info, self.http_info):
                if info is not None:
                    announced = await zeroconf.async_register_service(info, allow_name_change=True)
                    await announced
                    log.info("advertising %s on the LAN (mDNS)", info.name)
        except Exception as error:  # the server works without mDNS; say so and carry on
            log.warning("mDNS advertisement failed: %s", error)

    async def wait_announced(self) -> None:
        """Wait until probing and the first announcement are done (tests; no-op if stopped)."""
        if self._registration is not None:
            await asyncio.shield(self._registration)

    async def stop(self) -> None:
        """Say goodbye (so browsers drop us at once) and close the sockets."""
        zeroconf, self._zeroconf = self._zeroconf, None
        if zeroconf is None:
            return
        if self._registration is not None and not self._registration.done():
            self._registration.cancel()
        try:
            await zeroconf.async_unregister_all_services()
        except Exception as error:
            log.debug("mDNS goodbye failed: %s", error)
        await zeroconf.async_close()
