"""Clone -> ``./scripts/serve`` serving: how long, how big the .venv, and that no dev tool is in it.

Issue 25's goal: "``./scripts/serve`` on a clean clone with warm caches serves in under 60 s
without building Rust; ``.venv`` holds no development tool". Each run is a fresh ``git clone``
of the repository's HEAD (committed work only) into a temporary directory, then
``./scripts/serve --host 127.0.0.1 --port 0`` timed until it prints ``ziggurat listening on``
(split into the set-up, up to ``bootstrap: .venv ready``, and the server's own start). The
first run warms pip's cache if it was cold; the figure for the goal is the last run's.

Measured beside it, in the same run:

* the baseline: what ``./scripts/serve`` installed before (a venv from requirements/dev.lock
  with both distributions editable, as ``./scripts/bootstrap`` still does for the tests), time and
  size, without the Rust build it also did whenever cargo was on PATH;
* ``pip install .`` of the server alone into a fresh venv (no extras), offline from the wheels
  serve.lock pins (``--no-index --find-links``): the smallest server install.

Usage: ``python benchmarks/install_time.py [--runs 2] [--no-baseline] [--no-pip-install]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PIP_QUIET = ["--quiet", "--disable-pip-version-check"]


def _env() -> dict[str, str]:
    """A user's shell: none of this repository's venv or Python settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def size_mb(path: Path) -> float:
    """Disk usage of a tree (as ``du``: allocated blocks, each file once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for directory, _, files in os.walk(path):
        for name in files:
            stat = os.lstat(os.path.join(directory, name))
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_blocks * 512
    return total / 1e6


def distributions(venv: Path) -> set[str]:
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    )
    return {_name(entry["name"]) for entry in json.loads(listed.stdout)}


def dev_tools() -> set[str]:
    """The development extra's own pins (pyproject.toml), by name."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {
        _name(re.split(r"[=<>\[ ]", r, maxsplit=1)[0]) for r in project["optional-dependencies"]["dev"]
    } - {"ziggurat"}


def serve_from_clone(clone: Path) -> dict[str, float | str]:
    """``./scripts/serve`` in a fresh clone until it serves; its timings, then stopped."""
    started = time.monotonic()
    proc = subprocess.Popen(
        ["./scripts/serve", "--host", "127.0.0.1", "--port", "0", "--db", "z.db", "--grace", "1"],
        cwd=clone,
        env={**_env(), "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    stderr: list[tuple[float, str]] = []

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            stderr.append((time.monotonic() - started, line.rstrip("\n")))

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        for line in proc.stdout:
            if line.startswith("ziggurat listening on "):
                break
        else:
            raise RuntimeError("scripts/serve stopped before serving:\n" + "\n".join(s for _, s in stderr))
        serving = time.monotonic() - started
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
        reader.join(10)
    ready = [at for at, line in stderr if line == "bootstrap: .venv ready"]
    text = "\n".join(line for _, line in stderr)
    return {
        "serving": serving,
        "setup": ready[0] if ready else 0.0,
        "gate": "built"
        if "building" in text or (clone / ".venv" / "bin" / "ziggurat-gate").exists()
        else "not built",
        "stderr": text,
    }


def baseline(clone: Path) -> tuple[float, float, set[str]]:
    """The old ./scripts/serve's install: dev.lock, both distributions editable (no Rust)."""
    venv = clone / ".venv-dev"
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", *PIP_QUIET]
    subprocess.run(
        [*pip, "--require-hashes", "-r", "requirements/dev.lock"], cwd=clone, env=_env(), check=True
    )
    subprocess.run(
        [*pip, "--no-deps", "--no-build-isolation", "-e", "clients/python", "-e", "."],
        cwd=clone,
        env=_env(),
        check=True,
    )
    return time.monotonic() - started, size_mb(venv), distributions(venv)


def pip_install(clone: Path, work: Path) -> tuple[float, float, set[str]]:
    """``pip install .`` into a fresh venv, offline from the wheels serve.lock pins."""
    wheels = work / "wheels"
    download = [sys.executable, "-m", "pip", "download", *PIP_QUIET, "--no-deps", "--only-binary=:all:"]
    subprocess.run(
        [*download, "--require-hashes", "-r", str(clone / "requirements" / "serve.lock"), "-d", str(wheels)],
        check=True,
    )
    venv = work / "venv-pip"
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    offline = [str(venv / "bin" / "python"), "-m", "pip", "install", *PIP_QUIET, "--no-index", "--find-links"]
    env = {k: v for k, v in _env().items() if not k.startswith("PIP_")}
    subprocess.run([*offline, str(wheels), "."], cwd=clone, env=env, check=True)
    return time.monotonic() - started, size_mb(venv), distributions(venv)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--runs", type=int, default=2, help="fresh clones served one after the other (default 2)"
    )
    parser.add_argument("--no-baseline", dest="baseline", action="store_false", help="skip the dev.lock venv")
    parser.add_argument(
        "--no-pip-install", dest="pip_install", action="store_false", help="skip pip install ."
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary clones (their path is printed)"
    )
    args = parser.parse_args()
    # Stopped from outside (SIGTERM), still stop the server and remove the clones (finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], check=True, cwd=ROOT, capture_output=True, text=True
    )
    print(f"clone of {ROOT} at {head.stdout.strip()}; load average {os.getloadavg()[0]:.1f}")
    work = Path(tempfile.mkdtemp(prefix="ziggurat-install-"))
    tools = dev_tools()
    try:
        for run in range(1, args.runs + 1):
            clone = work / f"clone{run}"
            subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True)
            served = serve_from_clone(clone)
            venv = clone / ".venv"
            names = distributions(venv)
            found = sorted(names & tools)
            print(
                f"run {run}: clone -> serving {served['serving']:.1f} s (set-up {served['setup']:.1f} s, "
                f"server start {float(served['serving']) - float(served['setup']):.1f} s); "
                f".venv {size_mb(venv):.0f} MB, {len(names)} distributions; development tools in it: "
                f"{', '.join(found) or 'none'}; ziggurat-gate {served['gate']}"
            )
            if run == args.runs:
                met = float(served["serving"]) < 60 and not found and served["gate"] == "not built"
                print(
                    "goal (< 60 s with warm caches, no Rust, no development tool): "
                    + ("MET" if met else "NOT MET")
                )
        last = work / f"clone{args.runs}"
        if args.baseline:
            seconds, size, names = baseline(last)
            print(
                f"baseline, the development lock (what ./scripts/serve installed before, Rust build not "
                f"counted): {seconds:.1f} s, {size:.0f} MB, {len(names)} distributions, development tools: "
                f"{', '.join(sorted(names & tools))}"
            )
        if args.pip_install:
            seconds, size, names = pip_install(last, work)
            print(
                f"pip install . (no extras, offline from serve.lock's wheels): {seconds:.1f} s, "
                f"{size:.0f} MB, {len(names)} distributions; textual/rich/zeroconf in it: "
                f"{', '.join(sorted(names & {'textual', 'rich', 'zeroconf', 'pygments'})) or 'none'}"
            )
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
