"""``ziggurat watch`` as a person runs it, in a subprocess: an unknown match and a server that is
down are reported on stderr with exit status 1 after a short, bounded wait (they used to show
"Waiting for players" forever)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

from tests import processes
from tests.servers import ServerProcess


def _watch(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = processes.run(
        [sys.executable, "-m", "ziggurat.cli.main", "watch", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    return done, time.monotonic() - started


def test_watching_an_unknown_match_says_so_and_fails(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "z.db")
    address = server.start()
    try:
        done, _ = _watch("no-such-match", "--server", address)
    finally:
        server.stop()
    assert done.returncode == 1
    assert done.stderr.strip() == f"ziggurat watch: there is no match no-such-match on {address}"
    assert "Waiting for players" not in done.stdout + done.stderr


def test_watching_on_a_server_that_is_down_gives_up_after_a_few_seconds() -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    done, took = _watch("some-match", "--server", f"127.0.0.1:{port}")
    assert done.returncode == 1
    assert done.stderr.startswith(f"ziggurat watch: cannot reach the server at 127.0.0.1:{port} (UNAVAILABLE")
    assert "gave up after 5 s" in done.stderr and "Traceback" not in done.stderr
    assert 4 < took < 30, took  # retried a few seconds (a server may be starting), then gave up
