"""``ziggurat serve`` refuses what it cannot serve, in one line, before it says "listening".

Each case runs the real command in a subprocess: a port out of range, a port in use, a
missing directory, a file that is not a database, a read-only file, a read-only directory,
and a database another process owns (a second server, a tournament). Read-only cases run
the server in a new user namespace when the tests run as root: there root's capabilities do
not reach the files, so their modes bind it as they bind anyone.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests import processes
from tests.servers import ServerProcess
from ziggurat.cli.main import build_parser


def serve(db: Path, *extra: str, prefix: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    """Run ``ziggurat serve`` expecting it to refuse (a timeout fails the test)."""
    command = [
        *prefix,
        sys.executable,
        "-m",
        "ziggurat.cli.main",
        "serve",
        "--host",
        "127.0.0.1",
        "--no-mdns",
    ]
    command += ["--db", str(db), *extra]
    if "--port" not in extra:
        command += ["--port", "0"]
    return processes.run(command, capture_output=True, text=True, timeout=60)


def assert_refused(result: subprocess.CompletedProcess[str], *phrases: str, code: int = 1) -> None:
    """Exit ``code``, one line on stderr holding every phrase, no traceback, never "listening"."""
    assert result.returncode == code, result
    assert "listening" not in result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    if code == 1:
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    for phrase in phrases:
        assert phrase in result.stderr, result.stderr


def test_port_out_of_range_is_refused(tmp_path: Path) -> None:
    result = serve(tmp_path / "z.db", "--port", "99999")
    assert_refused(result, "99999 is not a port number", code=2)
    assert not (tmp_path / "z.db").exists()
    assert_refused(serve(tmp_path / "z.db", "--port", "-1"), "is not a port number", code=2)


def test_port_in_use_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = serve(tmp_path / "z.db", "--port", str(port))
    assert_refused(result, f"cannot listen on 127.0.0.1:{port}", "already in use")


def test_missing_directory_is_one_line(tmp_path: Path) -> None:
    assert_refused(serve(tmp_path / "nowhere" / "z.db"), "does not exist")
    assert not (tmp_path / "nowhere").exists(), "a typo in --db does not create directories"


def test_not_a_database_is_one_line(tmp_path: Path) -> None:
    db = tmp_path / "z.db"
    db.write_bytes(os.urandom(8192))
    assert_refused(serve(db), "not an SQLite database")


def bound_by_file_modes() -> list[str]:
    """A command prefix under which file modes bind this process (root ignores them)."""
    if os.geteuid() != 0:
        return []
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("running as root without unshare(1): file modes cannot be made to bind")
    probe = processes.run([unshare, "--user", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("running as root where user namespaces are disabled")
    return [unshare, "--user"]


def make_database(path: Path) -> None:
    """A real database written by the server (started and stopped)."""
    server = ServerProcess(path)
    server.start()
    assert server.terminate() == 0


def test_read_only_file_refuses_instead_of_failing_every_write(tmp_path: Path) -> None:
    db = tmp_path / "z.db"
    make_database(db)
    db.chmod(0o444)  # the directory stays writable; only the file is not
    assert_refused(serve(db, prefix=bound_by_file_modes()), f"the database {db} is read-only")


def test_read_only_directory_is_one_line(tmp_path: Path) -> None:
    directory = tmp_path / "data"
    directory.mkdir()
    make_database(directory / "z.db")
    directory.chmod(0o555)
    try:
        prefix = bound_by_file_modes()
        refused = serve(directory / "z.db", prefix=prefix)
        assert_refused(refused, f"the database directory {directory} is read-only")
        assert_refused(serve(directory / "new.db", prefix=prefix), "is read-only")
    finally:
        directory.chmod(0o755)


def test_second_server_on_one_file_refuses_naming_the_first(server_process: ServerProcess) -> None:
    server_process.start()
    assert server_process.proc is not None
    result = serve(server_process.db_path)
    assert_refused(result, f"database {server_process.db_path} is in use", f"pid {server_process.proc.pid}")
    # The first server is untouched, and once it is gone the file is free again.
    assert server_process.proc.poll() is None
    server_process.kill9()
    server_process.start()


def test_tournament_on_a_served_file_refuses(server_process: ServerProcess, tmp_path: Path) -> None:
    server_process.start()
    assert server_process.proc is not None
    config = Path(__file__).parents[2] / "examples" / "tournaments" / "pylos-round-robin.toml"
    command = [sys.executable, "-m", "ziggurat.cli.main", "tournament", "run", str(config)]
    command += ["--db", str(server_process.db_path), "--quiet"]
    result = processes.run(command, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.returncode != 0
    assert f"pid {server_process.proc.pid}" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert "tournament id" not in result.stderr, "refused before the tournament is created"


def test_tournament_database_is_its_own_file(monkeypatch: pytest.MonkeyPatch) -> None:
    args = build_parser().parse_args(["tournament", "list"])
    serve_args = build_parser().parse_args(["serve"])
    assert Path(args.db).name == "ziggurat-tournaments.db"
    assert Path(args.db) != Path(serve_args.db)
