"""``ziggurat bot``: an orphaned remote bot exits instead of reconnecting forever; a bot handed a
finished match exits cleanly."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from tests import processes
from tests.servers import ServerProcess
from ziggurat_client import game_config
from ziggurat_client.sync import SyncClient


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
    shell = processes.run(
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


def test_a_bot_handed_a_finished_match_reads_the_end_and_exits_cleanly(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "z.db")
    address = server.start()
    try:
        with SyncClient(address) as client:
            match = client.create_match(game_config("pylos"))
            handles = {h.seat: h for h in (client.join(match.match_id, f"p{i}") for i in range(2))}
            client.submit_move(handles[1], "1a1", 0)
            client.resign(handles[2])
        seat = handles[1]
        bot = processes.run(
            [
                sys.executable,
                "-m",
                "ziggurat.cli.main",
                "bot",
                "random",
                "--server",
                address,
                "--match",
                match.match_id,
                "--token",
                seat.token,
                "--seat",
                "1",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        server.stop()
    assert bot.returncode == 0, bot.stderr
    assert f"match {match.match_id} over: ranks by seat [1, 2]" in bot.stdout
    assert "Traceback" not in bot.stderr
