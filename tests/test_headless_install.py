"""``pip install .`` and ``pip install ./clients/python .`` from a clone, with no package index.

A headless server's install, for real: a copy of the clone's files (what a checkout has), fresh
venvs, and pip with ``--no-index --find-links`` to a directory of the wheels
requirements/serve.lock pins (downloaded once per lock, hash-checked, then reused offline). No
index means the thin client ziggurat-client can only come from the clone (setup.py requires it by
its path): pip never looks our names up where someone else could have published them. The
lock's mdns extra (zeroconf) is left out of the wheel directory's use: ``pip install .`` asks
only for the base dependencies, so nothing of the extras, nor any development tool, is
installed. Then the installed ``ziggurat serve`` serves (gRPC and the web client) with textual,
rich and zeroconf not importable, and ``ziggurat play`` says which extra it needs.

Slow (each venv installs about twenty wheels): benchmarks/install_time.py times the same
install and ./scripts/serve from a clean clone.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests import processes
from tests.test_locks import SERVE_LOCK, read_lock
from ziggurat_client import game_config
from ziggurat_client.sync import SyncClient

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
# Only what ./scripts/serve's mDNS adds; the rest of serve.lock is the base install.
EXTRA_ONLY = {"zeroconf", "ifaddr"}
NOT_IMPORTABLE = ("textual", "rich", "pygments", "zeroconf", "pytest", "mypy", "ruff", "ray")


def _env() -> dict[str, str]:
    """A user's shell: none of this repository's Python or pip settings (no other find-links)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_"))}


def _run(
    argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    result = processes.run(argv, cwd=cwd, env=env or _env(), capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{argv} failed:\n{result.stdout}\n{result.stderr}"
    return result


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@pytest.fixture(scope="module")
def wheelhouse() -> Path:
    """The wheels serve.lock pins, in a cache directory of this lock (fetched the first time)."""
    lock = read_lock(SERVE_LOCK)
    digest = hashlib.sha256(SERVE_LOCK.read_bytes()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    directory = cache / "ziggurat-tests" / f"serve-wheels-{digest}"
    trusted = {digest for _, hashes in lock.values() for digest in hashes}
    wheels = list(directory.glob("*.whl")) if directory.is_dir() else []
    if len(wheels) < len(lock) or any(
        f"sha256:{hashlib.sha256(wheel.read_bytes()).hexdigest()}" not in trusted for wheel in wheels
    ):
        for stale in directory.parent.glob("serve-wheels-*"):  # this lock's, and earlier locks'
            shutil.rmtree(stale, ignore_errors=True)
        directory.mkdir(parents=True)
        pip = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check"]
        lock_args = ["--no-deps", "--only-binary=:all:", "--require-hashes", "-r", str(SERVE_LOCK), "-d", "."]
        _run([*pip, *lock_args], directory, env=dict(os.environ))  # this machine's pip settings
    return directory


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files of a clone that pip reads (the other clients, the gate and the tests left out)."""
    root = tmp_path_factory.mktemp("clone")
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "gate")
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(ROOT / name, root / name)
    shutil.copytree(ROOT / "server", root / "server", ignore=ignore)
    shutil.copytree(ROOT / "clients" / "python", root / "clients" / "python", ignore=ignore)
    return root


def _venv(where: Path, clone: Path, wheelhouse: Path, *targets: str) -> Path:
    """A fresh venv with ``pip install TARGETS`` run in the clone, offline; its bin directory."""
    _run([sys.executable, "-m", "venv", str(where)], clone)
    pip = [str(where / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    # --no-compile: what is installed is checked, not byte-compiled ahead (CPU the suite spends
    # on nothing: the few modules the test runs compile when imported).
    _run([*pip, "--no-compile", "--no-index", "--find-links", str(wheelhouse), *targets], clone)
    return where / "bin"


@pytest.fixture(scope="module")
def headless(clone: Path, wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip install .``: the bin directory of its venv."""
    return _venv(tmp_path_factory.mktemp("headless") / "venv", clone, wheelhouse, ".")


def _installed(bin_dir: Path) -> dict[str, dict[str, object]]:
    """{distribution name: {version, its direct_url.json or None}} of a venv."""
    probe = (
        "import importlib.metadata as m, json\n"
        "print(json.dumps({d.metadata['Name']: {'version': d.version, 'url': d.read_text('direct_url.json')}"
        " for d in m.distributions()}))"
    )
    listed = _run([str(bin_dir / "python"), "-I", "-c", probe], bin_dir)
    return {_name(name): info for name, info in json.loads(listed.stdout).items()}


def _client_url(clone: Path, installed: dict[str, dict[str, object]]) -> str:
    direct = installed["ziggurat-client"]["url"]
    assert isinstance(direct, str), "ziggurat-client was not installed from a path"
    url = json.loads(direct)["url"]
    assert isinstance(url, str)
    return url


def test_pip_install_dot_installs_the_runtime_and_nothing_else(headless: Path, clone: Path) -> None:
    installed = _installed(headless)
    lock = read_lock(SERVE_LOCK)
    expected = (set(lock) - EXTRA_ONLY - {"setuptools"}) | {"ziggurat", "ziggurat-client", "pip"}
    unexpected = set(installed) - expected - {"setuptools"}  # venv's own setuptools, if any
    assert not unexpected, f"pip install . installed more than the server's runtime: {sorted(unexpected)}"
    assert expected <= set(installed), sorted(expected - set(installed))
    pinned = {name: lock[name][0] for name in installed if name in lock and name != "setuptools"}
    assert all(installed[name]["version"] == version for name, version in pinned.items()), installed
    # The thin client came from the clone, not from an index.
    assert _client_url(clone, installed) == (clone / "clients" / "python").as_uri()
    for module in NOT_IMPORTABLE:
        probe = processes.run(
            [str(headless / "python"), "-I", "-c", f"import {module}"], capture_output=True, env=_env()
        )
        assert probe.returncode != 0, f"{module} is importable in a headless install"
    _run([str(headless / "python"), "-m", "pip", "check", "--disable-pip-version-check"], clone)


def test_the_headless_server_serves_grpc_and_the_web_client(headless: Path, tmp_path: Path) -> None:
    argv = [str(headless / "ziggurat"), "serve", "--host", "127.0.0.1", "--port", "0"]
    proc = processes.popen(
        [*argv, "--db", str(tmp_path / "z.db"), "--grace", "1"],
        cwd=tmp_path,
        env={**_env(), "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        listening = proc.stdout.readline()
        assert listening.startswith("ziggurat listening on "), listening + proc.stderr.read()
        web = proc.stdout.readline()
        assert web.startswith("ziggurat web client on "), web
        with SyncClient(listening.split()[-1]) as client:
            match = client.create_match(game_config("pylos"))
            assert client.get_match(match.match_id).match_id == match.match_id
        with urllib.request.urlopen(web.split()[-1], timeout=10) as page:  # loopback only
            assert page.status == 200 and b"<html" in page.read().lower()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    # (Not "no traceback": a SIGTERM while the search workers' pool starts can make a forkserver
    # child print one, whatever is installed; what this test is about is no failed import.)
    assert "ModuleNotFoundError" not in err and "ImportError" not in err, err
    assert "not announcing on the LAN (mDNS): zeroconf is not installed" in err, err


def test_play_says_which_extra_it_needs(headless: Path, tmp_path: Path) -> None:
    result = processes.run(
        [str(headless / "ziggurat"), "play"], cwd=tmp_path, env=_env(), capture_output=True, text=True
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "error: ziggurat play needs the terminal UI, which is not installed (textual is missing): "
        f"{headless / 'python'} -m pip install 'ziggurat[tui]'"
    ]


def test_pip_install_the_client_and_the_server_together(
    clone: Path, wheelhouse: Path, tmp_path: Path
) -> None:
    bin_dir = _venv(tmp_path / "venv", clone, wheelhouse, "./clients/python", ".")
    installed = _installed(bin_dir)
    assert {"ziggurat", "ziggurat-client"} <= set(installed)
    assert _client_url(clone, installed) == (clone / "clients" / "python").as_uri()
    _run(
        [str(bin_dir / "python"), "-I", "-c", "import ziggurat.hosting.server, ziggurat_client.bot"], tmp_path
    )
