"""Phantom tic-tac-toe end to end: ``ziggurat serve`` as a subprocess, two ``ziggurat bot random``
processes (the Python client's generic turn loop) create and play a match, ``ziggurat verify``
checks the record, and a spectator's view of the finished match shows the whole board."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests import processes
from tests.servers import ServerProcess
from ziggurat.v1 import game_pb2
from ziggurat_client.sync import SyncClient

CLI = [sys.executable, "-m", "ziggurat.cli.main"]


def test_random_bots_play_phantom_ttt_to_a_verified_end(
    server_process: ServerProcess, tmp_path: Path
) -> None:
    address = server_process.start()
    bot = [*CLI, "bot", "random", "--server", address]
    creator = processes.popen(
        [*bot, "--create", "phantom-ttt", "--bot-option", "seed=3"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert creator.stdout is not None
    first = creator.stdout.readline()
    assert first.startswith("created match "), first + (creator.stderr.read() if creator.stderr else "")
    match_id = first.split()[2]
    joiner = processes.run(
        [*bot, "--match", match_id, "--bot-option", "seed=4"], capture_output=True, text=True, timeout=120
    )
    _, err = creator.communicate(timeout=120)
    assert joiner.returncode == 0 and creator.returncode == 0, joiner.stderr[-2000:] + err[-2000:]
    verify = processes.run(
        [*CLI, "verify", match_id, "--server", address], capture_output=True, text=True, timeout=60
    )
    assert verify.returncode == 0 and verify.stdout.startswith(f"verified: match {match_id}"), verify.stderr

    with SyncClient(address) as client:
        match = client.get_match(match_id)
    view = match.view  # a spectator's, of a released end: the whole board
    assert view.game == game_pb2.GAME_PHANTOM_TIC_TAC_TOE and view.HasField("outcome")
    assert view.WhichOneof("detail") == "phantom_tic_tac_toe"
    cells = view.phantom_tic_tac_toe.cells
    assert len(cells) == 9 and cells.lower().count("x") >= 3 and view.position.count("/") == 2
    # every ply is a mark or a failed attempt, which found a mark (upper case) for good
    assert view.ply == sum(c != "." for c in cells) + sum(c.isupper() for c in cells)
