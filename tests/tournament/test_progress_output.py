"""``ziggurat tournament run`` on a terminal: log lines never corrupt the progress bar.

The command runs as a real subprocess whose stdout and stderr are a pseudo-terminal (so the
live bar is drawn, as for a person), with ``--log-level info`` so that the in-process server
logs every join, move and end while the bar is redrawn. A small terminal model follows the
cursor column through the output: every log line and every game line must begin at column 0
(a line glued onto the bar begins where the bar ended).
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import sys
import termios
import time
from pathlib import Path

import pytest

from tests import processes

CONFIG = """
name = "small"
seed = "s"
game = "pylos"
rounds = 2
concurrency = 2
[options]
max_moves = 60
[[participants]]
name = "a"
builtin = "random"
[[participants]]
name = "b"
builtin = "greedy"
[[participants]]
name = "c"
builtin = "random"
"""
LOG_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR) ")
TOKEN = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\r|\n|[^\x1b\r\n]")


def _run_in_pty(argv: list[str], cwd: Path, timeout: float = 240) -> tuple[int, str]:
    """Run ``argv`` with a 120x40 pseudo-terminal as stdin, stdout and stderr; its exit code and output."""
    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    env.pop("NO_COLOR", None)
    proc = processes.popen(argv, stdin=terminal, stdout=terminal, stderr=terminal, env=env, cwd=cwd)
    os.close(terminal)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([controller], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(controller, 65536)
                except OSError:  # EIO: every writer has closed the terminal
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            elif proc.poll() is not None:
                break
        code = proc.wait(30)
    finally:
        processes.stop(proc)
        os.close(controller)
    return code, b"".join(chunks).decode(errors="replace")


def line_starts(output: str, pattern: re.Pattern[str]) -> list[tuple[int, str]]:
    """Where each match of ``pattern`` begins on screen: (cursor column, the text), in order.

    The model keeps only what moves the cursor's column: carriage return and newline (the
    terminal turns "\\n" into "\\r\\n") go to column 0, a printable character advances it,
    control sequences (colours, erase line, cursor up/down) leave it where it is.
    """
    starts = {m.start(): m.group(0) for m in pattern.finditer(output)}
    found = []
    column = 0
    for token in TOKEN.finditer(output):
        if token.start() in starts:
            found.append((column, starts[token.start()]))
        text = token.group(0)
        if text in ("\r", "\n"):
            column = 0
        elif not text.startswith("\x1b"):
            column += 1
    return found


def test_line_starts_sees_a_line_glued_onto_a_bar() -> None:
    """The model itself: a log line written after a bar redrawn with "\\r" (no newline) is caught."""
    glued = "\r[####------] 3/10 games\x1b[K2026-12-01 06:00:00,000 INFO x: hello\n"
    assert line_starts(glued, LOG_LINE) == [(23, "2026-12-01 06:00:00,000 INFO ")]
    clean = "\r\x1b[2K2026-12-01 06:00:00,000 INFO x: hello\n━━ 3/10 games"
    assert line_starts(clean, LOG_LINE) == [(0, "2026-12-01 06:00:00,000 INFO ")]


@pytest.mark.slow
def test_log_lines_start_at_the_beginning_of_a_line_above_the_bar(tmp_path: Path) -> None:
    (tmp_path / "t.toml").write_text(CONFIG)
    argv = [sys.executable, "-m", "ziggurat.cli.main", "tournament", "run", "t.toml", "--db", "t.db"]
    code, output = _run_in_pty([*argv, "--log-level", "info"], tmp_path)
    assert code == 0, output[-3000:]
    assert "Traceback" not in output
    logs = line_starts(output, LOG_LINE)
    games = line_starts(output, re.compile(r"Finished game \d+"))
    bars = re.findall(r"\d+/12 games", re.sub(r"\x1b\[[0-9;]*m", "", output))
    assert len(logs) > 50 and len(games) == 12 and len(bars) > 12, (len(logs), len(games), len(bars))
    assert bars[-1] == "12/12 games"
    glued = [(column, text) for column, text in logs + games if column != 0]
    assert not glued, glued
