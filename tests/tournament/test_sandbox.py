"""Confined programs (bubblewrap): rogue bots are stopped, get a verdict, and leave nothing behind."""

from __future__ import annotations

import asyncio
import shutil
import socket
import uuid
from pathlib import Path

import pytest

from tests.tournament.fixtures.harness import FIXTURES, PYTHON, run_tournament, toml_list, write_config
from ziggurat.tournament.sandbox import Sandbox, SandboxPolicy, SandboxUnavailable

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
    """Processes of the rogue bots, wherever they are (any user, any session)."""
    out = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if ROGUE.encode() in (proc / "cmdline").read_bytes():
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
