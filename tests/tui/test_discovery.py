"""LAN discovery end to end on loopback: a real server advertises, the SDK browses.

Multicast works on this machine's loopback interface (Linux delivers multicast sent
with IP_MULTICAST_IF=127.0.0.1 back to local members even though ``lo`` lacks the
MULTICAST flag), so both sides use ``interfaces=["127.0.0.1"]`` and nothing leaves
the machine.
"""

from __future__ import annotations

from pathlib import Path

from tests.lan import LOOPBACK, discovered
from ziggurat import __version__
from ziggurat.hosting.mdns import interfaces_for, txt_properties
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.rules.registry import GAMES
from ziggurat.tui.discovery import ServerInfo, discover
from ziggurat_client import ZigguratClient


async def _mine(port: int, timeout: float = 1.5) -> list[ServerInfo]:
    found = await discover(timeout, interfaces=LOOPBACK)
    return [s for s in found if s.port == port]


async def test_served_server_is_discovered_and_reachable(tmp_path: Path) -> None:
    server = ZigguratServer(
        ServeOptions(host="127.0.0.1", port=0, db_path=str(tmp_path / "z.db"), grace_seconds=0.2, mdns=True)
    )
    port = await server.start()
    try:
        assert server.advertiser is not None
        await server.advertiser.wait_announced()
        mine = await discovered(port)
        assert len(mine) == 1, mine
        info = mine[0]
        assert info.host == "127.0.0.1"
        assert (info.api, info.games, info.tls, info.version) == (
            "v1",
            ("pylos", "kabaleo", "phantom-ttt"),  # the registry's games, in its order
            False,
            __version__,
        )
        assert info.games == tuple(GAMES)
        assert info.address == f"127.0.0.1:{port}"
        async with ZigguratClient(info.address) as client:
            assert await client.list_matches() == []
    finally:
        await server.stop()
    # Graceful shutdown says goodbye: a fresh browse no longer finds it.
    assert await _mine(port, 1.0) == []


async def test_no_mdns_means_not_advertised(tmp_path: Path) -> None:
    server = ZigguratServer(ServeOptions(host="127.0.0.1", port=0, db_path=str(tmp_path / "z.db")))
    port = await server.start()
    try:
        assert server.advertiser is None
        assert await _mine(port, 1.0) == []
    finally:
        await server.stop()


def test_advertised_interfaces_follow_the_bind_host() -> None:
    assert interfaces_for("127.0.0.1")[0] == LOOPBACK
    assert interfaces_for("localhost")[2] == ["127.0.0.1"]
    assert txt_properties() == {
        "api": "v1",
        "games": "pylos,kabaleo,phantom-ttt",
        "tls": "0",
        "version": __version__,
    }


def test_cli_flag_turns_advertising_off() -> None:
    from ziggurat.cli.main import build_parser

    assert build_parser().parse_args(["serve"]).mdns is True
    assert build_parser().parse_args(["serve", "--no-mdns"]).mdns is False
