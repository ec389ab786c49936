"""A real arena for tests: ``ziggurat arena run`` as a subprocess on a temporary TOML file."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from tests import processes
from ziggurat.arena.config import load_arena_config
from ziggurat.arena.store import ArenaStore, GameRow
from ziggurat.v1 import arena_service_pb2 as apb
from ziggurat.v1 import arena_service_pb2_grpc as agrpc

CLI = [sys.executable, "-m", "ziggurat.cli.main"]
SERVER_LINE = re.compile(r"arena '.*': server (\S+)")
PAGE_LINE = re.compile(r"arena '.*': ladder page (\S+)")


@dataclass
class RunningArena:
    """One ``ziggurat arena run`` process."""

    config_path: Path
    process: subprocess.Popen[str]
    address: str
    log_path: Path
    page: str = ""
    bots: list[subprocess.Popen[str]] = field(default_factory=list)
    builtin_pids: set[int] = field(default_factory=set)

    def store(self) -> ArenaStore:
        """The arena's tables, read-only (as `arena standings` reads them while it runs)."""
        return ArenaStore(load_arena_config(self.config_path).database, readonly=True)

    def games(self) -> list[GameRow]:
        store = self.store()
        try:
            return store.games()
        finally:
            store.close()

    def stub(self, channel: grpc.aio.Channel) -> agrpc.ArenaServiceStub:
        return agrpc.ArenaServiceStub(channel)

    async def arena(self) -> apb.Arena:
        async with grpc.aio.insecure_channel(self.address) as channel:
            return (await self.stub(channel).GetArena(apb.GetArenaRequest(), timeout=10)).arena

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return processes.run([*CLI, "arena", *args], capture_output=True, text=True, timeout=60, check=check)

    def remote_bot(self, bot: str, name: str, token: str, *options: str) -> subprocess.Popen[str]:
        """A built-in bot connected by itself as a remote entrant (as an entrant's program would)."""
        env = {**os.environ, "ZIGGURAT_BOT_NAME": name, "ZIGGURAT_BOT_TOKEN": token}
        process = processes.popen(
            [*CLI, "bot", bot, "--remote", "--server", self.address, *options],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.bots.append(process)
        return process

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM, then wait for a clean exit; the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout)
        finally:
            self.kill_bots()
        return code

    def kill9(self) -> None:
        """kill -9 of the arena alone (its built-in entrants notice their parent is gone)."""
        self.process.kill()
        self.process.wait(10)

    def signal_bots(self, signum: signal.Signals) -> None:
        """Send ``signum`` to every bot still running, the remote ones and the arena's built-in
        entrants (its child processes, remembered: after a kill -9 of the arena they are
        orphans): SIGSTOP freezes them (none moves), SIGCONT thaws them (a stopped process
        would hold a SIGTERM pending)."""
        for bot in self.bots:
            if bot.poll() is None:
                bot.send_signal(signum)
        self.builtin_pids.update(_children(self.process.pid))
        for pid in self.builtin_pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def kill_bots(self) -> None:
        for bot in self.bots:
            processes.stop(bot)
        self.bots.clear()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` (none once it is gone)."""
    found: list[int] = []
    with contextlib.suppress(FileNotFoundError, ProcessLookupError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(child) for child in (task / "children").read_text().split()]
    return found


def start_arena(config_path: Path, *, log_name: str = "arena.log", timeout: float = 60.0) -> RunningArena:
    """Start the arena and wait for its server address (and ladder page, with an http_port)."""
    log_path = config_path.parent / log_name
    with log_path.open("w") as log:
        process = processes.popen(
            [*CLI, "arena", "run", str(config_path), "--log-level", "info"],
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log_path.read_text(errors="replace")
        found = SERVER_LINE.search(text)
        if found and "pairing (" in text:
            page = PAGE_LINE.search(text)
            return RunningArena(config_path, process, found.group(1), log_path, page.group(1) if page else "")
        if process.poll() is not None:
            raise AssertionError(f"the arena exited with {process.returncode}:\n{text}")
        time.sleep(0.1)
    process.kill()
    raise AssertionError(f"the arena did not start:\n{log_path.read_text()}")


async def wait_for(condition: Any, timeout: float, what: str, interval: float = 0.2) -> Any:
    """Poll ``condition()`` (sync or async) until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(interval)
