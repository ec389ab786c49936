"""./scripts/serve builds Rust only when asked: the gate with ``--gate``, never otherwise.

The scripts run for real, as bash subprocesses, in a copy of the files they read (the locks,
the pyprojects, setup.py, the gate's sources), with ``cargo`` and ``rustc`` on PATH being stand-ins
that log how they were called (a build writes a stand-in gate, as cargo would write the real
one). The copy's ``.venv`` is this repository's, as far as the scripts look: the stamp of the
installed locks and the ``ziggurat`` command; nothing is installed (``PYTHON=false``: a
bootstrap that would set a .venv up fails at once instead).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import processes

ROOT = Path(__file__).resolve().parents[1]
STAMP = ROOT / ".venv" / ".ziggurat-lock.sha256"
FAKE_CARGO = """#!/bin/sh
echo "cargo $*" >> "$CARGO_LOG"
case "$1" in
  --version) echo "cargo 1.99.0 (stand-in)" ;;
  build)
    echo "   Compiling ziggurat-gate v0.1.0 (stand-in)" >&2
    mkdir -p "$CARGO_TARGET_DIR/release"
    printf '#!/bin/sh\\necho stand-in gate\\n' > "$CARGO_TARGET_DIR/release/ziggurat-gate"
    chmod +x "$CARGO_TARGET_DIR/release/ziggurat-gate" ;;
esac
"""
FAKE_RUSTC = '#!/bin/sh\necho "rustc 1.99.0 (stand-in)"\n'


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of what scripts/serve and scripts/bootstrap read, with this .venv's stamp."""
    if not STAMP.is_file():
        pytest.fail("this repository's .venv has no lock stamp: run ./scripts/bootstrap")
    root = tmp_path / "clone"
    for name in ("scripts", "requirements"):
        shutil.copytree(ROOT / name, root / name)
    for name in ("pyproject.toml", "setup.py", "clients/python/pyproject.toml"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, root / name)
    # The package directories are part of the stamp (their names, not their files).
    for parent in ("server", "clients/python"):
        for directory in (ROOT / parent).iterdir():
            if directory.is_dir():
                (root / parent / directory.name).mkdir(parents=True, exist_ok=True)
    gate = ROOT / "server" / "gate"
    shutil.copytree(gate / "src", root / "server" / "gate" / "src", dirs_exist_ok=True)
    for name in ("Cargo.toml", "Cargo.lock"):
        shutil.copy2(gate / name, root / "server" / "gate" / name)
    venv_bin = root / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(sys.executable)
    (venv_bin / "ziggurat").symlink_to(Path(sys.executable).parent / "ziggurat")
    shutil.copy2(STAMP, root / ".venv" / STAMP.name)
    tools = tmp_path / "tools"
    tools.mkdir()
    for name, text in (("cargo", FAKE_CARGO), ("rustc", FAKE_RUSTC)):
        (tools / name).write_text(text)
        (tools / name).chmod(0o755)
    return root


def _run(tree: Path, *argv: str) -> tuple[subprocess.CompletedProcess[str], str]:
    """Run a script of the copy with the stand-in cargo first on PATH; (result, cargo's log)."""
    log = tree.parent / "cargo.log"
    env = {
        **os.environ,
        "PATH": f"{tree.parent / 'tools'}{os.pathsep}{os.environ['PATH']}",
        "CARGO_LOG": str(log),
        # The copy's own: never the machine's gate cache, which the stand-in would overwrite.
        "CARGO_TARGET_DIR": str(tree.parent / "gate-target"),
        "PYTHON": "false",
    }
    result = processes.run(list(argv), cwd=tree, env=env, capture_output=True, text=True, timeout=120)
    assert "setting up .venv" not in result.stderr, (
        "the copy's stamp is stale: run ./scripts/bootstrap in the repository first\n" + result.stderr
    )
    calls = log.read_text() if log.exists() else ""
    log.unlink(missing_ok=True)
    return result, calls


def test_serve_without_gate_never_calls_cargo(tree: Path) -> None:
    result, calls = _run(tree, "./scripts/serve", "--help")
    assert result.returncode == 0, result.stderr
    assert "usage: ziggurat serve" in result.stdout
    assert calls == "", f"scripts/serve called cargo without --gate: {calls}"
    assert not (tree / ".venv" / "bin" / "ziggurat-gate").exists()
    assert "ziggurat-gate" not in result.stderr


def test_serve_with_gate_builds_it_and_says_so(tree: Path) -> None:
    result, calls = _run(tree, "./scripts/serve", "--gate", "--help")
    assert result.returncode == 0, result.stderr
    assert "usage: ziggurat serve" in result.stdout
    assert "cargo build --release --locked" in calls, calls
    lines = result.stderr.splitlines()
    announced = [
        i for i, line in enumerate(lines) if line.startswith("bootstrap: building .venv/bin/ziggurat-gate")
    ]
    progress = [i for i, line in enumerate(lines) if "Compiling ziggurat-gate" in line]
    built = [i for i, line in enumerate(lines) if line.startswith("bootstrap: ziggurat-gate built in ")]
    assert announced and progress and built, result.stderr
    assert announced[0] < progress[0] < built[0], result.stderr
    gate = tree / ".venv" / "bin" / "ziggurat-gate"
    assert "stand-in gate" in gate.read_text()
    # Built once: the next --gate finds it up to date and says nothing.
    again, calls = _run(tree, "./scripts/serve", "--gate", "--help")
    assert again.returncode == 0 and "build" not in calls and "building" not in again.stderr, again.stderr


def test_serve_with_its_own_gate_binary_builds_nothing(tree: Path) -> None:
    result, calls = _run(tree, "./scripts/serve", "--gate", "--gate-binary=/opt/gate", "--help")
    assert result.returncode == 0, result.stderr
    assert calls == "", calls


def test_the_development_bootstrap_still_builds_the_gate(tree: Path) -> None:
    if not STAMP.read_text().startswith("dev "):
        pytest.skip("this repository's .venv was set up by scripts/serve (--runtime), not for development")
    result, calls = _run(tree, "./scripts/bootstrap")
    assert result.returncode == 0, result.stderr
    assert "cargo build --release --locked" in calls, calls
    assert (tree / ".venv" / "bin" / "ziggurat-gate").exists()
