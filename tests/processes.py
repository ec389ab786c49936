"""Every process a test starts is started here, so that none outlives the test run.

A pytest process killed with ``kill -9`` (or by a CI timeout, or interrupted while a fixture
was tearing down) runs no teardown, and ``ziggurat serve`` processes it had started kept
running for an hour (issue 25). Three things make them die with it instead:

* **The child itself**: it is started through util-linux's ``setpriv --pdeathsig KILL`` (same
  pid, so signals and exit codes are the child's own), and Linux sends it SIGKILL when its
  parent dies. Linux means the parent *thread*, so every child is forked from one daemon
  thread that lives as long as the process: a server started from ``asyncio.to_thread`` would
  otherwise be killed when that pool thread ends.
* **What the child starts in turn** (a ``bash -c 'ziggurat serve … &'`` doc example, a tool's
  helpers): ``fork`` clears the death signal, so they are found by their environment instead.
  Every child gets ``ZIGGURAT_TEST_RUN=<a token of this pytest process>``, which descendants
  inherit; a small reaper process (:func:`reap`, started once per pytest process) holds one
  end of a pipe and, when it reads end-of-file — this process has exited, however it ended —
  SIGKILLs every process whose ``/proc/PID/environ`` carries the token. Matching the token,
  not a process group number, because pids are reused (``pid_max`` is 32768 on CI machines):
  a group killed by number long after its leader exited could be someone else's.
* **Its process group**: each child leads a new session, so :func:`stop` and :func:`run`
  kill its whole group (the shell *and* its background jobs), and a terminal's Ctrl-C reaches
  pytest only, which then tears its fixtures down in order.

``ziggurat serve --workers N`` does the same for its workers (PR_SET_PDEATHSIG, see
:mod:`ziggurat.hosting.supervisor`), so killing its supervisor ends them too.

The module is also the reaper's program (``python tests/processes.py --reap TOKEN``): it
imports the standard library only.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ctypes
import os
import queue
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

TOKEN_ENV = "ZIGGURAT_TEST_RUN"
PR_SET_PDEATHSIG = 1
_T = TypeVar("_T")
Argument = str | os.PathLike[str]


class _Harness:
    """This process's token, its reaper and the thread every child is forked from."""

    def __init__(self) -> None:
        self.token = secrets.token_hex(16)
        os.environ[TOKEN_ENV] = self.token  # in-process servers' own children inherit it too
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]]
        self._jobs = queue.SimpleQueue()
        threading.Thread(target=self._serve, name="test-process-spawner", daemon=True).start()
        # The reaper: not a child that dies with us (it must outlive us to act), and in a
        # session of its own so that a terminal's Ctrl-C does not end it first.
        self.reaper = subprocess.Popen(
            [sys.executable, __file__, "--reap", self.token],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def _serve(self) -> None:
        while True:
            job, result = self._jobs.get()
            try:
                result.set_result(job())
            except BaseException as error:
                result.set_exception(error)

    def on_spawner(self, job: Callable[[], _T]) -> _T:
        """``job()`` on the spawner thread (children forked there die with this process only)."""
        if threading.current_thread().name == "test-process-spawner":
            return job()
        result: concurrent.futures.Future[_T] = concurrent.futures.Future()
        self._jobs.put((job, result))
        return result.result()

    def close(self) -> None:
        """End-of-file for the reaper: it kills what is left of this run, then exits."""
        if self.reaper.stdin is not None:
            self.reaper.stdin.close()
        try:
            self.reaper.wait(30)
        except subprocess.TimeoutExpired:
            self.reaper.kill()
            self.reaper.wait()


_harness: _Harness | None = None
_harness_lock = threading.Lock()


def harness() -> _Harness:
    """This process's harness (started on first use, or by the pytest plugin hook below)."""
    global _harness
    with _harness_lock:
        if _harness is None:
            _harness = _Harness()
        return _harness


def pytest_configure() -> None:
    """Start the harness before any test, so every process of the run carries the token."""
    harness()


def pytest_unconfigure() -> None:
    """The run is over: the reaper kills whatever a test left running."""
    global _harness
    with _harness_lock:
        if _harness is not None:
            _harness.close()
            _harness = None


def _die_with_parent() -> None:  # pragma: no cover - between fork and exec, without setpriv
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _prepare(args: Sequence[Argument], options: dict[str, Any]) -> list[str]:
    """The command line run (with its death signal) and ``options`` completed in place."""
    if options.get("shell"):
        raise ValueError("give an argument list: tests/processes.py starts no shell of its own")
    token = harness().token
    env: Mapping[str, str] | None = options.get("env")
    options["env"] = {**(os.environ if env is None else env), TOKEN_ENV: token}
    options["start_new_session"] = True
    command = [os.fspath(a) for a in args]
    setpriv = shutil.which("setpriv")
    if setpriv is not None:
        return [setpriv, "--pdeathsig", "KILL", "--", *command]
    inner = options.get("preexec_fn")

    def preexec() -> None:  # pragma: no cover - runs in the child
        _die_with_parent()
        if inner is not None:
            inner()

    options["preexec_fn"] = preexec
    return command


def popen(args: Sequence[Argument], **options: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(args, **options)``, as a child that dies with this process; end it
    with :func:`stop`. ``args`` keeps the command as given (without ``setpriv``)."""
    command = _prepare(args, options)
    process = harness().on_spawner(lambda: subprocess.Popen(command, **options))
    process.args = [os.fspath(a) for a in args]
    return process


def run(
    args: Sequence[Argument],
    *,
    input: str | bytes | None = None,
    capture_output: bool = False,
    timeout: float | None = None,
    check: bool = False,
    **options: Any,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run``, as a child that dies with this process; whatever it left running
    in its process group (a shell's background job) is killed when it returns, and on a
    timeout the whole group is killed before :class:`subprocess.TimeoutExpired` is raised."""
    if capture_output:
        options["stdout"] = options["stderr"] = subprocess.PIPE
    if input is not None:
        options["stdin"] = subprocess.PIPE
    process = popen(args, **options)
    try:
        stdout, stderr = process.communicate(input, timeout=timeout)
    except BaseException:
        stop(process)
        raise
    kill_group(process.pid)
    code = process.returncode
    if check and code:
        raise subprocess.CalledProcessError(code, process.args, stdout, stderr)
    return subprocess.CompletedProcess(process.args, code, stdout, stderr)


async def exec_async(program: Argument, *args: Argument, **options: Any) -> asyncio.subprocess.Process:
    """``asyncio.create_subprocess_exec``, as a child that dies with this process. It is forked
    by the calling thread (asyncio's rule), whose end also kills it: call it from the thread
    that runs the event loop (pytest's main thread), and end it with :func:`stop_async`."""
    command = _prepare([program, *args], options)
    return await asyncio.create_subprocess_exec(*command, **options)


def stop(process: subprocess.Popen[Any], timeout: float = 10.0) -> int | None:
    """Kill ``process`` and everything left in its process group; its exit code (None when it
    did not end within ``timeout``)."""
    if process.poll() is None:
        process.kill()
    kill_group(process.pid)
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        return None


async def stop_async(process: asyncio.subprocess.Process) -> int:
    """Kill an :func:`exec_async` child and what is left of its process group; its exit code."""
    if process.returncode is None:
        process.kill()
    kill_group(process.pid)
    return await process.wait()


def kill_group(pgid: int) -> list[int]:
    """SIGKILL the processes of group ``pgid`` that carry this run's token; their pids.

    By token and not ``os.killpg``: the leader may have exited long ago, and its number may
    be another process's by now."""
    return _kill(harness().token, pgid)


def carriers(token: str, pgid: int | None = None) -> list[int]:
    """Pids of the processes (other than this one) that carry ``token`` in their environment,
    in process group ``pgid`` when given."""
    entry = f"{TOKEN_ENV}={token}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if pgid is not None:
                stat = (proc / "stat").read_bytes()
                fields = stat[stat.rindex(b")") + 2 :].split()  # after "pid (comm) "
                if int(fields[2]) != pgid:  # state, ppid, pgrp
                    continue
            if entry in (proc / "environ").read_bytes().split(b"\0"):
                found.append(int(proc.name))
        except (OSError, ValueError, IndexError):
            continue  # gone meanwhile, or not ours to read
    return found


def _kill(token: str, pgid: int | None = None) -> list[int]:
    """SIGKILL the carriers of ``token`` (in ``pgid``), again until none is left (a supervisor
    may start a worker between two rounds); the pids killed."""
    killed: list[int] = []
    for _ in range(50):
        pids = carriers(token, pgid)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                continue
            killed.append(pid)
        time.sleep(0.05)
    return killed


def reap(token: str) -> None:
    """The reaper's program: wait for end-of-file on stdin, then kill every carrier of ``token``."""
    for sig in (signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    while sys.stdin.buffer.read(65536):
        pass
    _kill(token)


if __name__ == "__main__" and sys.argv[1:2] == ["--reap"]:
    reap(sys.argv[2])
