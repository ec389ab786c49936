"""A deleted ``-wal`` is said, at start-up and by ``ziggurat check``, instead of passing in silence.

Real ``ziggurat serve`` processes and real ``ziggurat check`` runs: a server killed with -9
whose ``-wal`` file is then deleted (the commits it held are lost), a server stopped cleanly
(SQLite removes the WAL itself: nothing to say).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests import processes
from tests.servers import ServerProcess, pylos_config
from ziggurat_client.sync import SyncClient


def _check(db: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ziggurat.cli.main", "check", "--db", str(db), "--quiet"]
    return processes.run(command, capture_output=True, text=True, timeout=120)


def _serve(db: Path) -> ServerProcess:
    server = ServerProcess(db, ["--no-web"])
    server.start()
    with SyncClient(server.address) as client:
        client.create_match(pylos_config())
    return server


def _stderr(server: ServerProcess) -> list[str]:
    assert server.proc is not None and server.proc.stderr is not None
    return [line for line in server.proc.stderr.read().splitlines() if "-wal" in line]


def test_a_wal_deleted_after_a_crash_is_said_by_check_and_start_up(tmp_path: Path) -> None:
    db = tmp_path / "z.db"
    server = _serve(db)
    server.kill9()
    wal = Path(f"{db}-wal")
    assert wal.exists()
    wal.unlink()
    checked = _check(db)
    assert checked.returncode == 1, checked
    lost = [line for line in checked.stdout.splitlines() if "-wal" in line]
    assert lost == [
        f"DAMAGED: the WAL file {wal} is missing although {db} was not closed cleanly: "
        "the commits it held and not yet copied into the database (recent matches and moves) are lost, "
        "unless another program opened and closed the database since"
    ]
    again = _serve(db)
    again.terminate()
    said = _stderr(again)
    assert len(said) == 1 and f"the WAL file {wal} is missing" in said[0] and "ziggurat check" in said[0], (
        said
    )


def test_a_clean_stop_leaves_nothing_to_say(tmp_path: Path) -> None:
    db = tmp_path / "z.db"
    server = _serve(db)
    assert server.terminate() == 0
    assert not Path(f"{db}-wal").exists()  # SQLite removed it at the clean close
    checked = _check(db)
    assert checked.returncode == 0 and "-wal" not in checked.stdout, checked
    again = _serve(db)
    again.terminate()
    assert _stderr(again) == []
