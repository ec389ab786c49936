"""``ziggurat --version`` and ``--help`` import no command module: no grpc, no textual, no server
(they took 2.4-3.4 s when every command module was imported up front); and the parsers built
lazily give every command the help it had when all were built (benchmarks/cli_startup.py
measures the time)."""

from __future__ import annotations

import contextlib
import io
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from tests import processes
from ziggurat.cli.commands import COMMANDS
from ziggurat.cli.main import build_parser, main

HEAVY = (
    "grpc",
    "textual",
    "google.protobuf",
    "ziggurat.core",
    "ziggurat.api",
    "ziggurat.hosting",
    "ziggurat.rules",
    "ziggurat_client",
)


@pytest.mark.parametrize("argv", [["--version"], ["--help"]])
def test_version_and_help_import_no_heavy_module(argv: list[str]) -> None:
    done = processes.run(
        [sys.executable, "-X", "importtime", "-m", "ziggurat.cli.main", *argv],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    imported = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", done.stderr, re.MULTILINE))
    assert "ziggurat.cli.commands" in imported  # the log is the one expected: it names what ran
    heavy = sorted(name for name in imported if name.startswith(HEAVY))
    assert heavy == [], heavy
    assert "ziggurat 0.1.0" in done.stdout or "COMMAND" in done.stdout


WEB_STACK = (
    "uvicorn",
    "h11",
    "connectrpc",
    "ziggurat.web.app",
    "ziggurat.web.serving",
    "ziggurat.web.connect",
)


def test_a_server_without_the_web_port_imports_no_web_stack(tmp_path: Path) -> None:
    # ``serve --no-web`` (and so a tournament's or an arena's own server) starts without the
    # web port's uvicorn and Connect stack: about 0.11 s less to start (-X importtime, 183-252
    # against 300-388 ms for ziggurat.cli.serve_cmd), paid by every process that serves no browser.
    server = processes.popen(
        [sys.executable, "-X", "importtime", "-m", "ziggurat.cli.main", "serve", "--no-web", "--no-mdns",
         "--host", "127.0.0.1", "--port", "0", "--db", str(tmp_path / "z.db")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None and server.stdout.readline().startswith("ziggurat listening on ")
        server.send_signal(signal.SIGTERM)
        _, stderr = server.communicate(timeout=30)
    finally:
        processes.stop(server)
    imported = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", stderr, re.MULTILINE))
    assert "ziggurat.hosting.server" in imported  # the log is the one expected: it names the server
    web = sorted(name for name in imported if name.startswith(WEB_STACK))
    assert web == [], web


def _help(parse: Callable[[Sequence[str]], object], argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        parse(argv)
    assert exited.value.code == 0
    return out.getvalue()


def _every_help_argv() -> list[list[str]]:
    """``--help`` alone, and after every command and sub-command of the full parser (and
    ``bot invite``, whose help is its own though it is no sub-parser)."""
    found: list[list[str]] = [[], ["bot", "invite"]]
    subparsers = build_parser()._subparsers
    assert subparsers is not None
    for action in subparsers._group_actions:
        for name, parser in getattr(action, "choices", {}).items():
            found.append([name])
            for inner in parser._subparsers._group_actions if parser._subparsers else ():
                found += [[name, sub] for sub in getattr(inner, "choices", {})]
    return found


def test_every_help_is_the_one_the_full_parser_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    every = _every_help_argv()
    assert {argv[0] for argv in every if argv} == {command.name for command in COMMANDS}
    assert ["bot", "invite"] in every and ["tournament", "run"] in every
    for argv in every:
        lazy = _help(main, [*argv, "--help"])
        full = _help(build_parser().parse_args, [*argv, "--help"])
        assert lazy == full, argv
        assert lazy.startswith(f"usage: {' '.join(['ziggurat', *argv])} "), lazy
