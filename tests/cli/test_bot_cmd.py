"""``ziggurat bot``: an orphaned remote bot exits instead of reconnecting forever."""

from __future__ import annotations

import os
import subprocess
import sys
import time


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); its state says it is gone.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split()[2] != "Z"


def test_remote_bot_exits_when_its_launcher_dies() -> None:
    bot = f"{sys.executable} -m ziggurat.cli.main bot random --remote --server 127.0.0.1:9 --bot-token t"
    # The shell launches the bot in the background, tells its pid and exits at once: the
    # bot is orphaned, like the bots of a tournament that was killed with kill -9.
    shell = subprocess.run(
        ["sh", "-c", f"ZIGGURAT_PARENT_PID=$$ {bot} >/dev/null 2>&1 & echo $!"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    pid = int(shell.stdout.strip())
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(pid), "the orphaned bot kept running"
