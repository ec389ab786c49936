"""The database files are the server's alone, and its directory is checked at start.

Real ``ziggurat serve`` processes under the usual umask (022) on real files: the database,
its ``-wal`` and ``-shm`` are created 0600 and cannot be read by another user (tried as
``nobody`` when the tests run as root); an older database left 0644 is made private at
start; a directory every user may write to is refused in one line, and one others may list
gets a one-line warning.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import processes
from tests.hosting.test_startup_errors import assert_refused, serve
from tests.servers import ServerProcess, pylos_config
from ziggurat_client.sync import SyncClient

NOBODY = 65534


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _read_as_nobody(path: Path) -> subprocess.CompletedProcess[bytes]:
    """``cat path`` as the user nobody, dropped by ``setpriv`` (util-linux) after exec.

    Not by subprocess (``user``/``group``, or a ``preexec_fn``): either makes CPython fork
    rather than vfork, and a plain fork of a process that has gRPC's threads runs gRPC's fork
    handlers in the child, which died there of SIGABRT once and of SIGSEGV once in CI, before it
    could cat. A vforked child runs nothing but the exec of ``setpriv``.
    """
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is needed to read a file as another user")
    drop = [setpriv, "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups", "--"]
    return processes.run([*drop, "cat", str(path)], capture_output=True, timeout=30)


def _serve_and_create(db: Path) -> ServerProcess:
    old = os.umask(0o022)
    try:
        server = ServerProcess(db, ["--no-web"])
        server.start()
    finally:
        os.umask(old)
    with SyncClient(server.address) as client:
        client.create_match(pylos_config())
    return server


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory every user may reach (pytest's own tmp_path sits under a 0700 directory),
    so that only the files' own modes can keep another user out."""
    path = Path(tempfile.mkdtemp(prefix="ziggurat-modes-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_database_wal_and_shm_are_private(open_dir: Path) -> None:
    tmp_path = open_dir
    db = tmp_path / "z.db"
    server = _serve_and_create(db)
    try:
        files = [db, Path(f"{db}-wal"), Path(f"{db}-shm")]
        assert {f.name: _mode(f) for f in files} == {f.name: 0o600 for f in files}
        if os.geteuid() == 0:
            for f in files:
                refused = _read_as_nobody(f)
                assert refused.returncode != 0 and b"Permission denied" in refused.stderr, (f, refused)
            # the same child reads a file that is open to it: the refusal above is the mode's
            (tmp_path / "open.txt").write_text("x")
            (tmp_path / "open.txt").chmod(0o644)
            assert _read_as_nobody(tmp_path / "open.txt").returncode == 0
    finally:
        server.stop()


def test_an_older_world_readable_database_is_made_private(tmp_path: Path) -> None:
    db = tmp_path / "z.db"
    first = _serve_and_create(db)
    first.terminate()
    db.chmod(0o644)
    server = _serve_and_create(db)
    try:
        assert _mode(db) == 0o600
        assert _mode(Path(f"{db}-wal")) == 0o600
    finally:
        server.stop()


def test_a_directory_every_user_may_write_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert_refused(serve(shared / "z.db"), "may be written by every user", "chmod 700")
    assert not (shared / "z.db").exists()
    shared.chmod(0o1777)  # with the sticky bit (as /tmp) nobody may delete another's files
    server = ServerProcess(shared / "z.db", ["--no-web"])
    try:
        server.start()
    finally:
        server.stop()


@pytest.mark.parametrize(("mode", "warned"), [(0o755, True), (0o700, False)])
def test_a_directory_others_may_list_gets_one_warning(tmp_path: Path, mode: int, warned: bool) -> None:
    directory = tmp_path / "d"
    directory.mkdir()
    directory.chmod(mode)
    server = ServerProcess(directory / "z.db", ["--no-web"])
    try:
        server.start()
    finally:
        server.stop()
    assert server.proc is not None and server.proc.stderr is not None
    warnings = [line for line in server.proc.stderr.read().splitlines() if "open to other users" in line]
    assert len(warnings) == (1 if warned else 0), warnings
    if warned:
        assert f"chmod 700 {directory}" in warnings[0]


def test_a_tournament_database_opened_first_by_its_own_store_is_private(open_dir: Path) -> None:
    """A tournament's database holds the match tables too (seeds in clear): created 0600 even
    when the tournament's store opens it before the match store does."""
    from ziggurat.tournament.store import TournamentStore

    db = open_dir / "t.db"
    old = os.umask(0o022)
    try:
        store = TournamentStore(db)
        try:
            store.create("t1", "cup", "cup.toml", "name = 'cup'", b"secret")
        finally:
            store.close()
    finally:
        os.umask(old)
    assert _mode(db) == 0o600
    assert _read_as_nobody(db).returncode != 0
