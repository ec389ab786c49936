"""Confining the programs a tournament launches: bubblewrap, a control group, an unprivileged user.

``command`` and ``stdio`` participants are code the organiser did not write. Each is
started as::

    sh -c 'echo $$ > …/cgroup.procs; exec "$@"' … prlimit … -- bwrap … -- setpriv --reuid=U … -- PROGRAM…

* the shell moves itself into the sandbox's **control group** (:mod:`.cgroups`) before
  anything forks: memory (its tmpfs files included), processes and CPU are capped for the
  sandbox as a whole, and when it is over every process in the group is killed and the group
  removed;
* ``prlimit`` (util-linux) sets the per-process CPU-time, address-space, process and
  file-size limits that the program and everything it starts inherit (``RLIMIT_CPU``,
  ``RLIMIT_AS``, ``RLIMIT_NPROC``, ``RLIMIT_FSIZE``);
* ``bwrap`` (bubblewrap, Debian package ``bubblewrap``) puts the program in new PID,
  network, IPC, UTS, cgroup and mount namespaces: no network at all (a private loopback),
  the system directories read-only, the program's own files read-only, and two size-capped
  tmpfs mounts it may write: its work directory (``HOME`` = ``ZIGGURAT_WORKDIR`` =
  :data:`WORKDIR`, an absolute path whatever the tournament's ``--db``) and ``/tmp``. They
  live in RAM and vanish with the sandbox: nothing it writes is left on the host.
  ``--die-with-parent`` and the PID namespace mean that when the sandbox's first process
  dies, every process inside it is killed by the kernel, however it forked or detached;
* ``setpriv`` (util-linux), when the organiser is root, then drops to a user id of the
  sandbox's own, leased host-wide (:mod:`.uids`) so that no two sandboxes on the machine —
  in this tournament or another — share one, with no capabilities and ``no_new_privs``.
  The program's files must therefore be readable by other users, as for any service
  account. Without root, bubblewrap makes a user namespace instead and the program runs as
  the organiser.

What a sandbox sees is the system directories, the program's executable with its
installation root (:mod:`.executables`), its ``cwd``, the files and directories its command
line names and the ``read_only`` paths listed for it; within those it never sees a ziggurat
database (this tournament's or any other's, with their ``-wal``/``-shm`` files), the logs,
nor another participant's program files. gRPC programs reach the tournament's server through
a Unix socket bound into the sandbox (``ZIGGURAT_SERVER=unix:/…``): it is their only way out.
stdio programs need none (the bridge talks to them over their stdin and stdout).
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ziggurat.tournament.cgroups import Cgroup, CgroupLimits, CgroupTree, CgroupUnavailable, find_tree
from ziggurat.tournament.executables import resolve
from ziggurat.tournament.uids import LEASE_DIR, NoFreeUid, UidLeases

log = logging.getLogger("ziggurat.tournament")

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
TOOLS = ("bwrap", "prlimit", "setpriv")
WORKDIR = "/home/sandbox"  # HOME and ZIGGURAT_WORKDIR inside every sandbox (a tmpfs of its own)
INSTALL_HINT = (
    "install bubblewrap (Debian: apt-get install bubblewrap; ./scripts/bootstrap does it) "
    "or turn the sandbox off with [sandbox] enabled = false (only for programs you trust)"
)
CGROUP_HINT = (
    "run the tournament as root (or in a delegated cgroup v2 group), or set [sandbox] "
    "cgroups = false to run sandboxes without their total memory, process and CPU caps "
    "(only for programs you trust)"
)
COMPANIONS = ("-wal", "-shm", "-journal")  # the files SQLite keeps beside a database
OUR_TABLES = frozenset({"matches", "events", "seat_tokens", "tournaments", "tournament_games"})
SCAN_LIMIT = 20_000  # entries of one visible directory tree looked at for databases
MEMORY_POLL_SECONDS = 0.2


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot be used on this machine (missing tool, namespaces or cgroups refused),
    or a configuration would show a sandbox what it must not see."""


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """The limits and switches of ``[sandbox]`` in a tournament configuration."""

    enabled: bool = True
    cpu_seconds: int = 600  # CPU time per process (RLIMIT_CPU)
    memory_mb: int = 4096  # address space per process (RLIMIT_AS)
    max_processes: int = 64  # processes and threads of the sandbox's user (RLIMIT_NPROC)
    max_file_mb: int = 256  # size of any one file it writes (RLIMIT_FSIZE)
    cgroups: bool = True  # a control group per sandbox with the three caps below
    total_memory_mb: int = 4096  # RAM of the whole sandbox, its tmpfs files included
    total_processes: int = 128  # processes and threads of the whole sandbox (pids.max)
    cpus: float = 1.0  # CPU time of the whole sandbox per second of wall-clock time
    workdir_mb: int = 256  # size of its work directory (HOME, a tmpfs)
    tmp_mb: int = 64  # size of its /tmp (a tmpfs)
    preflight_seconds: float = 30.0  # how long each program gets to start and say it is ready
    uid_base: int = 61000  # as root: sandboxes run as a uid in uid_base … uid_base + uid_slots - 1
    uid_slots: int = 1000

    @property
    def limits(self) -> CgroupLimits:
        """The control group's caps."""
        return CgroupLimits(self.total_memory_mb << 20, self.total_processes, self.cpus)


@dataclass
class Confinement:
    """One sandboxed launch: its command line and environment, and what to undo when it is over."""

    argv: list[str]
    env: dict[str, str]
    workdir: str  # inside the sandbox
    cgroup: Cgroup | None = None
    uid: int | None = None
    release: Callable[[int], None] | None = None  # gives the uid back
    memory_mb: int = 0
    _closed: bool = False

    async def watch_memory(self, note: Callable[[str], None]) -> None:
        """Return once the kernel killed a process of the sandbox at its memory cap, after killing
        the rest: a sandbox at its cap is stopped whole (its seat's verdict: ``crashed``)."""
        if self.cgroup is None:
            await asyncio.Event().wait()
            return
        try:
            while self.cgroup.oom_kills() == 0:
                await asyncio.sleep(MEMORY_POLL_SECONDS)
        except asyncio.CancelledError:
            # the game may end (the seat resigned as crashed) before the next poll: the cause is
            # still said when the kernel did kill at the cap
            if self.cgroup.oom_kills() > 0:
                note(self._cap_note())
            raise
        note(self._cap_note())
        self.cgroup.kill()

    def _cap_note(self) -> str:
        """Why the sandbox's processes died, for its seat's log."""
        cap = f"the sandbox reached its memory cap ({self.memory_mb} MB in total)"
        return f"{cap}: every process in it was killed"

    async def close(self) -> None:
        """Kill whatever is left in the sandbox, remove its control group, give its user back."""
        await asyncio.to_thread(self.close_now)

    def close_now(self) -> None:
        """:meth:`close`, blocking (a few milliseconds unless processes are slow to die)."""
        if self._closed:
            return
        self._closed = True
        if self.cgroup is not None and not self.cgroup.remove():
            log.warning(
                "control group %s: processes still inside after they were killed", self.cgroup.paths[0]
            )
            return  # its user keeps running processes: it stays leased
        if self.uid is not None and self.release is not None:
            self.release(self.uid)


@dataclass
class Sandbox:
    """Builds confined command lines for one tournament."""

    policy: SandboxPolicy
    hidden: Sequence[Path] = ()  # files and directories no sandbox may see (database, logs)
    socket_dir: Path | None = None  # holds the server's Unix socket, bound in read-only
    name: str = field(default_factory=lambda: f"pid{os.getpid()}")  # prefix of its cgroups' names
    lease_dir: Path = LEASE_DIR
    tree: CgroupTree | None = None  # made by check() unless policy.cgroups is off
    _leases: UidLeases | None = None
    _databases: dict[Path, tuple[int, int, bool]] = field(default_factory=dict)  # path -> mtime, size, ours
    _count: int = 0

    def check(self) -> None:
        """SandboxUnavailable when the tools are missing, bubblewrap cannot make namespaces or
        size-capped tmpfs mounts here, or control groups cannot be made (unless opted out)."""
        missing = [tool for tool in TOOLS if shutil.which(tool) is None]
        if missing:
            raise SandboxUnavailable(f"the sandbox needs {', '.join(missing)}: {INSTALL_HINT}")
        usage = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, check=False)
        if "--size" not in usage.stdout + usage.stderr:
            raise SandboxUnavailable(
                f"this bubblewrap has no --size option (0.7 or later has it): {INSTALL_HINT}"
            )
        if self.policy.cgroups and self.tree is None:
            try:
                self.tree = find_tree()
            except CgroupUnavailable as error:
                raise SandboxUnavailable(
                    f"no control group can be made here ({error}): {CGROUP_HINT}"
                ) from None
        probe = self.confine(["true"], cwd=None, env={}, label="probe")
        try:
            done = subprocess.run(probe.argv, env=probe.env, capture_output=True, timeout=30, check=False)
        finally:
            probe.close_now()
        if done.returncode != 0:
            reason = done.stderr.decode(errors="replace").strip() or f"exit status {done.returncode}"
            raise SandboxUnavailable(f"bubblewrap cannot start a sandbox here ({reason}): {INSTALL_HINT}")

    def close(self) -> None:
        """At the end of the tournament: remove the base control groups if nobody else uses them."""
        if self.tree is not None:
            self.tree.close()

    def refuse_databases(self, participant: str, read_only: Iterable[Path]) -> None:
        """SandboxUnavailable when a ``read_only`` path of ``participant`` holds a ziggurat database:
        a sandbox never sees one, and hiding it from a listed path would be a surprise."""
        for path in read_only:
            found = self.databases([path])
            if found:
                raise SandboxUnavailable(
                    f"participant {participant!r}: read_only path {path} holds a ziggurat database "
                    f"({found[0]}), which no sandbox may see: list a directory without it"
                )

    def confine(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, str],
        label: str,
        read_only: Sequence[Path] = (),
        hide: Sequence[Path] = (),
    ) -> Confinement:
        """The command line running ``argv`` confined; ``hide``: more paths it must not see (another
        participant's files). Call :meth:`Confinement.close` when it is over."""
        executable = resolve(argv, cwd=cwd, env=env)
        argv = list(executable.argv)
        program = self._program_paths(argv, cwd)
        own = [*program, *executable.visible]
        listed = [p.resolve() for p in read_only]
        visible = [*own, *listed]
        named = [*_existing(argv, cwd), *executable.visible, *listed]
        uid = self._acquire_uid()
        try:
            cgroup = self._cgroup(label)
        except BaseException:
            if uid is not None and self._leases is not None:
                self._leases.release(uid)
            raise
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
        bwrap += ["--proc", "/proc", "--dev", "/dev"]
        bwrap += ["--size", str(self.policy.tmp_mb << 20), "--perms", "1777", "--tmpfs", "/tmp"]

        def inside(path: Path) -> bool:
            return any(path == b or b in path.parents for b in binds)

        def parents(target: Path) -> None:
            # bwrap would make missing parents itself, but 0700: the sandbox's user could not pass
            for parent in reversed(target.parents[:-1]):  # outermost first, "/" excluded
                if parent not in made and not inside(parent):
                    bwrap.extend(["--dir", str(parent)])
                    made.add(parent)

        def bind(option: str, source: Path | str, target: Path) -> None:
            parents(target)
            bwrap.extend([option, str(source), str(target)])
            binds.append(target)

        for path in _outermost(visible):
            if path.exists() and not inside(path):
                bind("--ro-bind", path, path)
        if self.socket_dir is not None:
            bind("--ro-bind", self.socket_dir, self.socket_dir)
        secret = [*self.hidden, *self.databases(_scanned(argv, cwd)), *_foreign(hide, own, named)]
        for path in dict.fromkeys(secret):
            if inside(path):  # under anything bound in, the system directories included
                if path.is_dir():
                    bwrap += ["--tmpfs", str(path)]
                elif path.exists():
                    bwrap += ["--ro-bind", "/dev/null", str(path)]
        parents(Path(WORKDIR))
        bwrap += ["--size", str(self.policy.workdir_mb << 20), "--perms", "1777", "--tmpfs", WORKDIR]
        bwrap += ["--chdir", cwd or WORKDIR]
        limits = ["prlimit", f"--cpu={self.policy.cpu_seconds}", f"--as={self.policy.memory_mb << 20}"]
        limits += [f"--nproc={self._nproc(uid)}", f"--fsize={self.policy.max_file_mb << 20}", "--"]
        user = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs"]
        user += ["--inh-caps=-all", "--bounding-set=-all", "--"]
        confined_env = {
            **env,
            "HOME": WORKDIR,
            "ZIGGURAT_WORKDIR": WORKDIR,
            "TMPDIR": "/tmp",
            "PATH": env.get("PATH", os.environ.get("PATH", "/usr/bin:/bin")),
        }
        inner = [*user, *argv] if uid is not None else list(argv)
        command = [*limits, *bwrap, "--", *inner]
        if cgroup is not None:
            command = cgroup.wrap(command)
        return Confinement(
            command,
            confined_env,
            WORKDIR,
            cgroup=cgroup,
            uid=uid,
            release=self._leases.release if self._leases is not None else None,
            memory_mb=self.policy.total_memory_mb,
        )

    def databases(self, roots: Iterable[Path]) -> list[Path]:
        """Every ziggurat database under ``roots`` (files or directories), with its ``-wal``,
        ``-shm`` and ``-journal`` files; results are kept per file until it changes."""
        out: list[Path] = []
        for root in _outermost(roots):
            for path in _files(root):
                if self._is_ours(path):
                    out.append(path)
                    out += [path.with_name(path.name + end) for end in COMPANIONS]
        return [p for p in out if p.exists()]

    def _is_ours(self, path: Path) -> bool:
        try:
            stat = path.stat()
        except OSError:
            return False
        known = self._databases.get(path)
        if known is not None and known[:2] == (stat.st_mtime_ns, stat.st_size):
            return known[2]
        ours = _is_our_database(path)
        self._databases[path] = (stat.st_mtime_ns, stat.st_size, ours)
        return ours

    def _cgroup(self, label: str) -> Cgroup | None:
        if self.tree is None:
            return None
        self._count += 1
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)
        return self.tree.create(f"{self.name}.{self._count}.{safe}"[:200], self.policy.limits)

    def _acquire_uid(self) -> int | None:
        if os.geteuid() != 0:
            return None
        if self._leases is None:
            self._leases = UidLeases(self.policy.uid_base, self.policy.uid_slots, self.lease_dir)
        try:
            return self._leases.acquire()
        except NoFreeUid as error:
            raise SandboxUnavailable(str(error)) from None

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
            if not candidate.exists():
                continue
            resolved = candidate.resolve()
            out.append(resolved if resolved.is_dir() else resolved.parent)
            if i == 0:
                out += _python_paths(resolved)
        return out


def named_paths(argv: Sequence[str], cwd: Path | None, read_only: Iterable[Path] = ()) -> list[Path]:
    """A participant's own files: what its command line names (but system files) and its cwd.

    The runner hides them from every other participant (``confine(hide=…)``): bots in one
    folder do not see each other's files.
    """
    base = cwd or Path.cwd()
    out: list[Path] = [base.resolve()] if cwd else []
    for arg in argv:
        candidate = Path(arg) if Path(arg).is_absolute() else base / arg
        if candidate.exists() and not _is_system(candidate.resolve()):
            out.append(candidate.resolve())
    return out + [p.resolve() for p in read_only]


def _foreign(hide: Sequence[Path], own: Sequence[Path], named: Sequence[Path]) -> list[Path]:
    """The paths of ``hide`` (another participant's files) this program may not see: all but a
    directory holding its own files (``own``) and what lies in a path it names itself (``named``:
    its command line's files, its interpreter's installation, its ``read_only`` paths)."""
    return [
        path
        for path in hide
        if not any(path == o or path in o.parents for o in own)
        and not any(path == n or n in path.parents for n in named)
    ]


def _existing(argv: Sequence[str], cwd: str | None) -> list[Path]:
    """The files and directories ``argv`` names, resolved."""
    base = Path(cwd) if cwd else Path.cwd()
    out = []
    for arg in argv:
        candidate = Path(arg) if Path(arg).is_absolute() else base / arg
        if candidate.exists():
            out.append(candidate.resolve())
    return out


def _scanned(argv: Sequence[str], cwd: str | None) -> list[Path]:
    """Where to look for databases: the program's cwd and the directories of the files its
    arguments name (not its interpreter's installation: no database lives there, and it is big)."""
    found = _existing(argv[1:], cwd)
    return [*([Path(cwd).resolve()] if cwd else []), *(p if p.is_dir() else p.parent for p in found)]


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


def _is_our_database(path: Path) -> bool:
    """An SQLite file with ziggurat's tables (or one that cannot be read: it may be, so it is).

    The file is read through SQLite only, never opened and closed by hand: POSIX record locks
    belong to the process, and closing *any* descriptor of a file drops every lock the process
    holds on it. A scan that met the server's own live database (a program's directory holding
    it) dropped the server's WAL locks that way; another process opening the database then
    believed itself alone, reset the ``-shm`` file, and the server died of SIGBUS on its mapping.
    SQLite keeps the descriptors of a file it has locked open until the locks are released.
    """
    if not path.is_file() or path.name.endswith(COMPANIONS):
        # A database's -wal, -shm and -journal are found with it, never opened: SQLite holds
        # its shared-memory locks on the -shm through a descriptor of its own, and opening
        # and closing the file as a database would drop them (then another process resets the
        # -shm under the server's mapping: SIGBUS).
        return False
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
        try:
            names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            conn.close()
    except sqlite3.DatabaseError as error:  # "file is not a database": not ours; else it may be
        return "not a database" not in str(error)
    except sqlite3.Error:
        return True
    return bool(names & OUR_TABLES)


def _files(root: Path) -> Iterable[Path]:
    """Regular files under ``root`` (not following symlinks), at most :data:`SCAN_LIMIT` entries."""
    if root.is_file():
        yield root
        return
    seen = 0
    for directory, dirs, files in os.walk(root):
        for name in files:
            seen += 1
            if seen > SCAN_LIMIT:
                return
            yield Path(directory) / name
        seen += len(dirs)


def _is_system(path: Path) -> bool:
    return any(path == Path(d) or Path(d) in path.parents for d in SYSTEM_DIRS)


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
