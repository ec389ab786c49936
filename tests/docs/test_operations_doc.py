"""docs/operations.md stays true: every test it names exists (Python, and the gate's conformance tests),
every limit's default is the code's, every limit names the tests that reach it, and every limit
is a real `ziggurat serve` option."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.docs.test_protocol_doc import _serve_defaults

ROOT = Path(__file__).resolve().parents[2]
OPERATIONS = ROOT / "docs" / "operations.md"
TEST_NAME = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")
GO_TEST_NAME = re.compile(r"`(server/gate/(?:\w+/)?\w+_test\.go)::(Test\w+)`")
# The serve options that are limits: each must be a row of the limits table.
LIMIT_OPTIONS = {
    "max_message_bytes",
    "max_streams_per_connection",
    "max_streams_per_address",
    "max_streams",
    "max_memory_percent",
    "max_connections_per_address",
    "max_open_connections_per_address",
    "ipv6_prefix_length",
    "max_web_connections_per_address",
    "max_web_connections",
    "first_message_timeout",
    "max_connection_idle",
    "max_connection_age",
    "max_connection_age_grace",
    "keepalive",
    "keepalive_timeout",
    "handshake_timeout",
    "max_streams_per_match",
    "max_streams_per_seat",
    "rate",
    "max_matches",
    "max_matches_per_address",
    "create_rate",
    "untimed_move_limit",
    "claim_after",
    "waiting_ttl",
    "max_pending_invitations",
    "invitation_ttl",
    "grace",
}


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    return {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_every_named_test_exists() -> None:
    named = TEST_NAME.findall(OPERATIONS.read_text())
    assert len(named) >= 20
    missing = [f"{file}::{name}" for file, name in named if name not in _functions(ROOT / file)]
    assert not missing, f"docs/operations.md names tests that do not exist: {missing}"


def test_every_named_go_test_of_the_gate_exists() -> None:
    named = GO_TEST_NAME.findall(OPERATIONS.read_text())
    assert len(named) >= 10
    missing = [
        f"{file}::{name}"
        for file, name in named
        if not re.search(rf"^func {name}\(t \*testing\.T\)", (ROOT / file).read_text(), re.MULTILINE)
    ]
    assert not missing, f"docs/operations.md names Go tests that do not exist: {missing}"


def test_every_limit_is_in_the_table_with_the_code_s_default() -> None:
    text = OPERATIONS.read_text()
    section = text[text.index("## Limits") : text.index("## Shutdown")]
    rows = re.findall(r"^\| [^|]+ \| `--([\w-]+)` \| ([^|]+?) \|", section, re.MULTILINE)
    documented = {flag.replace("-", "_"): default for flag, default in rows}
    defaults = _serve_defaults()
    assert set(documented) == LIMIT_OPTIONS
    for option, default in documented.items():
        value = defaults[option]
        assert isinstance(value, (int, float))
        assert default == f"{value:g}", f"--{option}: documented {default}, the code says {value:g}"


def test_every_serve_limit_option_is_a_limit() -> None:
    # A new option in serve's "limits" group must join the table (and LIMIT_OPTIONS).
    import argparse

    from ziggurat.cli import serve_cmd

    parser = argparse.ArgumentParser()
    serve_cmd.register(parser.add_subparsers())
    serve = parser._subparsers._group_actions[0].choices["serve"]  # type: ignore[union-attr]
    group = next(g for g in serve._action_groups if (g.title or "").startswith("limits"))
    assert {action.dest for action in group._group_actions} <= LIMIT_OPTIONS


def test_every_limit_names_the_tests_that_reach_it() -> None:
    text = OPERATIONS.read_text()
    section = text[text.index("## Limits") : text.index("## Shutdown")]
    rows = re.findall(
        r"^\| [^|]+ \| `--([\w-]+)` \| [^|]+ \| [^|]+ \| ([^|]+) \| ([^|]+) \|$", section, re.MULTILINE
    )
    assert {flag.replace("-", "_") for flag, _, _ in rows} == LIMIT_OPTIONS
    untested = [flag for flag, _, tests in rows if not TEST_NAME.search(tests)]
    assert not untested, f"limits without a test of ours in docs/operations.md: {untested}"


def test_every_limit_says_who_enforces_it_behind_the_gate() -> None:
    # `serve --gate` moves the connection-level limits into ziggurat-gate: the table says, for
    # each limit, whether the gate or the server enforces it then (and the gate gets them all).
    from ziggurat.hosting.gate import GateLimits

    text = OPERATIONS.read_text()
    section = text[text.index("## Limits") : text.index("## Shutdown")]
    rows = re.findall(
        r"^\| [^|]+ \| `--([\w-]+)` \| [^|]+ \| [^|]+ \| ([^|]+) \| [^|]+ \|$", section, re.MULTILINE
    )
    by_gate = {flag.replace("-", "_") for flag, where in rows if where.startswith("the gate")}
    by_server = {flag.replace("-", "_") for flag, where in rows if where.startswith("the server")}
    assert by_gate | by_server == LIMIT_OPTIONS and not by_gate & by_server
    passed = set(GateLimits.__dataclass_fields__) - {"shutdown_timeout"}
    assert by_gate == passed, "every limit the table gives the gate is passed to it, and only those"


def test_every_documented_limit_is_a_serve_flag_with_that_default() -> None:
    # The table is checked against the command line itself, not only the ServeOptions defaults.
    text = OPERATIONS.read_text()
    section = text[text.index("## Limits") : text.index("## Shutdown")]
    rows = re.findall(r"^\| [^|]+ \| `--([\w-]+)` \| ([^|]+?) \|", section, re.MULTILINE)
    import argparse

    from ziggurat.cli import serve_cmd

    parser = argparse.ArgumentParser()
    serve_cmd.register(parser.add_subparsers())
    serve = parser._subparsers._group_actions[0].choices["serve"]  # type: ignore[union-attr]
    flags = {option: action for action in serve._actions for option in action.option_strings}
    for flag, default in rows:
        assert f"--{flag}" in flags, f"--{flag} is documented but `ziggurat serve` has no such option"
        value = flags[f"--{flag}"].default
        assert isinstance(value, (int, float)), (flag, value)
        assert f"{value:g}" == default, f"--{flag}: documented {default}, `ziggurat serve` says {value:g}"
