"""Without its extras (textual, rich, zeroconf), ziggurat serves, and says what a command is missing.

Each command runs as a real subprocess in which those packages cannot be imported (their names
are None in ``sys.modules``, so an import raises ModuleNotFoundError as for a package that is not
installed). tests/test_headless_install.py does the same on a real ``pip install .`` without them.
"""

from __future__ import annotations

import io
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import processes
from ziggurat.tournament.progress import Progress
from ziggurat_client import game_config
from ziggurat_client.sync import SyncClient

WITHOUT = ("textual", "rich", "zeroconf", "ifaddr")
PROGRAM = (
    "import sys\n"
    f"for name in {WITHOUT!r}:\n"
    "    sys.modules[name] = None\n"
    "from ziggurat.cli.main import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def _ziggurat(*argv: str) -> subprocess.CompletedProcess[str]:
    return processes.run([sys.executable, "-c", PROGRAM, *argv], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("argv", [["play"], ["watch", "some-match", "--server", "127.0.0.1:9"]])
def test_the_terminal_ui_without_its_extra_is_one_line_naming_it(argv: list[str]) -> None:
    result = _ziggurat(*argv)
    assert result.returncode == 1, result.stderr
    assert result.stderr == (
        f"error: ziggurat {argv[0]} needs the terminal UI, which is not installed (textual is missing): "
        f"{sys.executable} -m pip install 'ziggurat[tui]'\n"
    )
    assert result.stdout == ""


def test_a_server_without_zeroconf_serves_and_says_it_does_not_announce(tmp_path: Path) -> None:
    argv = ["serve", "--host", "127.0.0.1", "--port", "0", "--no-web", "--db", str(tmp_path / "z.db")]
    proc = processes.popen(
        [sys.executable, "-u", "-c", PROGRAM, *argv, "--grace", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        line = proc.stdout.readline()
        assert line.startswith("ziggurat listening on "), line + proc.stderr.read()
        with SyncClient(line.split()[-1]) as client:
            match = client.create_match(game_config("pylos"))
            assert client.get_match(match.match_id).match_id == match.match_id
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    # (Not "no traceback": a SIGTERM while the search workers' pool starts can make a forkserver
    # child print one, whatever is installed; what this test is about is no failed import.)
    assert "ModuleNotFoundError" not in err and "ImportError" not in err, err
    warned = [line for line in err.splitlines() if "not announcing on the LAN" in line]
    assert len(warned) == 1, err
    assert warned[0].endswith(
        "not announcing on the LAN (mDNS): zeroconf is not installed "
        f"({sys.executable} -m pip install 'ziggurat[mdns]' to announce, or --no-mdns)"
    ), warned


def test_no_mdns_says_nothing_about_it(tmp_path: Path) -> None:
    argv = ["serve", "--host", "127.0.0.1", "--port", "0", "--no-web", "--no-mdns"]
    proc = processes.popen(
        [sys.executable, "-u", "-c", PROGRAM, *argv, "--db", str(tmp_path / "z.db")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    try:
        line = proc.stdout.readline()
        assert line.startswith("ziggurat listening on "), line
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "mDNS" not in err, err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_tournament_progress_without_rich_writes_plain_lines_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("rich.console", "rich.progress"):
        monkeypatch.setitem(sys.modules, name, None)
    terminal = _Terminal()
    progress = Progress(4, stream=terminal)
    progress.update(1, 4, "a (1)")
    progress.close()
    assert terminal.getvalue().startswith("1/4 games, "), terminal.getvalue()
    assert terminal.getvalue().endswith(", leader a (1)\n")
