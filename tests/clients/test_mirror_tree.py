"""clients/mirror_tree.py, as clients/rust/test.sh runs it: a real git checkout's file list on
stdin, a subprocess, and a mirror whose unchanged files keep their times (what lets cargo skip
the build in a fresh clone) while changed, new, deleted and ignored files are followed."""

from __future__ import annotations

import doctest
import importlib.util
import os
import sys
from pathlib import Path

from tests import processes

SCRIPT = Path(__file__).resolve().parents[2] / "clients" / "mirror_tree.py"
OLD = 1_000_000_000  # 2001: a time no file written by this test has


def _git(checkout: Path, *args: str) -> str:
    done = processes.run(["git", "-C", str(checkout), *args], check=True, capture_output=True, text=True)
    return str(done.stdout)


def _mirror(checkout: Path, mirror: Path) -> str:
    listed = _git(checkout, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    done = processes.run(
        [sys.executable, str(SCRIPT), str(checkout), str(mirror)],
        input=listed,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return str(done.stdout)


def _files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): (f"-> {os.readlink(p)}" if p.is_symlink() else p.read_text())
        for p in sorted(root.rglob("*"))
        if (p.is_symlink() or p.is_file()) and ".git" not in p.relative_to(root).parts
    }


def test_a_mirror_follows_the_checkout_by_content_and_keeps_unchanged_files_times(tmp_path: Path) -> None:
    checkout, mirror = tmp_path / "clone", tmp_path / "mirror"
    (checkout / "src").mkdir(parents=True)
    _git(checkout.parent, "init", "-q", str(checkout))
    (checkout / ".gitignore").write_text("target/\n")
    (checkout / "src" / "lib.rs").write_text("pub fn a() {}\n")
    (checkout / "src" / "old.rs").write_text("// to be deleted\n")
    (checkout / "gen").symlink_to("src")
    _git(checkout, "add", "-A")
    _git(checkout, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qm", "the tree")
    assert "4 written, 0 unchanged, 0 removed" in _mirror(checkout, mirror)
    assert _files(mirror) == _files(checkout)
    assert _files(mirror)["gen"] == "-> src"
    os.utime(mirror / "src" / "lib.rs", (OLD, OLD))  # as if built long ago

    # A fresh clone of the same content: new times everywhere, nothing written.
    fresh = tmp_path / "fresh"
    _git(tmp_path, "clone", "-q", str(checkout), str(fresh))
    assert "0 written, 4 unchanged, 0 removed" in _mirror(fresh, mirror)
    assert (mirror / "src" / "lib.rs").stat().st_mtime == OLD

    # Edited, deleted, new (untracked) and ignored files.
    (fresh / "src" / "lib.rs").write_text("pub fn b() {}\n")
    (fresh / "src" / "old.rs").unlink()
    (fresh / "src" / "new.rs").write_text("// new\n")
    (fresh / "target").mkdir()
    (fresh / "target" / "build.out").write_text("ignored\n")
    (mirror / "stray.txt").write_text("left by a build\n")
    assert "2 written, 2 unchanged, 2 removed" in _mirror(fresh, mirror)
    assert (mirror / "src" / "lib.rs").read_text() == "pub fn b() {}\n"
    assert (mirror / "src" / "lib.rs").stat().st_mtime > OLD, "a changed file is newer than the last build"
    assert _files(mirror) == {k: v for k, v in _files(fresh).items() if not k.startswith("target")}
    assert not (mirror / "target").exists() and not (mirror / "stray.txt").exists()


def test_the_docstring_examples_hold() -> None:
    spec = importlib.util.spec_from_file_location("mirror_tree", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mirror_tree"] = module  # NamedTuple needs its module while the class is made
    try:
        spec.loader.exec_module(module)
        result = doctest.testmod(module)
    finally:
        del sys.modules["mirror_tree"]
    assert result.attempted >= 4 and result.failed == 0
