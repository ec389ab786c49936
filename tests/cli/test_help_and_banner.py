"""What the command line tells a person: ``ziggurat bot invite --help`` is the invitation's own
usage, and ``ziggurat serve`` names a web address a browser can open (never 0.0.0.0)."""

from __future__ import annotations

import ipaddress
import sys

from tests import processes
from ziggurat.cli.main import build_parser
from ziggurat.hosting.server import browser_host, lan_address


def test_bot_invite_help_is_the_invitation_s_usage() -> None:
    shown = processes.run(
        [sys.executable, "-m", "ziggurat.cli.main", "bot", "invite", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert shown.startswith("usage: ziggurat bot invite "), shown
    for option in ("NAME", "--match ID", "--seat", "--server", "--creator-token-file"):
        assert option in shown, option
    assert "--remote" not in shown.split("\n\n")[0] and "--max-matches" not in shown, shown
    # `bot --help` is still the general one.
    general = processes.run(
        [sys.executable, "-m", "ziggurat.cli.main", "bot", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert general.startswith("usage: ziggurat bot ") and "--max-matches" in general, general


def test_every_option_the_invite_help_shows_is_one_bot_invite_takes() -> None:
    args = build_parser().parse_args(
        [
            "bot",
            "invite",
            "friend",
            "--match",
            "m1",
            "--seat",
            "2",
            "--server",
            "h:1",
            "--creator-token-file",
            "f",
        ]
    )
    assert (args.bot, args.bot_name, args.match, args.seat, args.server, args.creator_token_file) == (
        "invite",
        "friend",
        "m1",
        2,
        "h:1",
        "f",
    )


def test_the_web_address_printed_is_one_a_browser_can_open() -> None:
    for wildcard in ("0.0.0.0", "::", ""):
        shown = browser_host(wildcard)
        assert shown == (lan_address() or "localhost"), shown
        if shown != "localhost":
            address = ipaddress.ip_address(shown)
            assert not address.is_unspecified and not address.is_loopback, shown
    assert browser_host("127.0.0.1") == "127.0.0.1"
    assert browser_host("192.168.1.20") == "192.168.1.20"
    assert browser_host("::1") == "[::1]"
    assert browser_host("[fe80::1]") == "[fe80::1]"
    assert browser_host("pylos.example") == "pylos.example"
