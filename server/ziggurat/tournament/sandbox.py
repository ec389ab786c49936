"""Confining the programs a tournament launches: bubblewrap, resource limits, an unprivileged user.

``command`` and ``stdio`` participants are code the organiser did not write. Each is
started as::

    prlimit --cpu=… --as=… --nproc=… --fsize=… -- bwrap … -- setpriv --reuid=U … -- PROGRAM…

* ``prlimit`` (util-linux) sets the CPU-time, address-space, process and file-size limits
  that the program and everything it starts inherit (``RLIMIT_CPU``, ``RLIMIT_AS``,
  ``RLIMIT_NPROC``, ``RLIMIT_FSIZE``);
* ``bwrap`` (bubblewrap, Debian package ``bubblewrap``) puts the program in new PID,
  network, IPC, UTS and mount namespaces: no network at all (a private loopback), the system
  directories read-only, the program's own files read-only, a private writable directory
  (``HOME``, ``ZIGGURAT_WORKDIR``) and a private ``/tmp``. ``--die-with-parent`` and the PID
  namespace mean that when the sandbox's first process dies, every process inside it is
  killed by the kernel, however it forked or detached;
* ``setpriv`` (util-linux), when the organiser is root, then drops to a user id of the
  sandbox's own (``uid_base`` + a slot), with no capabilities and ``no_new_privs``:
  ``RLIMIT_NPROC`` counts the processes of a *user* (and root is exempt from it), so a fork
  bomb is stopped at the limit only if the program has a user to itself. The program's files
  must therefore be readable by other users, as for any service account. Without root,
  bubblewrap makes a user namespace instead and the program runs as the organiser: the
  process limit then counts the organiser's own processes too (it is raised by as many as
  exist at launch).

gRPC programs reach the tournament's server through a Unix socket bound into the sandbox
(``ZIGGURAT_SERVER=unix:/…``): it is their only way out. stdio programs need none (the
bridge talks to them over their stdin and stdout).

The tournament database (which holds the organiser's secret) and the logs are hidden from
the sandbox even when they lie under a directory it sees.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
TOOLS = ("bwrap", "prlimit", "setpriv")
INSTALL_HINT = (
    "install bubblewrap (Debian: apt-get install bubblewrap; ./scripts/bootstrap does it) "
    "or turn the sandbox off with [sandbox] enabled = false (only for programs you trust)"
)


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot be used on this machine (missing tool, namespaces refused)."""


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """The limits and switches of ``[sandbox]`` in a tournament configuration."""

    enabled: bool = True
    cpu_seconds: int = 600  # CPU time per process (RLIMIT_CPU)
    memory_mb: int = 4096  # address space per process (RLIMIT_AS)
    max_processes: int = 64  # processes and threads of the sandbox's user (RLIMIT_NPROC)
    max_file_mb: int = 256  # size of any one file it writes (RLIMIT_FSIZE)
    uid_base: int = 61000  # as root: sandboxes run as uid_base + slot (slot < uid_slots)
    uid_slots: int = 1000


@dataclass(frozen=True, slots=True)
class Confinement:
    """One sandboxed launch: the command line, its environment and its writable directory."""

    argv: list[str]
    env: dict[str, str]
    workdir: Path


@dataclass
class Sandbox:
    """Builds confined command lines for one tournament."""

    policy: SandboxPolicy
    root: Path  # where private writable directories are made
    hidden: Sequence[Path] = ()  # files and directories no sandbox may see (database, logs)
    socket_dir: Path | None = None  # holds the server's Unix socket, bound in read-only
    _slots: Iterable[int] = field(default_factory=itertools.count)

    def check(self) -> None:
        """SandboxUnavailable when the tools are missing or bubblewrap cannot make namespaces here."""
        missing = [tool for tool in TOOLS if shutil.which(tool) is None]
        if missing:
            raise SandboxUnavailable(f"the sandbox needs {', '.join(missing)}: {INSTALL_HINT}")
        self.root.mkdir(parents=True, exist_ok=True)
        probe = self.confine(["true"], cwd=None, env={}, label="probe")
        try:
            done = subprocess.run(probe.argv, env=probe.env, capture_output=True, timeout=30, check=False)
        finally:
            shutil.rmtree(probe.workdir, ignore_errors=True)
        if done.returncode != 0:
            reason = done.stderr.decode(errors="replace").strip() or f"exit status {done.returncode}"
            raise SandboxUnavailable(f"bubblewrap cannot start a sandbox here ({reason}): {INSTALL_HINT}")

    def confine(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, str],
        label: str,
        read_only: Sequence[Path] = (),
    ) -> Confinement:
        """The command line running ``argv`` confined, with a new private writable directory."""
        uid = self._uid()
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)
        workdir = self.root / safe
        workdir.mkdir(parents=True, exist_ok=True)
        if uid is not None:
            os.chown(workdir, uid, uid)
        # others may enter (the sandbox is set up by root without capabilities) but not list it;
        # no other sandbox sees it at all: the sandboxes' root is hidden from each of them
        os.chmod(workdir, 0o711)
        visible = [*self._program_paths(argv, cwd), *(p.resolve() for p in read_only)]
        bwrap = ["bwrap", "--die-with-parent", "--new-session", "--hostname", "sandbox"]
        bwrap += ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        if uid is None:
            bwrap += ["--unshare-user", "--cap-drop", "ALL"]
        else:  # root: what setpriv needs to drop to the sandbox's user; it then keeps nothing
            bwrap += ["--cap-drop", "ALL"]
            for cap in ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP"):
                bwrap += ["--cap-add", cap]
        binds: list[Path] = []  # real directories bound in: what lies under them exists
        made: set[Path] = {Path("/proc"), Path("/dev"), Path("/tmp")}  # exist, empty (bar proc/dev)
        for system in SYSTEM_DIRS:
            if os.path.islink(system):  # merged /usr: /bin -> usr/bin
                bwrap += ["--symlink", os.readlink(system), system]
            elif os.path.isdir(system):
                bwrap += ["--ro-bind", system, system]
                binds.append(Path(system))
        bwrap += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp"]

        def inside(path: Path) -> bool:
            return any(path == b or b in path.parents for b in binds)

        def bind(option: str, source: Path | str, target: Path) -> None:
            # bwrap would make missing parents itself, but 0700: the sandbox's user could not pass
            for parent in reversed(target.parents[:-1]):  # outermost first, "/" excluded
                if parent not in made and not inside(parent):
                    bwrap.extend(["--dir", str(parent)])
                    made.add(parent)
            bwrap.extend([option, str(source), str(target)])
            binds.append(target)

        for path in _outermost(visible):
            if path.exists() and not inside(path):
                bind("--ro-bind", path, path)
        if self.socket_dir is not None:
            bind("--ro-bind", self.socket_dir, self.socket_dir)
        for path in [*self.hidden, self.root]:
            if any(path == v or v in path.parents for v in visible):
                if path.is_dir():
                    bwrap += ["--tmpfs", str(path)]
                elif path.exists():
                    bwrap += ["--ro-bind", "/dev/null", str(path)]
        bind("--bind", workdir, workdir)
        bwrap += ["--chdir", cwd or str(workdir)]
        limits = ["prlimit", f"--cpu={self.policy.cpu_seconds}", f"--as={self.policy.memory_mb << 20}"]
        limits += [f"--nproc={self._nproc(uid)}", f"--fsize={self.policy.max_file_mb << 20}", "--"]
        user = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs"]
        user += ["--inh-caps=-all", "--bounding-set=-all", "--"]
        confined_env = {
            **env,
            "HOME": str(workdir),
            "ZIGGURAT_WORKDIR": str(workdir),
            "TMPDIR": "/tmp",
            "PATH": env.get("PATH", os.environ.get("PATH", "/usr/bin:/bin")),
        }
        inner = [*user, *argv] if uid is not None else list(argv)
        return Confinement([*limits, *bwrap, "--", *inner], confined_env, workdir)

    def _uid(self) -> int | None:
        if os.geteuid() != 0:
            return None
        return self.policy.uid_base + next(iter(self._slots)) % self.policy.uid_slots

    def _nproc(self, uid: int | None) -> int:
        if uid is not None:
            return self.policy.max_processes
        mine = sum(1 for p in Path("/proc").iterdir() if p.name.isdigit() and _owner(p) == os.getuid())
        return self.policy.max_processes + mine

    def _program_paths(self, argv: Sequence[str], cwd: str | None) -> list[Path]:
        """What a program needs to read: its cwd, the files its arguments name, its interpreter."""
        base = Path(cwd) if cwd else Path.cwd()
        out: list[Path] = [base.resolve()] if cwd else []
        for i, arg in enumerate(argv):
            candidate = Path(arg) if Path(arg).is_absolute() else base / arg
            if i == 0 and "/" not in arg:
                found = shutil.which(arg)
                candidate = Path(found) if found else candidate
            if not candidate.exists():
                continue
            resolved = candidate.resolve()
            out.append(resolved if resolved.is_dir() else resolved.parent)
            if i == 0:
                out += _python_paths(resolved)
        return out


def _python_paths(executable: Path) -> list[Path]:
    """When a program runs on ziggurat's own Python: that Python, its packages and ziggurat's sources."""
    ours = {Path(sys.executable).resolve(), Path(sys.executable).absolute()}
    if executable not in ours and executable.resolve() not in ours:
        return []
    import ziggurat
    import ziggurat_client

    paths = [Path(sys.prefix), Path(sys.base_prefix)]
    paths += [Path(module.__file__ or ".").resolve().parents[1] for module in (ziggurat, ziggurat_client)]
    return [p.resolve() for p in paths]


def _outermost(paths: Iterable[Path]) -> list[Path]:
    """``paths`` without those inside another (binding the outer one binds them)."""
    unique = sorted(set(paths), key=lambda p: len(p.parts))
    out: list[Path] = []
    for path in unique:
        if not any(path == kept or kept in path.parents for kept in out):
            out.append(path)
    return out


def _owner(proc: Path) -> int:
    try:
        return proc.stat().st_uid
    except OSError:
        return -1
