"""``ziggurat serve --workers N``: one supervisor process, N worker processes, one public address.

Python runs one thread of Python at a time, so one server process uses about one core. The
supervisor (this module) starts N copies of ``ziggurat serve``, each a complete server that
owns one database shard (:mod:`ziggurat.hosting.shards`), and keeps them running:

* Worker 0 starts first on the public ``--port`` (0: a free one); the others then bind the
  same port. Every worker sets SO_REUSEPORT, so the kernel spreads new connections over them.
  Each worker also listens on its own port, which it keeps across restarts, its own and the
  supervisor's: ``--worker-ports FIRST`` fixes it (worker K on FIRST+K), else the worker binds
  again the port it published in its shard's ``.address`` file (:mod:`ziggurat.hosting.shards`).
  The web port is shared the same way as the public port (worker 0 binds it first); a web call
  about a match another worker owns is made there by the worker that took it
  (:mod:`ziggurat.hosting.forward`), with the caller's address, which the owner believes next to a
  secret this supervisor gives every worker in its environment (``ZIGGURAT_WORKER_SECRET``, new
  at each start of the supervisor).
* ``ziggurat listening on HOST:PORT`` is printed once every worker is serving.
* A worker that exits (a crash, kill -9) is started again on the same shard and ports, after a
  pause that grows while it keeps failing; it rebuilds its matches from its shard's log, as a
  single server does after a restart.
* SIGTERM or SIGINT drains: every worker gets SIGTERM and shuts down in order (streams end with
  SERVER_SHUTTING_DOWN, the database is checkpointed); a second signal kills them at once.

Workers run in their own process group (a terminal's Ctrl-C reaches only the supervisor, which
passes it on) and die with the supervisor (``PR_SET_PDEATHSIG``), so none is left behind.
"""

from __future__ import annotations

import ctypes
import logging
import os
import queue
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType

log = logging.getLogger("ziggurat.supervisor")

READY_PREFIX = "ziggurat worker "
WORKER_SECRET_ENV = "ZIGGURAT_WORKER_SECRET"
START_TIMEOUT_S = 60.0
POLL_S = 0.2
RESTART_PAUSE_S = (0.2, 10.0)  # first pause after a crash, longest pause
STABLE_S = 30.0  # a worker that ran this long starts again with the shortest pause


@dataclass
class Worker:
    """One worker process and what the supervisor knows of it."""

    index: int
    fixed_port: int = 0  # --worker-ports: the own port it must bind (0: it keeps its own)
    own_port: int = 0  # the own port it serves on, from its ready line
    process: subprocess.Popen[str] | None = None
    started: float = 0.0
    pause: float = 0.0
    restarts: int = 0
    lines: queue.Queue[str] = field(default_factory=queue.Queue)


class StartFailed(Exception):
    """A worker did not come up (its stderr says why)."""


def _die_with(supervisor: int) -> Callable[[], None]:
    """What a worker runs between fork and exec: ask Linux to send it SIGTERM (it drains, as
    on ``kill``) when its parent, the ``supervisor`` process, dies; and if the supervisor has
    died already, before the request was made, exit at once (nothing would ever tell it)."""

    def die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
        if os.getppid() != supervisor:  # reparented: the supervisor is gone
            os._exit(1)

    return die_with_parent


class Supervisor:
    """Starts, watches, restarts and stops the workers of ``ziggurat serve --workers N``."""

    def __init__(
        self,
        count: int,
        worker_command: Callable[[int, int, int], list[str]],
        *,
        host: str,
        port: int,
        grace: float,
        on_ready: Callable[[int, list[int]], None] | None = None,
        first_own_port: int = 0,
    ) -> None:
        """``worker_command(index, public_port, own_port)`` is the command line of a worker
        (``own_port`` 0: the worker binds the port it published last, or a free one);
        ``first_own_port`` (``--worker-ports``) gives worker K the own port FIRST+K."""
        fixed = [first_own_port + index if first_own_port else 0 for index in range(count)]
        self.workers = [Worker(index, fixed_port=fixed[index]) for index in range(count)]
        self.command = worker_command
        self.host = host
        self.port = port
        self.grace = grace
        self.on_ready = on_ready
        self.http_port: int | None = None  # the shared web port, once worker 0 has bound it
        self.secret = secrets.token_urlsafe(32)
        self._signals = 0
        self.stopped_by: int | None = None  # the first signal received (Ctrl-C is SIGINT)

    def run(self) -> int:
        """Serve until a signal, then drain; the exit status of ``ziggurat serve``."""
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            try:
                for worker in self.workers:
                    self._start(worker)
                    self._await_ready(worker)
            except StartFailed as error:
                print(f"error: {error}", file=sys.stderr, flush=True)
                self._stop_all(kill=False)
                return 1
            if self.on_ready is not None:
                self.on_ready(self.port, [w.own_port for w in self.workers])
            while not self._signals:
                self._watch()
                time.sleep(POLL_S)
            return self._stop_all(kill=self._signals > 1)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self._signals += 1
        if self.stopped_by is None:
            self.stopped_by = signum
        if self._signals > 1:
            log.warning("second signal: killing the workers")
            for worker in self.workers:
                if worker.process is not None and worker.process.poll() is None:
                    worker.process.kill()
        else:
            log.info("shutting down %d workers (send the signal again to force)", len(self.workers))

    def _start(self, worker: Worker) -> None:
        command = self.command(worker.index, self.port, worker.fixed_port)
        env = {**os.environ, "PYTHONUNBUFFERED": "1", WORKER_SECRET_ENV: self.secret}
        worker.process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
            start_new_session=True,
            preexec_fn=_die_with(os.getpid()),  # noqa: PLW1509 - a prctl call, no locks taken
        )
        worker.started = time.monotonic()
        worker.lines = queue.Queue()
        threading.Thread(target=_pump, args=(worker.process, worker.lines), daemon=True).start()

    def _await_ready(self, worker: Worker) -> None:
        """Wait for the worker's ready line; learn the public port and its own port from it."""
        assert worker.process is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                line = worker.lines.get(timeout=0.5)
            except queue.Empty:
                if worker.process.poll() is not None:
                    raise StartFailed(f"worker {worker.index} exited ({worker.process.returncode})") from None
                continue
            if not line:  # its stdout closed: it exited
                worker.process.wait()
                raise StartFailed(f"worker {worker.index} exited ({worker.process.returncode})")
            if line.startswith(READY_PREFIX):
                # "ziggurat worker K listening on HOST:PUBLIC[, web port WEB], own port OWN"
                words = line.split()
                self.port = int(words[words.index("on") + 1].rstrip(",").rsplit(":", 1)[1])
                if "web" in words:
                    self.http_port = int(words[words.index("web") + 2].rstrip(","))
                worker.own_port = int(words[-1])
                log.info("worker %d (pid %d) serving", worker.index, worker.process.pid)
                return
        worker.process.kill()
        raise StartFailed(f"worker {worker.index} did not start in {START_TIMEOUT_S:.0f} s")

    def _watch(self) -> None:
        """Start again every worker that has exited."""
        for worker in self.workers:
            process = worker.process
            if process is None or process.poll() is None:
                continue
            ran = time.monotonic() - worker.started
            pause = (
                RESTART_PAUSE_S[0] if ran > STABLE_S else min(RESTART_PAUSE_S[1], max(worker.pause * 2, 0.2))
            )
            worker.pause = pause
            log.error(
                "worker %d (pid %d) exited with %s after %.1f s; starting it again in %.1f s",
                worker.index,
                process.pid,
                process.returncode,
                ran,
                pause,
            )
            worker.process = None
            if self._sleep(pause):
                return
            worker.restarts += 1
            self._start(worker)
            try:
                self._await_ready(worker)
            except StartFailed as error:
                log.error("%s; trying again", error)

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless a signal comes; True when one came."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self._signals:
                return True
            time.sleep(min(POLL_S, seconds))
        return bool(self._signals)

    def _stop_all(self, *, kill: bool) -> int:
        """SIGTERM every worker (SIGKILL with ``kill``) and wait for all; 0 when all drained."""
        live = [w.process for w in self.workers if w.process is not None and w.process.poll() is None]
        for process in live:
            if kill:
                process.kill()
            else:
                process.send_signal(signal.SIGTERM)
        status = 0
        deadline = time.monotonic() + self.grace + 30.0
        for process in live:
            try:
                code = process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait()
            if code != 0:
                status = 1
        log.info("stopped")
        return 1 if kill else status


def _pump(process: subprocess.Popen[str], lines: queue.Queue[str]) -> None:
    """Pass a worker's stdout lines on (its ready line to the supervisor; the rest are dropped,
    workers log to the shared stderr); an empty string marks the end."""
    assert process.stdout is not None
    for line in process.stdout:
        lines.put(line)
    lines.put("")
