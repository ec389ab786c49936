"""The private socket directory of ``serve --gate``: made 0700 and named after the server's
pid; the ones whose server is gone (killed with -9) are removed by the next server, and
nothing else is (hosting/private_dir.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests import processes
from ziggurat.hosting.private_dir import PREFIX, make_private_dir, remove_stale_private_dirs


def dead_pid() -> int:
    """The pid of a process that has exited (and been waited for)."""
    child = processes.popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_dead_server_s_directory_is_removed_with_its_socket(tmp_path: Path) -> None:
    stale = tmp_path / f"{PREFIX}{dead_pid()}-abc123"
    stale.mkdir(mode=0o700)
    (stale / "upstream.sock").write_bytes(b"")
    assert remove_stale_private_dirs(str(tmp_path)) == [stale]
    assert not stale.exists()


def test_a_live_process_s_directory_and_everything_else_are_kept(tmp_path: Path) -> None:
    sleeper = processes.popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        live = tmp_path / f"{PREFIX}{sleeper.pid}-abc123"
        own = make_private_dir(str(tmp_path))
        old_style = tmp_path / f"{PREFIX}k2j3h4"  # made before names carried a pid
        unrelated = tmp_path / "ziggurat-gate-notes"
        target = tmp_path / "target"
        for directory in (live, old_style, unrelated, target):
            directory.mkdir()
        link = tmp_path / f"{PREFIX}{dead_pid()}-link"  # a link is never followed or removed
        link.symlink_to(target)
        file = tmp_path / f"{PREFIX}{dead_pid()}-file"
        file.write_text("not a directory")
        assert remove_stale_private_dirs(str(tmp_path)) == []
        for kept in (live, own, old_style, unrelated, target, link, file):
            assert kept.exists() or kept.is_symlink(), kept
    finally:
        processes.stop(sleeper)


def test_the_directory_is_this_user_s_only(tmp_path: Path) -> None:
    made = make_private_dir(str(tmp_path))
    assert made.parent == tmp_path
    assert made.name.startswith(f"{PREFIX}{os.getpid()}-")
    assert made.stat().st_mode & 0o777 == 0o700


def test_a_missing_parent_removes_nothing(tmp_path: Path) -> None:
    assert remove_stale_private_dirs(str(tmp_path / "missing")) == []
