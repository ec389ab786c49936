"""Control groups for sandboxes: made, limited, joined before the first fork, emptied and removed.

cgroup v1 is exercised for real where the host has it (this project's machines are v1 hybrids);
cgroup v2's mechanics (placement, ``cgroup.kill``, removal) for real on the unified hierarchy,
and which limits it writes on a directory laid out like one (no v2 host here offers the
memory, pids and cpu controllers).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests import processes
from ziggurat.tournament.cgroups import (
    BASE_NAME,
    Cgroup,
    CgroupLimits,
    CgroupTree,
    CgroupUnavailable,
    find_tree,
)

LIMITS = CgroupLimits(memory_bytes=64 << 20, processes=16, cpus=0.5)


def v1_available() -> bool:
    return os.geteuid() == 0 and Path("/sys/fs/cgroup/memory/cgroup.procs").exists()


def v2_mount() -> Path | None:
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        before, _, after = line.partition(" - ")
        if after.startswith("cgroup2 "):
            return Path(before.split()[4])
    return None


def joined_sleeper(tree: CgroupTree, name: str) -> tuple[subprocess.Popen[bytes], Cgroup]:
    group = tree.create(name, LIMITS)
    process = processes.popen(group.wrap(["sleep", "60"]))
    deadline = time.monotonic() + 5
    while process.pid not in group.pids() and time.monotonic() < deadline:
        time.sleep(0.01)
    return process, group


@pytest.mark.skipif(not v1_available(), reason="needs root and a cgroup v1 memory hierarchy")
def test_v1_groups_are_limited_joined_before_exec_and_removed() -> None:
    tree = find_tree()
    assert tree.version == 1  # the v2 hierarchy here lacks memory, pids and cpu
    name = f"test-{os.getpid()}"
    process, group = joined_sleeper(tree, name)
    try:
        assert len(group.paths) == 3
        for path in group.paths:
            assert str(process.pid) in (path / "cgroup.procs").read_text().split()  # the exec'd sleep itself
        by_controller = {p.parts[4]: p for p in group.paths}
        assert (by_controller["memory"] / "memory.limit_in_bytes").read_text().strip() == str(64 << 20)
        assert (by_controller["pids"] / "pids.max").read_text().strip() == "16"
        assert (by_controller["cpu"] / "cpu.cfs_quota_us").read_text().strip() == "50000"
        assert (by_controller["cpu"] / "cpu.cfs_period_us").read_text().strip() == "100000"
    finally:
        assert group.remove()
    assert process.wait(5) == -9  # killed with the group
    assert not any(path.exists() for path in group.paths)
    tree.close()


@pytest.mark.skipif(not v1_available(), reason="needs root and a cgroup v1 memory hierarchy")
def test_v1_memory_cap_counts_every_process_and_is_reported() -> None:
    tree = find_tree()
    group = tree.create(f"test-oom-{os.getpid()}", CgroupLimits(48 << 20, 32, 1.0))
    # three processes of 24 MB each, far from any per-process limit: only the total stops them
    hog = "import os,time\nfor _ in range(2): os.fork()\nb = b'x' * (24 << 20)\ntime.sleep(5)\n"
    try:
        processes.run(group.wrap(["python3", "-c", hog]), timeout=30, check=False)
        assert group.oom_kills() >= 1
    finally:
        assert group.remove()
        tree.close()


@pytest.mark.skipif(v2_mount() is None or os.geteuid() != 0, reason="needs root and a cgroup v2 mount")
def test_v2_groups_are_joined_killed_and_removed() -> None:
    tree = find_tree(controllers=())  # placement and killing need no controller
    if tree.version != 2:
        pytest.skip("the cgroup v2 hierarchy cannot be used here")
    process, group = joined_sleeper(tree, f"test-{os.getpid()}")
    assert (group.paths[0] / "cgroup.procs").read_text().split() == [str(process.pid)]
    assert group.remove()
    assert process.wait(5) == -9
    tree.close()


def fake_v2(tmp_path: Path, own: str, procs: str = "") -> tuple[Path, Path, Path]:
    """A directory laid out like a cgroup v2 mount offering memory, pids and cpu."""
    mount = tmp_path / "cgroup2"
    group = mount / own.strip("/")
    group.mkdir(parents=True)
    for directory in {mount, group}:
        (directory / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
        (directory / "cgroup.subtree_control").write_text("")
    (group / "cgroup.procs").write_text(procs)
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text(f"35 24 0:30 / {mount} rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n")
    membership = tmp_path / "cgroup"
    membership.write_text(f"0::{own}\n")
    return group, mountinfo, membership


def test_v2_limits_and_controllers_are_written(tmp_path: Path) -> None:
    group, mountinfo, membership = fake_v2(tmp_path, "/")
    tree = find_tree(mountinfo=mountinfo, own=membership)
    assert tree.version == 2 and tree.bases == (group,)  # at the top: beside the host's own groups
    assert (group / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    made = tree.create("t1.seat1", LIMITS)
    path = made.paths[0]
    assert path == group / "ziggurat-t1.seat1"
    assert (path / "memory.max").read_text() == str(64 << 20)
    assert (path / "pids.max").read_text() == "16"
    assert (path / "cpu.max").read_text() == "50000 100000"
    assert made.wrap(["bot"])[-2:] == [str(path / "cgroup.procs"), "bot"]


def test_v2_delegated_group_moves_the_runner_to_a_leaf(tmp_path: Path) -> None:
    group, mountinfo, membership = fake_v2(tmp_path, "/user.slice/run-1.scope", procs=f"{os.getpid()}\n")
    tree = find_tree(mountinfo=mountinfo, own=membership)
    assert tree.version == 2 and tree.bases == (group / BASE_NAME,)
    assert (group / "runner" / "cgroup.procs").read_text() == str(os.getpid())
    assert (group / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    assert (group / BASE_NAME / "cpu.weight").read_text() == "10000"  # the runner does not starve them


def test_v2_group_shared_with_other_processes_is_refused_saying_why(tmp_path: Path) -> None:
    _, mountinfo, membership = fake_v2(tmp_path, "/session.scope", procs=f"{os.getpid()}\n1\n")
    with pytest.raises(CgroupUnavailable, match=r"holds other processes .* Delegate=yes"):
        find_tree(mountinfo=mountinfo, own=membership)


def test_no_usable_hierarchy_says_what_is_missing(tmp_path: Path) -> None:
    mountinfo = tmp_path / "mountinfo"
    mountinfo.write_text("")
    membership = tmp_path / "cgroup"
    membership.write_text("0::/\n")
    with pytest.raises(
        CgroupUnavailable, match="no cgroup v2 hierarchy is mounted; no cgroup v1 hierarchy has"
    ):
        find_tree(mountinfo=mountinfo, own=membership)
