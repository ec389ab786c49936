"""Sandbox users leased host-wide: two tournaments at once never share one; dead owners' leases return."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import processes
from ziggurat.tournament.uids import NoFreeUid, UidLeases

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="sandbox users are leased only as root")

# What a tournament does for each game: confine a program (a sandbox user leased for it).
TOURNAMENT = """
import sys
from ziggurat.tournament.sandbox import Sandbox, SandboxPolicy
sandbox = Sandbox(SandboxPolicy(cgroups=False))
uids = [sandbox.confine(["true"], cwd=None, env={}, label=f"g{i}").uid for i in range(25)]
print(" ".join(map(str, uids)), flush=True)
sys.stdin.read()
"""

HOLDER = """
import sys
from pathlib import Path
from ziggurat.tournament.uids import UidLeases
leases = UidLeases(int(sys.argv[1]), 2, Path(sys.argv[2]))
print(leases.acquire(), leases.acquire(), flush=True)
sys.stdin.read()
"""


def start(script: str, *args: str) -> subprocess.Popen[str]:
    return processes.popen(
        [sys.executable, "-c", script, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def uids_of(process: subprocess.Popen[str]) -> set[int]:
    assert process.stdout is not None
    return {int(uid) for uid in process.stdout.readline().split()}


def real_uid(pid: int) -> int | None:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    return None


def test_two_tournaments_at_once_never_share_a_sandbox_user() -> None:
    first, second = start(TOURNAMENT), start(TOURNAMENT)  # the host-wide lease directory, for real
    try:
        mine, theirs = (uids_of(first), uids_of(second))
        assert len(mine) == 25 and len(theirs) == 25  # a user per sandbox
        assert not mine & theirs
    finally:
        for process in (first, second):
            process.communicate("", timeout=10)


def test_a_dead_owners_leases_are_reclaimed(tmp_path: Path) -> None:
    holder = start(HOLDER, "70000", str(tmp_path))
    assert holder.stdout is not None
    assert holder.stdout.readline().split() == ["70000", "70001"]
    leases = UidLeases(70000, 2, tmp_path)
    with pytest.raises(NoFreeUid, match="all 2 sandbox users from 70000 are in use"):
        leases.acquire()  # while its owner lives
    holder.communicate("", timeout=10)
    assert {leases.acquire(), leases.acquire()} == {70000, 70001}  # it died without releasing them
    leases.release(70000)
    assert leases.held() == [70001]


def test_a_user_still_running_processes_is_not_leased(tmp_path: Path) -> None:
    squatter = processes.popen(["setpriv", "--reuid=70010", "--regid=70010", "--clear-groups", "sleep", "30"])
    try:
        deadline = time.monotonic() + 5
        while real_uid(squatter.pid) != 70010 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert UidLeases(70010, 2, tmp_path).acquire() == 70011  # no lease names 70010, but it runs
    finally:
        processes.stop(squatter)
