"""Control groups for sandboxes: one per sandbox, with a memory, process and CPU cap for all of it.

Per-process limits (``prlimit``) do not bound a program that starts several processes: three
processes under a 4 GB address-space cap hold 12 GB. A control group bounds them together,
kernel-side, however they fork. Two kinds of hosts exist and both are supported:

* **cgroup v2** (the unified hierarchy, e.g. ``/sys/fs/cgroup`` on current distributions):
  sandbox groups are made at the top (as root) or in a delegated group (below
  ``ziggurat/``, the runner moving into a ``runner`` leaf) when the ``memory``, ``pids`` and
  ``cpu`` controllers can be enabled for their children. Limits: ``memory.max`` (with
  ``memory.swap.max = 0`` and ``memory.oom.group = 1``), ``pids.max``, ``cpu.max``;
  everything is killed with ``cgroup.kill``.
* **cgroup v1** (hybrid hosts, e.g. ``/sys/fs/cgroup/{memory,pids,cpu}``): one group in each of
  the three hierarchies, in the tournament's own (``ziggurat-ID.N.LABEL``). Limits:
  ``memory.limit_in_bytes`` (and ``memory.memsw.limit_in_bytes`` where swap is accounted),
  ``pids.max``, ``cpu.cfs_quota_us``/``cpu.cfs_period_us``; everything is killed by
  signalling each process listed in ``cgroup.procs`` until none is left.

A process joins its group before it can fork: the sandbox's command line starts with a tiny
shell that writes its own pid into every ``cgroup.procs`` and then ``exec``-s the rest
(:meth:`Cgroup.wrap`), so the program and everything it starts are inside from the first
instruction. The sandboxed program cannot leave: the files are root's and not in its view.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

CONTROLLERS = ("memory", "pids", "cpu")
BASE_NAME = "ziggurat"  # in a delegated cgroup v2 group: where sandbox groups are made
PREFIX = "ziggurat-"  # of every sandbox group's name
BASE_CPU_WEIGHT = "10000"  # cgroup v2's highest: the sandboxes, each capped, are not starved by the runner
CPU_PERIOD_US = 100_000
REMOVE_SECONDS = 5.0  # how long removing a group waits for its killed processes to be gone
_JOIN = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); done; exec "$@"'
)


class CgroupUnavailable(RuntimeError):
    """No control group with the needed controllers can be made here (the message says why)."""


@dataclass(frozen=True, slots=True)
class CgroupLimits:
    """What one sandbox may use, all its processes together."""

    memory_bytes: int  # RAM, including the pages of its tmpfs files
    processes: int  # processes and threads
    cpus: float  # CPU time per wall-clock second (1.0: one core's worth)


@dataclass(frozen=True, slots=True)
class Cgroup:
    """One sandbox's group: a directory per hierarchy (one on v2, three on v1)."""

    version: int
    paths: tuple[Path, ...]

    @property
    def memory_path(self) -> Path | None:
        """The directory holding the memory controller's files (None: no memory controller)."""
        if self.version == 2:
            return self.paths[0] if self.paths else None
        return next((p for p in self.paths if _hierarchy_has(p, "memory.limit_in_bytes")), None)

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` preceded by the shell that moves itself into this group and then ``exec``-s it."""
        procs = [str(path / "cgroup.procs") for path in self.paths]
        return ["/bin/sh", "-c", _JOIN, "ziggurat-cgroup", str(len(procs)), *procs, *argv]

    def pids(self) -> set[int]:
        """Every process in the group now."""
        out: set[int] = set()
        for path in self.paths:
            with contextlib.suppress(OSError):
                out.update(int(line) for line in (path / "cgroup.procs").read_text().split())
        return out

    def oom_kills(self) -> int:
        """How many processes the kernel killed in this group for reaching its memory cap."""
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        if self.memory_path is None:
            return 0
        try:
            lines = (self.memory_path / name).read_text().splitlines()
        except OSError:
            return 0
        for line in lines:
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def kill(self) -> None:
        """SIGKILL every process in the group (v2: at once with ``cgroup.kill``)."""
        if self.version == 2 and (self.paths[0] / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                (self.paths[0] / "cgroup.kill").write_text("1")
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def remove(self, wait: float = REMOVE_SECONDS) -> bool:
        """Kill everything in the group and remove it; False when it could not be removed in time."""
        deadline = time.monotonic() + wait
        while True:
            self.kill()
            left = [path for path in self.paths if path.exists()]
            for path in left:
                with contextlib.suppress(OSError):
                    path.rmdir()  # fails while a process (even a dying one) is still inside
            if not any(path.exists() for path in self.paths):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)


@dataclass(frozen=True, slots=True)
class CgroupTree:
    """Where one host makes sandbox groups: the base directory of each hierarchy used."""

    version: int
    bases: tuple[Path, ...]  # v2: (base,); v1: one base per controller, in ``controllers`` order
    controllers: tuple[str, ...] = CONTROLLERS  # whose limits are set (tests: fewer)
    made_base: bool = False  # the bases are ours (BASE_NAME), removed when empty

    def create(self, name: str, limits: CgroupLimits) -> Cgroup:
        """A new empty group called ``name`` with ``limits`` (an old one of that name is removed first)."""
        if "/" in name or not name:
            raise ValueError(f"bad cgroup name {name!r}")
        self._ensure_bases()
        group = Cgroup(self.version, tuple(base / (PREFIX + name) for base in self.bases))
        if any(path.exists() for path in group.paths):
            group.remove()  # left by a run that was killed
        try:
            for path in group.paths:
                try:
                    path.mkdir()
                except FileNotFoundError:  # another tournament just removed the base, empty
                    self._ensure_bases()
                    path.mkdir()
            if self.version == 2:
                _write_v2_limits(group.paths[0], limits, self.controllers)
            else:
                _write_v1_limits(group.paths, limits)
        except OSError as error:
            group.remove()
            raise CgroupUnavailable(f"cannot set up the control group {group.paths[0]}: {error}") from None
        return group

    def close(self) -> None:
        """Remove the base directory if it is ours and no other tournament uses it any more."""
        if self.made_base:
            for base in self.bases:
                with contextlib.suppress(OSError):
                    base.rmdir()

    def _ensure_bases(self) -> None:
        if not self.made_base:
            return
        for base in self.bases:
            base.mkdir(parents=True, exist_ok=True)
        _enable(self.bases[0], self.controllers)


def find_tree(
    *,
    controllers: Sequence[str] = CONTROLLERS,
    mountinfo: Path = Path("/proc/self/mountinfo"),
    own: Path = Path("/proc/self/cgroup"),
) -> CgroupTree:
    """The hierarchy to make sandbox groups in: cgroup v2 when it has ``controllers``, else v1.

    Raises :class:`CgroupUnavailable` saying what is missing on both.
    """
    mounts = _mounts(mountinfo)
    memberships = _memberships(own)
    reasons: list[str] = []
    v2_mount = next((point for kind, _, point in mounts if kind == "cgroup2"), None)
    if v2_mount is not None:
        try:
            return _v2_tree(v2_mount, memberships.get("", "/"), controllers)
        except CgroupUnavailable as error:
            reasons.append(str(error))
    else:
        reasons.append("no cgroup v2 hierarchy is mounted")
    try:
        return _v1_tree(mounts, memberships, controllers)
    except CgroupUnavailable as error:
        reasons.append(str(error))
    raise CgroupUnavailable("; ".join(reasons))


def _v2_tree(mount: Path, own: str, controllers: Sequence[str]) -> CgroupTree:
    group = mount / own.lstrip("/")
    available = _words(group / "cgroup.controllers")
    missing = [c for c in controllers if c not in available]
    if missing:
        raise CgroupUnavailable(
            f"cgroup v2 at {group} does not offer the {', '.join(missing)} controller(s) "
            "(not delegated to this user, or bound to cgroup v1)"
        )
    try:
        if group == mount:  # the root may hold processes and hand controllers down at once
            _enable(group, controllers)
            return CgroupTree(2, (group,), tuple(controllers))
        # below the root, no process may live in a group that hands controllers down: the
        # runner moves to a leaf, the sandboxes go into a base beside it, weighted high enough
        # that the runner does not starve them (each is capped by its own cpu.max anyway)
        _move_self_to_leaf(group, controllers)
        _enable(group, controllers)
        base = group / BASE_NAME
        base.mkdir(exist_ok=True)
        _enable(base, controllers)
        if "cpu" in controllers:
            (base / "cpu.weight").write_text(BASE_CPU_WEIGHT)
    except OSError as error:
        raise CgroupUnavailable(f"cannot make cgroup v2 groups below {group}: {error}") from None
    return CgroupTree(2, (base,), tuple(controllers), made_base=True)


def _move_self_to_leaf(group: Path, controllers: Sequence[str]) -> None:
    """Let ``group`` hand controllers down: move this process into a leaf group of its own.

    cgroup v2's rule is "no internal processes": a non-root group with controllers enabled for
    its children holds no process itself. In a delegated group (``systemd-run --scope -p
    Delegate=yes``) the runner is the only process, and moves into ``group/runner``.
    """
    if not (set(controllers) - _words(group / "cgroup.subtree_control")):
        return
    others = _pids(group) - {os.getpid()}
    if not others:
        leaf = group / "runner"
        try:
            leaf.mkdir(exist_ok=True)
            (leaf / "cgroup.procs").write_text(str(os.getpid()))
        except OSError as error:
            raise CgroupUnavailable(f"cannot move the tournament into {leaf}: {error}") from None
        return
    raise CgroupUnavailable(
        f"cgroup v2 group {group} holds other processes ({len(others)}), so it cannot hand its "
        "controllers to sandbox groups; run the tournament in a group of its own "
        "(e.g. systemd-run --scope -p Delegate=yes ziggurat tournament run …) or as root"
    )


def _v1_tree(
    mounts: Sequence[tuple[str, frozenset[str], Path]],
    memberships: dict[str, str],
    controllers: Sequence[str],
) -> CgroupTree:
    bases: list[Path] = []
    for controller in controllers:
        point = next((p for kind, names, p in mounts if kind == "cgroup" and controller in names), None)
        if point is None:
            raise CgroupUnavailable(f"no cgroup v1 hierarchy has the {controller} controller")
        # in the tournament's own group, as siblings of its other children: on the cpu
        # hierarchy each sandbox then weighs as much as any other group there, as it did as a
        # session (autogroup) of its own before it had a group
        base = point / memberships.get(controller, "/").lstrip("/")
        if not os.access(base, os.W_OK):
            raise CgroupUnavailable(f"cannot make cgroup v1 groups in {base}: permission denied")
        bases.append(base)
    return CgroupTree(1, tuple(bases), tuple(controllers))


def _write_v2_limits(path: Path, limits: CgroupLimits, controllers: Sequence[str]) -> None:
    if "memory" in controllers:
        (path / "memory.max").write_text(str(limits.memory_bytes))
        _write_if_there(path / "memory.swap.max", "0")
        _write_if_there(path / "memory.oom.group", "1")  # an OOM kill takes the whole sandbox
    if "pids" in controllers:
        (path / "pids.max").write_text(str(limits.processes))
    if "cpu" in controllers:
        (path / "cpu.max").write_text(f"{max(1000, round(limits.cpus * CPU_PERIOD_US))} {CPU_PERIOD_US}")


def _write_v1_limits(paths: Iterable[Path], limits: CgroupLimits) -> None:
    for path in paths:
        if (path / "memory.limit_in_bytes").exists():
            (path / "memory.limit_in_bytes").write_text(str(limits.memory_bytes))
            _write_if_there(path / "memory.memsw.limit_in_bytes", str(limits.memory_bytes))
        if (path / "pids.max").exists():
            (path / "pids.max").write_text(str(limits.processes))
        if (path / "cpu.cfs_quota_us").exists():
            (path / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
            (path / "cpu.cfs_quota_us").write_text(str(max(1000, round(limits.cpus * CPU_PERIOD_US))))


def _write_if_there(path: Path, value: str) -> None:
    if path.exists():
        path.write_text(value)


def _enable(group: Path, controllers: Iterable[str]) -> None:
    wanted = [c for c in controllers if c not in _words(group / "cgroup.subtree_control")]
    if wanted:
        (group / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))


def _words(path: Path) -> set[str]:
    try:
        return set(path.read_text().split())
    except OSError:
        return set()


def _pids(group: Path) -> set[int]:
    try:
        return {int(word) for word in (group / "cgroup.procs").read_text().split()}
    except OSError:
        return set()


def _hierarchy_has(path: Path, filename: str) -> bool:
    return (path / filename).exists() or (path.parent / filename).exists()


def _mounts(mountinfo: Path) -> list[tuple[str, frozenset[str], Path]]:
    """(fstype, v1 controllers, mount point) of every cgroup mount (``proc(5)``, mountinfo)."""
    out: list[tuple[str, frozenset[str], Path]] = []
    try:
        lines = mountinfo.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        before, sep, after = line.partition(" - ")
        if not sep:
            continue
        fields, tail = before.split(), after.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        point = Path(fields[4].replace("\\040", " "))
        options = frozenset(tail[2].split(",")) if tail[0] == "cgroup" else frozenset()
        out.append((tail[0], options, point))
    return out


def _memberships(own: Path) -> dict[str, str]:
    """The group of this process in each hierarchy: controller -> path ("" for cgroup v2)."""
    out: dict[str, str] = {}
    try:
        lines = own.read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, names, path = parts
        if not names:
            out[""] = path
        for name in names.split(","):
            if name:
                out[name] = path
    return out
