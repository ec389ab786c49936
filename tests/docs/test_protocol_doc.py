"""docs/protocol.md stays true: its limits are the code's, its status/reason pairs the registry's."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from ziggurat.api import bot_servicer, bots, servicer
from ziggurat.cli import serve_cmd
from ziggurat.core import match, render
from ziggurat.core.decide import PRESENCE_EVENTS_PER_TURN
from ziggurat.core.manager import DEFAULT_WAITING_TTL_S
from ziggurat.hosting.server import MAX_MESSAGE_BYTES, ServeOptions
from ziggurat.wire.reasons import Reason

PROTOCOL = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def _serve_defaults() -> dict[str, object]:
    parser = argparse.ArgumentParser()
    serve_cmd.register(parser.add_subparsers())
    sub = parser._subparsers._group_actions[0].choices["serve"]  # type: ignore[union-attr]
    return {action.dest: action.default for action in sub._actions}


def _limits() -> dict[str, str]:
    text = PROTOCOL.read_text()
    section = text[text.index("## Limits") :]
    section = section[: section.index("\n## ", 1)] if "\n## " in section[1:] else section
    return dict(re.findall(r"^\| ([^|]+?) \| ([^|]+?) \| [^|]+ \|$", section, re.MULTILINE)[1:])


def test_documented_limits_are_the_code_s() -> None:
    defaults = _serve_defaults()
    options = ServeOptions()
    rate = float(defaults["rate"])  # type: ignore[arg-type]
    assert rate == options.rate_per_seat and 2 * rate == options.burst_per_seat
    per_second = f"{rate:.0f} per second, bursts of {2 * rate:.0f} (`--rate`)"
    ttl = f"{DEFAULT_WAITING_TTL_S:.0f} seconds (`--waiting-ttl`)"
    address_rate, address_burst = bots.REGISTRATIONS_PER_ADDRESS
    server_rate, server_burst = bots.REGISTRATIONS_PER_SERVER
    expected = {
        "size of one request message": f"{MAX_MESSAGE_BYTES // 1024} KiB",
        "player or bot name": f"1 to {match.MAX_NAME} printable characters",
        "move text": f"{match.MAX_MOVE_TEXT} characters",
        "requests per seat": per_second,
        "matches created per client address": (
            f"{defaults['create_rate']:g} per second, bursts of {2 * float(defaults['create_rate']):g} "  # type: ignore[arg-type]
            "(`--create-rate`)"
        ),
        "live matches created by one client address": (
            f"{defaults['max_matches_per_address']} (`--max-matches-per-address`)"
        ),
        "live (waiting or active) matches on the server": f"{defaults['max_matches']} (`--max-matches`)",
        "waiting TTL: time a waiting match may go without a join": ttl,
        "time for a move in a match created untimed": (
            f"{defaults['untimed_move_limit']:g} seconds (`--untimed-move-limit`)"
        ),
        "matches per ListMatches page": f"{servicer.MAX_PAGE} (default page {servicer.DEFAULT_PAGE})",
        "matches a remote bot takes at once": f"{bot_servicer.MAX_MATCHES_PER_BOT}",
        "invitations (`InviteBot`) one remote bot may have waiting to be played": (
            f"{defaults['max_pending_invitations']} (`--max-pending-invitations`)"
        ),
        "time an invitation may wait to be played": (
            f"{defaults['invitation_ttl']:.0f} seconds (`--invitation-ttl`)"
        ),
        "new remote-bot names": (
            f"{address_burst:.0f} at once per address then one every {1 / address_rate:.0f} s; "
            f"{server_burst:.0f} at once per server then {server_rate:.0f} per second"
        ),
        "open streams (`Play`, `WatchMatch`) on one match": (
            f"{defaults['max_streams_per_match']} (`--max-streams-per-match`)"
        ),
        "open streams with one seat's token": (
            f"{defaults['max_streams_per_seat']} (`--max-streams-per-seat`)"
        ),
        "refused moves waiting to be sent on one `Play` stream": f"{servicer.MAX_PENDING_REFUSALS}",
        "connection changes recorded per seat and turn": f"{PRESENCE_EVENTS_PER_TURN}",
        "size of one streamed response": f"{render.MESSAGE_BYTES // 1024} KiB, whole changes only",
    }
    assert defaults["max_streams_per_match"] == options.max_streams_per_match
    assert defaults["max_streams_per_seat"] == options.max_streams_per_seat
    assert defaults["max_matches"] == options.max_live_matches
    assert defaults["max_matches_per_address"] == options.max_matches_per_address
    assert defaults["create_rate"] == options.create_rate
    assert defaults["waiting_ttl"] == DEFAULT_WAITING_TTL_S == options.waiting_ttl_s
    assert defaults["max_pending_invitations"] == options.max_pending_invitations
    assert defaults["invitation_ttl"] == options.invitation_ttl_s
    assert _limits() == expected


def test_every_status_and_reason_pair_in_the_text_is_the_registry_s() -> None:
    pairs = re.findall(r"`([A-Z_]+)`, `([A-Z_]+)`", PROTOCOL.read_text())
    assert len(pairs) > 10
    for status, reason in pairs:
        assert reason in Reason.__members__, f"docs/protocol.md names an unknown reason {reason}"
        assert Reason[reason].code.name == status, (
            f"docs/protocol.md: {reason} travels with {Reason[reason].code.name}"
        )
