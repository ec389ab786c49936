"""Ctrl-C in ``ziggurat play`` and ``ziggurat watch``, typed in a real terminal (a pseudo-terminal):
the program ends, gives the terminal back and exits 130 like every other interrupted command
(textual's own Ctrl-C only showed a hint to press Ctrl+Q)."""

from __future__ import annotations

import asyncio
import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import processes
from tests.servers import ServerProcess, pylos_config
from ziggurat_client import ZigguratClient


def _read(master: int, seconds: float) -> bytes:
    """What the program drew within ``seconds`` (until it stops drawing, or the terminal closes)."""
    out = b""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if not ready:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the program ended: its side of the terminal is closed
            break
        if not chunk:
            break
        out += chunk
    return out


def _ctrl_c(argv: list[str], drawn: bytes) -> tuple[int | None, bytes]:
    """Run ``ziggurat ARGV`` in an 80x24 terminal, press Ctrl-C once ``drawn`` is on it; its
    exit status and everything it wrote."""
    master, slave = pty.openpty()
    os.set_blocking(master, True)
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "80", "LINES": "24"}
    proc = processes.popen(
        [sys.executable, "-m", "ziggurat.cli.main", *argv], stdin=slave, stdout=slave, stderr=slave, env=env
    )
    os.close(slave)
    screen = b""
    try:
        deadline = time.monotonic() + 60
        while drawn not in screen and time.monotonic() < deadline and proc.poll() is None:
            screen += _read(master, 0.5)
        assert drawn in screen, screen[-2000:]
        os.write(master, b"\x03")
        try:
            code = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            code = None
        screen += _read(master, 1.0)
    finally:
        processes.stop(proc)
        os.close(master)
    return code, screen


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    running = ServerProcess(tmp_path / "z.db")
    running.start()
    yield running
    running.stop()


def test_ctrl_c_ends_play_with_130(
    server: ServerProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZIGGURAT_STATE_DIR", str(tmp_path / "state"))
    code, screen = _ctrl_c(["play", "--server", server.address, "--name", "ann"], b"Create and join")
    assert code == 130, screen[-2000:]
    assert b"Traceback" not in screen


def test_ctrl_c_ends_watch_with_130(server: ServerProcess) -> None:
    async def create() -> str:
        async with ZigguratClient(server.address) as client:
            return (await client.create_match(pylos_config())).match_id

    match_id = asyncio.run(create())
    code, screen = _ctrl_c(["watch", match_id, "--server", server.address], b"Waiting for players")
    assert code == 130, screen[-2000:]
    assert b"Traceback" not in screen
