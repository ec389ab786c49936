"""tests/processes.py: servers a test run started die with it, even when it is killed with -9.

Each test plays the test run in a child Python process that starts servers through the
helper, then kills that child with SIGKILL (no teardown, no atexit) and watches the servers
go: a ``ziggurat serve`` it started itself (its death signal), and a ``ziggurat serve
--workers 2`` started by a shell in the background, as docs/scaling.md's example does (a
grandchild: the reaper). A last test keeps every test on the helper.
"""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import processes
from ziggurat.hosting.shards import shard_path

REPO = Path(__file__).resolve().parents[1]
SERVE = [sys.executable, "-m", "ziggurat.cli.main", "serve", "--host", "127.0.0.1", "--port", "0"]

# The stand-in for a test run: starts what argv[2] says through the helper, prints the pids
# to watch on one line, then waits to be killed.
RUN = """
import os, subprocess, sys, time
sys.path.insert(0, sys.argv[1])
from tests import processes
serve, db = sys.argv[3:5]
if sys.argv[2] == "direct":
    server = processes.popen(
        [*serve.split("|"), "--db", db, "--no-web", "--no-mdns"], stdout=subprocess.PIPE, text=True
    )
    assert server.stdout.readline().startswith("ziggurat listening on ")
    print(server.pid, flush=True)
else:  # docs/scaling.md: the shell puts the supervisor in the background
    out = os.path.join(os.path.dirname(db), "serve.out")
    command = f"{serve.replace('|', ' ')} --workers 2 --db {db} --no-web --no-mdns"
    script = f"{command} >{out} 2>&1 & echo $! >{out}.pid; wait"
    shell = processes.popen(["bash", "-c", script])
    while "ziggurat workers:" not in (open(out).read() if os.path.exists(out) else ""):
        time.sleep(0.1)
    print(shell.pid, open(out + ".pid").read().strip(), flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent to read its status is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _owner_pid(db: Path, index: int) -> int:
    """The pid holding shard ``index``'s owner lock: worker ``index`` of a --workers server."""
    return int(Path(f"{shard_path(db, index)}.lock").read_text().split()[1].rstrip(":"))


def _gone_within(pids: list[int], seconds: float) -> list[int]:
    """The pids still running after ``seconds`` (at most)."""
    deadline = time.monotonic() + seconds
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [pid for pid in pids if _alive(pid)]


def _test_run(tmp_path: Path, how: str) -> tuple[subprocess.Popen[str], list[int]]:
    """A child Python process playing a test run; the pids it reported."""
    db = tmp_path / "z.db"
    run = processes.popen(
        [sys.executable, "-c", RUN, str(REPO), how, "|".join(SERVE), str(db)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert run.stdout is not None
    line = run.stdout.readline()
    assert line, "the stand-in test run failed to start its servers"
    return run, [int(word) for word in line.split()]


def test_a_server_the_killed_test_run_started_dies_with_it(tmp_path: Path) -> None:
    run, [server] = _test_run(tmp_path, "direct")
    try:
        assert _alive(server)
        os.kill(run.pid, signal.SIGKILL)
        assert run.wait(10) == -signal.SIGKILL
        assert _gone_within([server], 5) == [], "the server outlived the test run killed with -9"
    finally:
        processes.stop(run)


def test_a_shell_s_background_supervisor_and_its_workers_die_with_the_killed_test_run(
    tmp_path: Path,
) -> None:
    run, [shell, supervisor] = _test_run(tmp_path, "shell")
    try:
        workers = [_owner_pid(tmp_path / "z.db", index) for index in range(2)]
        everything = [shell, supervisor, *workers]
        assert all(_alive(pid) for pid in everything)
        os.kill(run.pid, signal.SIGKILL)
        assert run.wait(10) == -signal.SIGKILL
        left = _gone_within(everything, 5)
        assert left == [], f"still running 5 s after the test run was killed with -9: {left}"
    finally:
        processes.stop(run)


def test_run_kills_what_a_shell_left_in_the_background(tmp_path: Path) -> None:
    """A doc example that exits without stopping its server (or is cut off by its timeout)."""
    pid_file = tmp_path / "sleeper.pid"
    done = processes.run(["bash", "-c", f"sleep 300 & echo $! >{pid_file}"], timeout=30)
    assert done.returncode == 0
    assert _gone_within([int(pid_file.read_text())], 5) == []
    with pytest.raises(subprocess.TimeoutExpired):
        processes.run(["bash", "-c", f"sleep 300 & echo $! >{pid_file}; wait"], timeout=1)
    assert _gone_within([int(pid_file.read_text())], 5) == []


# Calls that start a program; in tests only tests/processes.py may make them.
SPAWNING = {
    ("subprocess", name)
    for name in ("Popen", "run", "call", "check_call", "check_output", "getoutput", "getstatusoutput")
} | {
    ("asyncio", "create_subprocess_exec"),
    ("asyncio", "create_subprocess_shell"),
    ("os", "system"),
    ("os", "popen"),
    ("os", "posix_spawn"),
    ("os", "posix_spawnp"),
    ("os", "spawnv"),
    ("os", "spawnve"),
    ("os", "spawnvp"),
    ("os", "spawnl"),
    ("os", "spawnlp"),
}


def test_every_test_starts_its_processes_through_the_helper() -> None:
    """A process started around the helper would outlive a killed test run again."""
    offenders = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        if path == REPO / "tests" / "processes.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and (node.func.value.id, node.func.attr) in SPAWNING
            ):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not offenders, f"start these through tests/processes.py: {offenders}"
