"""Confined programs (bubblewrap): rogue bots are stopped, get a verdict, and leave nothing behind."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
import sqlite3
import sys
import uuid
from pathlib import Path

import pytest

from tests import processes
from tests.tournament.fixtures.harness import (
    FIXTURES,
    PYTHON,
    REPO,
    Finished,
    cli,
    done_count,
    run_tournament,
    toml_list,
    write_config,
)
from ziggurat.tournament.cgroups import PREFIX, CgroupUnavailable, find_tree
from ziggurat.tournament.sandbox import Sandbox, SandboxPolicy, SandboxUnavailable
from ziggurat.tournament.store import TournamentStore
from ziggurat.tournament.uids import UidLeases

ROGUE = str(FIXTURES / "stdio_rogue.py")

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

HEADER = """
name = "rogues"
seed = "rogues"
game = "pylos"
format = "gauntlet"
concurrency = 2

[gauntlet]
champion = "house"

[time_control]
per_move_ms = 4000

[disqualify]
max_failures = 0

[sandbox]
memory_mb = 256
max_processes = 32

[[participants]]
name = "house"
builtin = "random"
"""


# Every rogue of this module's tournaments carries this mark in its environment, which its
# children inherit: other tests running sandboxed programs at the same time (pytest -n) use
# the same sandbox uids, so "a process of a sandbox user" alone would count theirs too.
RUN_MARK = f"ROGUE_RUN={uuid.uuid4().hex}"


def rogue(mode: str, **env: str) -> str:
    mark_name, mark_value = RUN_MARK.split("=")
    table = ", ".join(f"{key} = '{value}'" for key, value in {mark_name: mark_value, **env}.items())
    return (
        f"\n[[participants]]\nname = '{mode}'\nstdio = {toml_list([PYTHON, ROGUE, mode])}\n"
        f"env = {{ {table} }}"
    )


def marked_processes() -> list[Path]:
    """Processes (any user, any session) whose environment has this module's RUN_MARK."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if RUN_MARK.encode() in (proc / "environ").read_bytes().split(b"\0"):
                out.append(proc)
        except OSError:
            continue
    return out


def rogue_processes() -> list[int]:
    """Processes of this module's rogue bots, wherever they are (any user, any session): the
    rogue program with this module's RUN_MARK (other tests run the same program at the same
    time under pytest -n)."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if ROGUE.encode() in (proc / "cmdline").read_bytes() and RUN_MARK.encode() in (
                proc / "environ"
            ).read_bytes().split(b"\0"):
                out.append(int(proc.name))
        except OSError:
            continue
    return out


@pytest.mark.slow
async def test_rogue_programs_are_stopped_get_a_verdict_and_leave_no_process(tmp_path: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    private_tmp = Path(f"/tmp/ziggurat-escaped-{uuid.uuid4().hex}")
    targets = [tmp_path / "escaped", FIXTURES / "escaped", private_tmp, Path("/etc/ziggurat-escaped")]
    body = HEADER
    body += rogue("network", ROGUE_PORT=str(port))
    body += rogue("write", ROGUE_PATHS=":".join(map(str, targets)))
    body += rogue("forkbomb") + rogue("alloc") + rogue("spin")
    config = write_config(tmp_path, body)
    assert rogue_processes() == []
    try:
        done = await run_tournament(config, tmp_path / "t.db", timeout=120)
    finally:
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody reached the test's port from a sandbox
        listener.close()
    assert done.reason == "completed"
    results = done.results()
    assert len(results) == 10  # 5 rogues x a colour-swapped pair against the house
    verdicts: dict[str, list[str]] = {}
    for result in results:
        for name, verdict in zip(result["seats"], result["verdicts"], strict=True):
            verdicts.setdefault(name, []).append(verdict)
    assert set(verdicts["house"]) == {"finished"}  # the tournament went on unaffected
    assert verdicts["network"] == ["crashed"] * 2  # exits after failing to connect
    assert verdicts["write"] == ["crashed"] * 2
    assert verdicts["alloc"] == ["crashed"] * 2  # MemoryError at the address-space limit
    assert verdicts["forkbomb"] == ["timeout"] * 2  # stopped at the process limit, then spins
    assert verdicts["spin"] == ["timeout"] * 2
    for result in results:  # the house won every game
        assert result["ranks"][result["seats"].index("house")] == 1
    for target in targets:
        assert not target.exists(), f"a sandboxed bot wrote {target}"
    logs = {  # each seat's stderr is kept with its game
        result["seats"][seat]: (done.runner.log_dir / f"{result['match_id']}-seat{seat + 1}.log").read_text()
        for result in results
        for seat in range(2)
        if result["seats"][seat] in ("forkbomb", "write", "alloc")
    }
    assert "fork refused after" in logs["forkbomb"]
    assert f"run {RUN_MARK.split('=')[1]}" in logs["forkbomb"]  # the mark reached the sandbox
    # it could write its private /tmp only, which the host never sees (checked above)
    assert "Read-only file system" in logs["write"]
    wrote = [line for line in logs["write"].splitlines() if line.startswith("wrote ")]
    assert wrote == [f"wrote {private_tmp}"]
    assert "MemoryError" in logs["alloc"]
    # nothing is left: no rogue, none of the fork bomb's detached children (they keep the mark)
    await asyncio.sleep(0.2)
    assert rogue_processes() == []
    assert marked_processes() == []


async def test_opting_out_runs_programs_unconfined(tmp_path: Path) -> None:
    target = tmp_path / "written-unconfined"
    body = HEADER.replace("[sandbox]", "[sandbox]\nenabled = false")
    body += rogue("write", ROGUE_PATHS=str(target))
    done = await run_tournament(write_config(tmp_path, body), tmp_path / "t.db", timeout=60)
    assert done.reason == "completed"
    assert target.read_text() == "escaped\n"  # what the sandbox prevents, the opt-out allows


def test_a_missing_tool_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap, prlimit or setpriv here
    with pytest.raises(SandboxUnavailable, match=r"needs bwrap.*apt-get install bubblewrap"):
        Sandbox(SandboxPolicy()).check()


CAPPED = """
name = "capped"
seed = "capped"
game = "pylos"
format = "gauntlet"
concurrency = 2

[gauntlet]
champion = "house"

[time_control]
per_move_ms = 15000  # room on a loaded machine: the caps, not the clock, must stop them

[disqualify]
max_failures = 0

[sandbox]
memory_mb = 2048
total_memory_mb = 256
workdir_mb = 24
tmp_mb = 8

[[participants]]
name = "house"
builtin = "random"
"""


def seat_logs(done: Finished, name: str) -> list[str]:
    """The per-game logs of participant ``name``."""
    return [
        (done.runner.log_dir / f"{result['match_id']}-seat{seat + 1}.log").read_text()
        for result in done.results()
        for seat in range(len(result["seats"]))
        if result["seats"][seat] == name
    ]


def verdicts_of(done: Finished) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for result in done.results():
        for name, verdict in zip(result["seats"], result["verdicts"], strict=True):
            out.setdefault(name, []).append(verdict)
    return out


def left_cgroups(tournament_id: str) -> list[Path]:
    """Control groups of a tournament still on the host (in every hierarchy it uses)."""
    return [group for base in find_tree().bases for group in base.glob(f"{PREFIX}{tournament_id}.*")]


@pytest.mark.slow
async def test_a_sandbox_is_capped_as_a_whole_and_leaves_nothing(tmp_path: Path) -> None:
    body = CAPPED + rogue("hoard") + rogue("fill")
    done = await run_tournament(write_config(tmp_path, body), tmp_path / "t.db", timeout=120)
    assert done.reason == "completed"
    verdicts = verdicts_of(done)
    assert set(verdicts["house"]) == {"finished"}
    # four processes, each far below its 2048 MB address-space cap, stopped together at 256 MB
    assert verdicts["hoard"] == ["crashed"] * 2
    for text in seat_logs(done, "hoard"):
        assert "the sandbox reached its memory cap (256 MB in total)" in text
    assert verdicts["fill"] == ["crashed"] * 2  # exits 3 once both are full
    for text in seat_logs(done, "fill"):
        home = re.search(r"filled /home/sandbox: (\d+) MB in (\d+) files, then .*No space left", text)
        tmp = re.search(r"filled /tmp: (\d+) MB in (\d+) files, then .*No space left", text)
        assert home is not None and tmp is not None, text
        assert 20 <= int(home[1]) <= 24 and int(home[2]) >= 5  # many files, one total cap
        assert 4 <= int(tmp[1]) <= 8
    # nothing is left: no file it wrote, no process, no control group, no leased user
    assert [p for p in tmp_path.rglob("fill-*")] == []
    assert not Path("/home/sandbox").exists()
    assert marked_processes() == []
    assert left_cgroups(done.tournament_id) == []
    assert UidLeases(SandboxPolicy().uid_base, SandboxPolicy().uid_slots).held() == []


async def test_a_sandbox_sees_no_database_nor_another_participants_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = TournamentStore(tmp_path / "other.db")  # another tournament's, open (with -wal/-shm)
    other.create("other1", "other", str(tmp_path / "other.toml"), "text", b"s" * 32)
    shutil.copy(ROGUE, tmp_path / "reader.py")
    shutil.copy(REPO / "examples/stdio/random_bot.sh", tmp_path / "rival.sh")
    secret = [tmp_path / "other.db", tmp_path / "other.db-wal", tmp_path / "t.db", tmp_path / "rival.sh"]
    assert all(path.stat().st_size > 0 for path in secret[:2])
    paths = ":".join(str(p) for p in [*secret, tmp_path / "reader.py"])
    mark_name, mark_value = RUN_MARK.split("=")
    body = HEADER
    body += f"\n[[participants]]\nname = 'reader'\nstdio = {toml_list([PYTHON, 'reader.py', 'read'])}\n"
    body += f"env = {{ ROGUE_PATHS = '{paths}', {mark_name} = '{mark_value}' }}\n"
    body += "\n[[participants]]\nname = 'rival'\nstdio = ['sh', 'rival.sh']\n"
    monkeypatch.chdir(tmp_path)  # a relative --db: HOME is absolute all the same
    try:
        done = await run_tournament(write_config(tmp_path, body), Path("t.db"), timeout=90)
    finally:
        other.close()
    assert done.reason == "completed"
    verdicts = verdicts_of(done)
    assert set(verdicts["rival"]) == {"finished"}  # the reader's files hidden from it, it plays on
    for text in seat_logs(done, "reader"):
        assert "home /home/sandbox writable" in text
        for path in secret:
            got = re.search(
                rf"(read (\d+) bytes|cannot read) from {re.escape(str(path))}|cannot read {path}", text
            )
            assert got is not None, text
            assert got[2] in (None, "0"), f"the sandbox read {path}: {text}"
        assert re.search(rf"read [1-9]\d* bytes from {tmp_path / 'reader.py'}", text), text  # its own file


async def test_a_read_only_path_holding_a_database_is_refused(tmp_path: Path) -> None:
    (tmp_path / "shelf").mkdir()
    store = TournamentStore(tmp_path / "shelf" / "old.db")
    store.close()
    (tmp_path / "shelf").chmod(0o755)
    body = HEADER + rogue("spin").replace("env =", "read_only = ['shelf']\nenv =")
    with pytest.raises(
        SandboxUnavailable, match=r"read_only path .*shelf holds a ziggurat database .*old\.db"
    ):
        await run_tournament(write_config(tmp_path, body), tmp_path / "t.db", timeout=30)


def fake_pyenv(home: Path) -> Path:
    """A pyenv in ``home`` (as in an organiser's): a shim, the ``pyenv`` that answers ``which``, and
    a "python3" that works only when its installation directory (its lib/) is visible."""
    root = home / ".pyenv"
    version = root / "versions" / "9.9.9"
    for directory in (root / "shims", root / "bin", version / "bin", version / "lib"):
        directory.mkdir(parents=True)
    scripts = {
        root / "shims" / "python3": '#!/bin/sh\nexec "$PYENV_ROOT/bin/pyenv" exec python3 "$@"\n',
        root / "bin" / "pyenv": (
            '#!/bin/sh\ncase "$1" in\n  which) echo "$PYENV_ROOT/versions/9.9.9/bin/$2" ;;\n'
            '  exec) shift; n=$1; shift; exec "$PYENV_ROOT/versions/9.9.9/bin/$n" "$@" ;;\nesac\n'
        ),
        # stands for an interpreter: runs shell scripts, and needs its installation's lib/
        version / "bin" / "python3": '#!/bin/sh\n. "${0%/bin/*}/lib/site.sh"\nexec /bin/sh "$@"\n',
        version / "lib" / "site.sh": "true\n",
    }
    for path, text in scripts.items():
        path.write_text(text)
        path.chmod(0o755)
    home.chmod(0o700)  # as a home is: the sandbox's user could not enter it
    return root / "shims"


async def test_a_shim_interpreter_in_the_organisers_home_runs(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path_factory.mktemp("home")  # not under the bots' directory, as a home is not
    shims = fake_pyenv(home)
    monkeypatch.setenv("PATH", f"{shims}:{os.environ['PATH']}")
    monkeypatch.setenv("PYENV_ROOT", str(home / ".pyenv"))
    shutil.copy(REPO / "examples/stdio/random_bot.sh", tmp_path / "bot.sh")
    body = HEADER + "\n[[participants]]\nname = 'shimmed'\nstdio = ['python3', 'bot.sh']\n"
    done = await run_tournament(write_config(tmp_path, body), tmp_path / "t.db", timeout=60)
    assert done.reason == "completed"
    assert verdicts_of(done)["shimmed"] == ["finished"] * 2


def test_programs_that_cannot_start_in_their_sandbox_stop_the_tournament_at_start(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    home = tmp_path_factory.mktemp("home")
    interpreter = home / ".local" / "lang" / "bin" / "interp"
    interpreter.parent.mkdir(parents=True)
    interpreter.write_text('#!/bin/sh\nexec /bin/sh "$@"\n')
    interpreter.chmod(0o755)
    home.chmod(0o700)
    bot = tmp_path / "shebang.sh"  # runs for the organiser; its interpreter is not in the sandbox
    bot.write_text(f"#!{interpreter}\n" + (REPO / "examples/stdio/random_bot.sh").read_text())
    bot.chmod(0o755)
    assert processes.run([str(bot)], input="ziggurat 1\n", capture_output=True, text=True).stdout.startswith(
        "ready"
    )
    silent = tmp_path / "silent.sh"  # a gRPC program that never connects
    silent.write_text("echo 'cannot reach the server, giving up' >&2\nsleep 30\n")
    body = HEADER.replace("[sandbox]", "[sandbox]\npreflight_seconds = 3")
    body += "\n[[participants]]\nname = 'shebang'\nstdio = ['./shebang.sh']\n"
    body += "\n[[participants]]\nname = 'silent'\ncommand = ['sh', 'silent.sh']\n"
    body += "\n[[participants]]\nname = 'sleeper'\ncommand = ['sh', 'silent.sh']\nkeep_alive = true\n"
    done = cli(
        "tournament", "run", str(write_config(tmp_path, body)), "--db", str(tmp_path / "t.db"), cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr
    error = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(error) == 1, done.stderr
    assert re.search(
        r"participant 'shebang' did not answer the stdio handshake in its preflight: "
        r".*No such file or directory.*fix: give its interpreter as an absolute path",
        error[0],
    ), error[0]
    assert re.search(
        r"participant 'silent' did not open its Play stream in its preflight: it did not connect within 3 s; "
        r"its stderr ends: cannot reach the server, giving up; fix: ",
        error[0],
    ), error[0]
    assert re.search(
        r"participant 'sleeper' did not connect as a bot in its preflight: not connected within 3 s; "
        r"its stderr ends: cannot reach the server, giving up",
        error[0],
    ), error[0]
    assert done_count(tmp_path / "t.db") == 0
    assert TournamentStore(tmp_path / "t.db").all() == []  # nothing recorded: run it again once fixed


def test_no_control_group_refuses_to_start_unless_opted_out(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(**_: object) -> None:
        raise CgroupUnavailable("cgroup v2 at /sys/fs/cgroup/user.slice does not offer the memory controller")

    monkeypatch.setattr("ziggurat.tournament.sandbox.find_tree", refuse)
    with pytest.raises(
        SandboxUnavailable, match=r"no control group can be made here \(cgroup v2 .*\): .*cgroups = false"
    ):
        Sandbox(SandboxPolicy()).check()
    opted_out = Sandbox(SandboxPolicy(cgroups=False))
    opted_out.check()  # the sandbox itself still works, without its total caps
    confined = opted_out.confine(["true"], cwd=None, env={}, label="no-cgroup")
    assert confined.cgroup is None and confined.argv[0] == "prlimit"
    confined.close_now()


def test_scanning_the_server_s_own_database_keeps_its_locks(tmp_path: Path) -> None:
    """The database scan must not drop this process's SQLite locks (POSIX locks belong to the
    process: closing any descriptor of the file drops them all). Were the server's shared lock
    dropped, the next connection of another process to close would believe itself the last,
    checkpoint and delete the WAL under the live server (which then died of SIGBUS)."""
    path = tmp_path / "live.db"
    server = sqlite3.connect(path, isolation_level=None)
    server.execute("PRAGMA journal_mode=WAL")
    server.execute("CREATE TABLE matches (x)")
    server.execute("INSERT INTO matches VALUES (1)")
    wal = path.with_name("live.db-wal")

    def another_process_reads_and_closes() -> None:
        script = (
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
            "c.execute('SELECT * FROM matches'); c.close()"
        )
        processes.run([sys.executable, "-c", script, str(path)], check=True)

    another_process_reads_and_closes()
    assert wal.exists()  # the server's connection is open: its WAL stays
    assert Sandbox(SandboxPolicy(cgroups=False)).databases([tmp_path]) == [
        path,
        wal,
        path.with_name("live.db-shm"),
    ]
    another_process_reads_and_closes()
    assert wal.exists()  # and still does after the scan
    # nor the shared-memory lock SQLite holds on the -shm (WAL mode's "DMS" read lock on byte
    # 128): without it another process opening the database resets the -shm under this one's
    # mapping, and the server dies of SIGBUS
    assert _shm_lock_holder(path.with_name("live.db-shm")) == os.getpid()
    server.close()


_GETLK = """
import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR)
got = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 128, 1, 0))
kind, _, _, _, pid = struct.unpack("hhqqi", got[: struct.calcsize("hhqqi")])
print(pid if kind == fcntl.F_RDLCK else 0)
"""


def _shm_lock_holder(shm: Path) -> int:
    """The process holding a read lock on byte 128 of ``shm``, asked from another process (a
    process sees no conflict with its own locks)."""
    done = processes.run([sys.executable, "-c", _GETLK, str(shm)], capture_output=True, text=True, check=True)
    return int(done.stdout)
