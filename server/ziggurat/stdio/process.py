"""A bot program as an asyncio subprocess: capped lines in, lines out, stderr logged.

This layer knows nothing of games; :mod:`ziggurat.stdio.bridge` speaks the
protocol over it. Everything here is non-blocking so that a bot that hangs, floods or
dies never stalls the event loop that also carries the gRPC stream and the server's
clocks. Lines are split by hand rather than with ``StreamReader.readline`` because
the latter loses its place after an over-long line; here an over-long line is
dropped whole and reported once, and the next line is read intact.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections import deque
from collections.abc import Mapping, Sequence

log = logging.getLogger("ziggurat.stdio")

MAX_LINE = 4096  # bytes of one line the bot may write
_CHUNK = 65536
_LOGGED_CHARS = 500  # of one stderr line


class BotExitedError(Exception):
    """The program exited, or closed its end of a pipe: it can no longer play."""


class LineTooLongError(Exception):
    """The program wrote a line longer than the cap; the whole line was dropped."""


class LineSplitter:
    """Bytes in, complete lines out; a line over ``limit`` bytes becomes one ``None``.

    Pure and synchronous so its edge cases (a line split across reads, an over-long
    line, a CR before the LF) are testable without a process.
    """

    def __init__(self, limit: int = MAX_LINE) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._discarding = False  # inside an over-long line, until its newline

    def feed(self, data: bytes) -> list[str | None]:
        """The lines completed by ``data``, decoded; ``None`` stands for a dropped long line."""
        out: list[str | None] = []
        self._buffer += data
        while True:
            end = self._buffer.find(b"\n")
            if end < 0:
                if len(self._buffer) > self.limit + 1:  # + 1: room for a CR before the LF
                    if not self._discarding:
                        out.append(None)
                    self._discarding = True
                    self._buffer.clear()
                return out
            raw = bytes(self._buffer[:end]).removesuffix(b"\r")
            del self._buffer[: end + 1]
            if self._discarding:
                self._discarding = False
            elif len(raw) > self.limit:
                out.append(None)
            else:
                out.append(raw.decode("utf-8", "replace"))


class BotProcess:
    """One running program. ``start`` it, ``send`` lines, ``read_line``, then ``close``."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        label: str = "bot",
        max_line: int = MAX_LINE,
    ) -> None:
        if not argv:
            raise ValueError("no program to run")
        self.argv = list(argv)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.label = label
        self.stderr_tail: deque[str] = deque(maxlen=20)
        self._splitter = LineSplitter(max_line)
        self._lines: deque[str | None] = deque()
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr_task: asyncio.Task[None] | None = None

    @property
    def returncode(self) -> int | None:
        """The exit status once the program has exited (negative: killed by that signal)."""
        return None if self._proc is None else self._proc.returncode

    async def start(self) -> None:
        """Spawn the program in its own process group (so ``close`` can end its children too).

        Raises OSError when the program cannot be started.
        """
        self._proc = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
            cwd=self.cwd,
            start_new_session=True,
        )
        self._stderr_task = asyncio.create_task(self._log_stderr())

    async def send(self, line: str) -> None:
        """Write one line; raises BotExitedError when the program no longer reads."""
        proc = self._require()
        assert proc.stdin is not None
        if proc.stdin.is_closing():
            raise BotExitedError("the bot closed its standard input")
        try:
            proc.stdin.write(line.encode() + b"\n")
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as error:
            raise BotExitedError(f"the bot stopped reading its standard input ({error})") from None

    async def read_line(self) -> str:
        """The next stdout line (without its newline); no timeout here, callers bound it.

        Raises LineTooLongError for a dropped over-long line and BotExitedError at end of file.
        """
        proc = self._require()
        assert proc.stdout is not None
        while not self._lines:
            data = await proc.stdout.read(_CHUNK)
            if not data:
                raise BotExitedError("the bot closed its standard output")
            self._lines.extend(self._splitter.feed(data))
        line = self._lines.popleft()
        if line is None:
            raise LineTooLongError(f"line longer than {self._splitter.limit} bytes")
        return line

    async def close(self, last_line: str | None = None, grace: float = 2.0) -> int | None:
        """Say ``last_line`` (e.g. ``quit``) and close stdin; kill the process group (the
        program and any children it started) if it is still running ``grace`` seconds later.
        """
        proc = self._proc
        if proc is None:
            return None
        if last_line is not None and proc.returncode is None:
            with contextlib.suppress(BotExitedError, OSError):
                await asyncio.wait_for(self.send(last_line), grace)
        if proc.stdin is not None:
            proc.stdin.close()
        if await self.exit_status(grace) is None:
            log.warning("%s: still running %.1f s after quit; killing it", self.label, grace)
            self._kill_group()
            await self.exit_status(5)
        if self._stderr_task is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(self._stderr_task, 1)
        return proc.returncode

    async def exit_status(self, wait: float) -> int | None:
        """The exit status, waiting at most ``wait`` seconds for the program to exit."""
        proc = self._require()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), wait)
        return proc.returncode

    def kill(self) -> None:
        """Kill the program's process group now, if it was started and may still run."""
        if self._proc is not None and self._proc.returncode is None:
            self._kill_group()

    def _kill_group(self) -> None:
        """Kill what is left of the program's process group (the program and its children)."""
        assert self._proc is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)

    def _require(self) -> asyncio.subprocess.Process:
        if self._proc is None:
            raise RuntimeError("BotProcess.start() was not called")
        return self._proc

    async def _log_stderr(self) -> None:
        """Drain stderr for the program's whole life (a full pipe would freeze it)."""
        assert self._proc is not None and self._proc.stderr is not None
        splitter = LineSplitter(MAX_LINE)
        while data := await self._proc.stderr.read(_CHUNK):
            for line in splitter.feed(data):
                text = "[line too long, dropped]" if line is None else line[:_LOGGED_CHARS]
                self.stderr_tail.append(text)
                log.info("%s stderr: %s", self.label, text)
