"""``ziggurat serve --gate``: the ``ziggurat-gate`` child process on the public port.

Why a second program: a silent stream or an idle connection costs the Python server's one
event loop and its memory however early it is refused, and gRPC Python has no hook before a
call reaches Python (docs/operations.md, "The gate"). The gate, written in Rust on tokio and
h2 (``server/gate/``, built by ``./scripts/serve --gate`` into ``.venv/bin``: a native program
frees each connection's and each call's memory when it ends and gives it back to the
operating system after a burst, which the Go gate before it could not), holds the public port,
enforces the connection-level limits and the first-message deadline, and forwards only calls
that have sent their first message, over a private Unix socket, to this server. The
command line and the environment it is given are the contract in ``server/gate/README.md``:
every limit of ``ziggurat serve`` is passed through with the same
name and unit; the secret that makes its ``x-ziggurat-peer`` believed
(:mod:`ziggurat.api.peer`) is put in its environment only, never on its command line,
which every user of the machine can read.

The gate runs in a process group of its own (a terminal's Ctrl-C reaches only the server,
which then stops the gate in order) and is killed by Linux if the server dies (kill -9;
:func:`_dying_with_us`), so that it never holds the port without a server behind it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ziggurat.store.startup import StartupError

log = logging.getLogger("ziggurat.server")

BINARY_NAME = "ziggurat-gate"
SECRET_ENV = "ZIGGURAT_GATE_SECRET"
READY_PREFIX = "ziggurat-gate listening on "
READY_TIMEOUT_S = 15.0
_GATE_PREFIX = re.compile(r"^ziggurat-gate:\s*(error:\s*)?")  # its one-line errors begin so
# The gate gives calls it forwarded this long beyond the server's own grace to end, then ends
# them itself; the server waits this much more for the gate before it kills it.
SHUTDOWN_MARGIN_S = 3.0
KILL_MARGIN_S = 2.0


def default_binary() -> Path:
    """Where ``./scripts/serve --gate`` (``scripts/bootstrap``) builds the gate: beside this Python
    (``.venv/bin``)."""
    return Path(sys.executable).parent / BINARY_NAME


def _dying_with_us(command: list[str]) -> list[str]:
    """``command``, run so that Linux kills it if this process dies (kill -9 included): through
    util-linux's ``setpriv --pdeathsig KILL``, which sets that and then becomes the gate (same
    pid). Not with a ``preexec_fn`` doing the prctl: that makes Python fork instead of vfork,
    and gRPC's fork handlers then log a line of their own into the server's log. Without
    ``setpriv`` (not Linux) the gate is started as it is.
    """
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "KILL", "--", *command] if setpriv else command


def check_binary(binary: Path) -> None:
    """Raise a one-line :class:`StartupError` unless ``binary`` is an executable file."""
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise StartupError(
            f"--gate needs {binary}, which is missing: run ./scripts/serve --gate with cargo on PATH "
            "(it builds server/gate first)"
        )


def listen_address(host: str, port: int) -> str:
    """``HOST:PORT`` as the gate's ``--listen`` takes it (an IPv6 host in brackets)."""
    if ":" in host and not host.startswith("["):
        return f"[{host}]:{port}"
    return f"{host}:{port}"


@dataclass(frozen=True, slots=True)
class GateLimits:
    """What the gate is told: ``ziggurat serve``'s values of the limits the gate enforces."""

    max_message_bytes: int
    max_streams_per_connection: int
    max_streams_per_address: int
    max_connections_per_address: int
    max_open_connections_per_address: int
    ipv6_prefix_length: int
    first_message_timeout: float
    max_connection_idle: float
    max_connection_age: float
    max_connection_age_grace: float
    keepalive: float
    keepalive_timeout: float
    handshake_timeout: float
    shutdown_timeout: float

    def arguments(self) -> list[str]:
        """The gate's options for these limits (seconds as plain decimals)."""
        out: list[str] = []
        for name, value in (
            ("max-message-bytes", self.max_message_bytes),
            ("max-streams-per-connection", self.max_streams_per_connection),
            ("max-streams-per-address", self.max_streams_per_address),
            ("max-connections-per-address", self.max_connections_per_address),
            ("max-open-connections-per-address", self.max_open_connections_per_address),
            ("ipv6-prefix-length", self.ipv6_prefix_length),
            ("first-message-timeout", self.first_message_timeout),
            ("max-connection-idle", self.max_connection_idle),
            ("max-connection-age", self.max_connection_age),
            ("max-connection-age-grace", self.max_connection_age_grace),
            ("keepalive", self.keepalive),
            ("keepalive-timeout", self.keepalive_timeout),
            ("handshake-timeout", self.handshake_timeout),
            ("shutdown-timeout", self.shutdown_timeout),
        ):
            out += [f"--{name}", _number(value)]
        return out


def _number(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return repr(float(value))


class Gate:
    """One running ``ziggurat-gate``: :meth:`start` it, then :meth:`stop` it (or see it exit)."""

    def __init__(
        self,
        binary: Path,
        *,
        listen: str,
        upstream: str,
        limits: GateLimits,
        secret: str,
        tls: tuple[str, str] | None = None,
        log_level: str = "info",
        on_exit: Callable[[int], None] | None = None,
        reuse_port: bool = False,
        also_listen: str | None = None,
    ) -> None:
        """``upstream`` is the server's private socket (``unix:/path``); ``on_exit`` is told the
        gate's exit code if it exits before :meth:`stop` (the server then stops: exit code 1).
        A worker of ``--workers`` shares ``listen`` with the other workers' gates
        (``reuse_port``) and has its gate serve its own port too (``also_listen``)."""
        self.binary = binary
        self.command = [str(binary), "--listen", listen, "--upstream", upstream, *limits.arguments()]
        if reuse_port:
            self.command.append("--reuse-port")
        if also_listen is not None:
            self.command += ["--also-listen", also_listen]
        if tls is not None:
            self.command += ["--tls-cert", tls[0], "--tls-key", tls[1]]
        self.command += ["--log-level", log_level]
        self._secret = secret
        self._shutdown_timeout = limits.shutdown_timeout
        self._on_exit = on_exit
        self._process: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._stopping = False
        self.died = False  # it exited while serving (before stop)
        self.port = 0
        self.also_port = 0  # the port bound for ``also_listen``

    @property
    def pid(self) -> int | None:
        """The gate's process id while it runs (for tests and operators)."""
        return None if self._process is None else self._process.pid

    async def start(self) -> int:
        """Start the gate and wait for its ready line; returns the public port it bound.

        Raises :class:`StartupError` (one line) when the binary is missing, or the gate exits
        or says nothing within ``READY_TIMEOUT_S``.
        """
        check_binary(self.binary)
        env = {**os.environ, SECRET_ENV: self._secret}  # only the child's environment, never argv
        self._process = process = await asyncio.create_subprocess_exec(
            *_dying_with_us(self.command),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        assert process.stdout is not None and process.stderr is not None
        said = _Lines()
        stderr = asyncio.create_task(_forward(process.stderr, said))
        try:
            line = await asyncio.wait_for(process.stdout.readline(), READY_TIMEOUT_S)
        except TimeoutError:
            await self._kill()
            stderr.cancel()
            raise StartupError(
                f"{BINARY_NAME} did not say it was listening within {READY_TIMEOUT_S:g} s"
            ) from None
        text = line.decode(errors="replace").strip()
        if not text.startswith(READY_PREFIX):
            code = await self._reap()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait_for(stderr, 2)
            why = _GATE_PREFIX.sub("", said.last() or text) or f"exit code {code}"
            raise StartupError(f"{BINARY_NAME} could not start: {why}")
        # "ziggurat-gate listening on HOST:PORT[, also on HOST:PORT]"
        first, _, second = text.removeprefix(READY_PREFIX).partition(", also on ")
        self.port = int(first.rsplit(":", 1)[1])
        self.also_port = int(second.rsplit(":", 1)[1]) if second else 0
        said.release()
        self._tasks = [
            stderr,
            asyncio.create_task(_forward(process.stdout, None)),
            asyncio.create_task(self._watch()),
        ]
        return self.port

    async def stop(self) -> None:
        """Tell the gate to stop (SIGTERM): it keeps its port, answers new calls with
        SERVER_SHUTTING_DOWN, and lets the calls it forwarded end. Returns at once."""
        self._stopping = True
        if self._process is not None and self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._process.send_signal(signal.SIGTERM)

    async def wait(self) -> None:
        """Wait for the gate to exit after :meth:`stop` (SIGKILL when it overstays its own
        shutdown timeout), then for its output to be read to the end."""
        self._stopping = True
        if self._process is not None:
            try:
                await asyncio.wait_for(self._process.wait(), self._shutdown_timeout + KILL_MARGIN_S)
            except TimeoutError:
                log.warning("%s did not stop in %g s: killed", BINARY_NAME, self._shutdown_timeout)
                await self._kill()
            code = self._process.returncode
            if code not in (0, None) and not self.died:  # a death while serving was told already
                log.warning("%s stopped with exit code %s", BINARY_NAME, code)
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(task, 2)

    async def kill(self) -> None:
        """Kill the gate at once (the server could not start after all) and stop reading it."""
        self._stopping = True
        if self._process is not None and self._process.returncode is None:
            await self._kill()
        for task in self._tasks:
            task.cancel()

    async def _watch(self) -> None:
        assert self._process is not None
        code = await self._process.wait()
        if not self._stopping:
            self.died = True
            if self._on_exit is not None:
                self._on_exit(code)

    async def _kill(self) -> None:
        assert self._process is not None
        with contextlib.suppress(ProcessLookupError):
            self._process.kill()
        await self._process.wait()

    async def _reap(self) -> int:
        assert self._process is not None
        try:
            return await asyncio.wait_for(self._process.wait(), 5)
        except TimeoutError:
            await self._kill()
            return self._process.returncode or -9


class _Lines:
    """The gate's stderr lines held back while it starts: if it fails, its last line is the
    reason in the server's one-line error; once it is ready they are written out."""

    def __init__(self) -> None:
        self.held: list[bytes] | None = []

    def last(self) -> str:
        return self.held[-1].decode(errors="replace").strip() if self.held else ""

    def release(self) -> None:
        for line in self.held or ():
            _write_stderr(line)
        self.held = None


async def _forward(stream: asyncio.StreamReader, lines: _Lines | None) -> None:
    """Copy the gate's lines to the server's stderr as they come (held back while it starts)."""
    while line := await stream.readline():
        if lines is not None and lines.held is not None:
            lines.held.append(line)
        else:
            _write_stderr(line)


def _write_stderr(line: bytes) -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(line.decode(errors="replace"))
        sys.stderr.flush()
