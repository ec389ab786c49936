"""Shared helpers for the service benchmarks (not a benchmark itself).

* :class:`ServerProcess` runs ``ziggurat serve`` in a separate process on a temporary
  database (``--port 0 --rate 0``), optionally under cProfile or behind its gate
  (``--gate``), and reads the RSS and CPU time of the server and of its gate child.
* :class:`EchoProcess` runs the baseline: a trivial grpc.aio bidirectional echo server
  in another process, built from generic handlers with raw ``bytes`` messages (no
  codegen, no protobuf), so it is the floor that any gRPC service in Python pays.
* :func:`raw_pingpong_latency` / :func:`raw_pingpong_throughput` drive that echo
  server: one round trip = one message client → server → client on one bidi stream.
* Statistics and table helpers, and a Pylos match set-up through the client SDK.

``python benchmarks/_baseline.py echo`` starts the echo server by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pstats
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "server"), str(ROOT / "clients" / "python")]

from ziggurat.v1 import game_pb2  # noqa: E402
from ziggurat_client import MatchHandle, ZigguratClient  # noqa: E402

ECHO_METHOD = "/bench.Echo/Chat"
# The same transport settings as the ziggurat server, so only the service code differs.
ECHO_SERVER_OPTIONS = [
    ("grpc.max_concurrent_streams", 10_000),
    ("grpc.so_reuseport", 0),
]
# A separate subchannel pool per channel: N channels really are N TCP connections.
CHANNEL_OPTIONS = [("grpc.use_local_subchannel_pool", 1)]


# --------------------------------------------------------------------- statistics


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) with linear interpolation; nan when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


@dataclass(frozen=True, slots=True)
class Summary:
    """Distribution of a latency sample, in milliseconds."""

    n: int
    p50: float
    p90: float
    p99: float
    max: float
    mean: float

    @classmethod
    def of(cls, values_ms: Sequence[float]) -> Summary:
        mean = sum(values_ms) / len(values_ms) if values_ms else float("nan")
        return cls(
            n=len(values_ms),
            p50=percentile(values_ms, 50),
            p90=percentile(values_ms, 90),
            p99=percentile(values_ms, 99),
            max=max(values_ms) if values_ms else float("nan"),
            mean=mean,
        )


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """A plain aligned table; floats with 3 significant decimals."""

    def cell(value: object) -> str:
        if isinstance(value, float):
            return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.1f}"
        if isinstance(value, int):
            return f"{value:,}"
        return str(value)

    text = [[cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in text)) for i, h in enumerate(headers)]
    print(
        "  ".join(
            h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths, strict=True))
        )
    )
    print("  ".join("-" * w for w in widths))
    for row in text:
        print(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )


def verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def load_average() -> str:
    """The machine's 1/5/15-minute load averages: print them beside every figure (shared machine)."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


# ------------------------------------------------------------------------ processes


def raise_nofile(wanted: int = 65_536) -> int:
    """Raise the soft open-file limit as far as the hard limit allows; returns it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(wanted, hard) if hard != resource.RLIM_INFINITY else wanted
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return max(soft, target)


def rss_kb(pid: int) -> int:
    """Resident set size of a process (VmRSS from /proc/PID/status), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (from /proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def child_named(pid: int, name: str) -> int | None:
    """The pid of a child process of ``pid`` whose command name is ``name``, if one runs."""
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        for child in children.read_text().split():
            try:
                if Path(f"/proc/{child}/comm").read_text().strip() == name[:15]:
                    return int(child)
            except FileNotFoundError:  # ended since the list was read
                continue
    return None


class _Spawned:
    """A child process that prints ``<banner> HOST:PORT`` once it listens."""

    banner = ""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.address = ""
        self._tmp = tempfile.TemporaryDirectory(prefix="ziggurat-bench-")
        self.tmp = Path(self._tmp.name)
        self.stderr_path = self.tmp / "stderr.log"

    def _command(self) -> list[str]:
        raise NotImplementedError

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> str:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env["PYTHONPATH"] = os.pathsep.join(
            [str(ROOT / "server"), str(ROOT / "clients" / "python"), env.get("PYTHONPATH", "")]
        )
        with self.stderr_path.open("w") as stderr:  # a file: a full pipe would stall the server
            self.proc = subprocess.Popen(
                self._command(), stdout=subprocess.PIPE, stderr=stderr, text=True, env=env, cwd=self.tmp
            )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{self._command()[3:5]} exited early: {self.stderr_path.read_text()}")
            if line.startswith(self.banner):
                self.address = line.split()[-1].strip()
                return self.address
        raise RuntimeError("the server did not start in 30 s")

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM (graceful: lets cProfile write its file), then SIGKILL if needed."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def close(self) -> None:
        self.stop()
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
        self._tmp.cleanup()

    def __enter__(self) -> _Spawned:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ServerProcess(_Spawned):
    """``ziggurat serve`` on 127.0.0.1:0 with a temporary database and no rate limit.

    With ``gate=True`` it runs ``ziggurat serve --gate``: the public port is held by the
    server's child process ``ziggurat-gate`` (docs/operations.md), so the server is two
    processes, and what it costs is their sum: :meth:`rss_kb` and :meth:`cpu_seconds` add
    both, :meth:`rss_parts` and :meth:`cpu_parts` give each apart (``server``, ``gate``).
    """

    banner = "ziggurat listening on "
    GATE = "ziggurat-gate"

    def __init__(
        self,
        *,
        profile: str | None = None,
        log_level: str = "info",
        extra: Sequence[str] = (),
        gate: bool = False,
    ):
        super().__init__()
        self.profile = profile
        self.log_level = log_level
        self.extra = list(extra)
        self.gate = gate
        self._gate_pid: int | None = None

    @property
    def gate_pid(self) -> int:
        """The gate child's pid (only with ``gate=True``; it runs once the server listens)."""
        if not self.gate:
            raise RuntimeError("this server runs without --gate")
        if self._gate_pid is None or not Path(f"/proc/{self._gate_pid}").exists():
            self._gate_pid = child_named(self.pid, self.GATE)
            if self._gate_pid is None:
                raise RuntimeError(f"server pid {self.pid} has no {self.GATE} child process")
        return self._gate_pid

    def pids(self) -> dict[str, int]:
        """The processes that make up the server: ``server`` and, with the gate, ``gate``."""
        return {"server": self.pid, "gate": self.gate_pid} if self.gate else {"server": self.pid}

    def rss_parts(self) -> dict[str, int]:
        """Resident KiB of each of the server's processes."""
        return {name: rss_kb(pid) for name, pid in self.pids().items()}

    def rss_kb(self) -> int:
        """Resident KiB of the server: its process plus, with the gate, the gate's."""
        return sum(self.rss_parts().values())

    def cpu_parts(self) -> dict[str, float]:
        """CPU seconds used so far by each of the server's processes."""
        return {name: cpu_seconds(pid) for name, pid in self.pids().items()}

    def cpu_seconds(self) -> float:
        """CPU seconds used so far by the server: its process plus, with the gate, the gate's."""
        return sum(self.cpu_parts().values())

    def _command(self) -> list[str]:
        prefix = [sys.executable]
        if self.profile:
            prefix += ["-m", "cProfile", "-o", str(Path(self.profile).resolve())]
        return [
            *prefix,
            "-m",
            "ziggurat.cli.main",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--db",
            str(self.tmp / "bench.db"),
            "--rate",
            "0",
            # every benchmark client is on 127.0.0.1: no per-address caps (docs/operations.md)
            "--max-streams-per-address",
            "0",
            "--max-connections-per-address",
            "0",
            # ...nor on the matches one address creates, how fast, or the calls of all clients
            "--max-matches-per-address",
            "0",
            "--create-rate",
            "0",
            "--max-streams",
            "0",
            # ...nor, with the gate, on the connections open from it (gate-only: refused without --gate)
            *(["--max-open-connections-per-address", "0"] if self.gate else []),
            "--grace",
            "1",
            "--no-mdns",
            "--log-level",
            self.log_level,
            *(["--gate"] if self.gate else []),
            *self.extra,
        ]

    def __enter__(self) -> ServerProcess:
        self.start()
        if self.gate:
            self.pids()  # fails now, not mid-run, if the gate is not the server's child
        return self


class EchoProcess(_Spawned):
    """The baseline echo server (this file, ``echo`` sub-command) in its own process."""

    banner = "echo listening on "

    def _command(self) -> list[str]:
        return [sys.executable, str(Path(__file__).resolve()), "echo", "--port", "0"]

    def __enter__(self) -> EchoProcess:
        self.start()
        return self


def print_profile(path: str, limit: int = 40) -> None:
    """The top of a cProfile file, by own time and by cumulative time."""
    stats = pstats.Stats(path)
    stats.strip_dirs()
    print(f"\n--- server profile {path}: top {limit} by own time ---")
    stats.sort_stats("tottime").print_stats(limit)
    print(f"--- top {limit} by cumulative time ---")
    stats.sort_stats("cumulative").print_stats(limit)


# --------------------------------------------------------------------- echo server


async def _echo(requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[Any, Any]) -> Any:
    async for message in requests:
        yield message


async def serve_echo(host: str, port: int) -> None:
    """A bidi echo service with bytes in and out, until SIGTERM."""
    server = grpc.aio.server(options=ECHO_SERVER_OPTIONS)
    handler = grpc.stream_stream_rpc_method_handler(_echo)  # no serializers: raw bytes
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("bench.Echo", {"Chat": handler}),))
    bound = server.add_insecure_port(f"{host}:{port}")
    await server.start()
    print(f"echo listening on {host}:{bound}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await server.stop(0.5)


def echo_channel(address: str) -> grpc.aio.Channel:
    return grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)


async def raw_pingpong_latency(address: str, count: int, payload: bytes, warmup: int = 200) -> list[float]:
    """Round-trip times (ms) of ``count`` messages on one bidi stream, each sent once the
    previous echo arrived: perf_counter before ``write`` → after ``read`` returns.
    """
    async with echo_channel(address) as channel:
        call = channel.stream_stream(ECHO_METHOD, None, None)()  # type: ignore[call-arg]  # written via call.write
        times: list[float] = []
        for i in range(warmup + count):
            start = time.perf_counter()
            await call.write(payload)
            await call.read()
            if i >= warmup:
                times.append((time.perf_counter() - start) * 1000)
        await call.done_writing()
        return times


async def raw_pingpong_throughput(
    address: str, streams: int, start_at: float, stop_at: float, payload: bytes
) -> tuple[int, list[float]]:
    """Round trips completed between the wall-clock times ``start_at`` and ``stop_at``
    (time.time()) over ``streams`` concurrent bidi streams on one channel, each with one
    message in flight; and their round-trip times (ms).
    """
    done = 0
    rtts: list[float] = []
    stop = asyncio.Event()

    async def one(channel: grpc.aio.Channel) -> None:
        nonlocal done
        call = channel.stream_stream(ECHO_METHOD, None, None)()  # type: ignore[call-arg]  # written via call.write
        while not stop.is_set():
            start = time.perf_counter()
            await call.write(payload)
            await call.read()
            now = time.time()
            if start_at <= now < stop_at:
                done += 1
                rtts.append((time.perf_counter() - start) * 1000)
        await call.done_writing()

    async with echo_channel(address) as channel:
        tasks = [asyncio.create_task(one(channel)) for _ in range(streams)]
        await asyncio.sleep(max(0.0, stop_at - time.time()))
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
    return done, rtts


# --------------------------------------------------------------------- ziggurat side


def pylos_config() -> game_pb2.GameConfig:
    return game_pb2.GameConfig(
        game=game_pb2.GAME_PYLOS, seats=2, pylos=game_pb2.PylosConfig(variant=game_pb2.PYLOS_VARIANT_STANDARD)
    )


async def new_pylos_match(client: ZigguratClient, names: tuple[str, str] = ("a", "b")) -> list[MatchHandle]:
    """Create a Pylos match and take both seats; the handles sorted by seat."""
    match = await client.create_match(pylos_config())
    handles = [await client.join(match.match_id, name) for name in names]
    return sorted(handles, key=lambda h: h.seat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    echo = commands.add_parser("echo", help="run the raw bidi echo server (the baseline)")
    echo.add_argument("--host", default="127.0.0.1")
    echo.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    if args.command == "echo":
        asyncio.run(serve_echo(args.host, args.port))


if __name__ == "__main__":
    main()
