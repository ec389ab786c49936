"""Idle soak: idle connections and silent streams opened and dropped in a loop, for a while.

A ``ziggurat serve`` process (its default limits, except the per-address caps: every client
here shares the address 127.0.0.1, so all the load is really held; with ``--gate``,
``ziggurat serve --gate``, whose child ``ziggurat-gate`` holds the public port, and whose
``--max-open-connections-per-address`` (default 1,000) is turned off too, with 0: else the
gate would close all but 1,000 of each round's idle connections at accept, and the load the
issue states would not reach it) is loaded,
round after round until ``--seconds`` have passed: each round opens ``--connections`` idle
TCP connections (channels that connect and make no call) and ``--streams`` silent ``Play``
streams (opened, never a first message) over ``--stream-channels`` channels, holds them
``--hold`` seconds, and drops them all. The load comes from ``--loader go`` (the default:
one Go process, ``benchmarks/idle_load/``, built with ``go build`` into a cache directory on
first use) or ``--loader python`` (``--procs`` grpc.aio client processes sharing each round;
they took most of a 2-core machine, so their CPU crowded the servers' figures). Meanwhile a
healthy client in this process calls ``GetMatch`` on the loaded server and, in turn, on an
unloaded twin server (another ``ziggurat serve`` process, with the gate when the loaded one
has it): the twin is the in-run baseline, what the same call costs on this machine at the
same moments (2 cores shared with the loader and whatever else runs), so the difference is
the load's effect on the server.

Printed: the server's RSS before the load, its peak, and after the load has stopped and
the server settled (goal: back within 10 % of the start; with the gate, the server process
and the gate together, and each apart), and its resident memory by kind of mapping (main
malloc heap, anonymous: other malloc arenas and Python's or Go's, files); the CPU time the
server (and its gate) and the loader used; the
healthy client's GetMatch latency for every 10-second window and overall, beside the
twin's (goal: p99 under 10 ms), and how late the healthy client's own pauses woke up (a
client starved of CPU by the loaders on a 2-core machine delays both servers' figures);
how the silent streams ended; the load average.
``--profile FILE`` runs the loaded server under cProfile and prints the top of it.

    python benchmarks/idle_soak.py                       # 10,000 / 10,000 for 5 minutes
    python benchmarks/idle_soak.py --gate                # the same, behind ziggurat-gate
    python benchmarks/idle_soak.py --connections 2000 --streams 2000 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import multiprocessing
import os
import resource
import shutil
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from _baseline import (
    ServerProcess,
    Summary,
    print_profile,
    print_table,
    raise_nofile,
    verdict,
)

from ziggurat.v1 import game_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as sgrpc

GOAL_P99_MS = 10.0
GOAL_RSS_RETURN = 0.10
FAILED_MS = 5000.0  # a healthy call that failed or timed out counts as its 5 s timeout
WINDOW_S = 10.0
OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]
GO_LOADER = Path(__file__).resolve().parent / "idle_load"


@dataclass
class LoadDone:
    """What the loader did: rounds run (each of its own share of the load, per process), how
    the silent streams ended, and the loader's own CPU seconds and peak RSS (all processes)."""

    rounds: int = 0
    ended: Counter[str] = field(default_factory=Counter)
    cpu: float = 0.0
    peak_rss_kib: int = 0
    not_ready: int | None = None  # connections not ready within 30 s (the Go loader counts them)
    examples: dict[str, str] = field(default_factory=dict)  # an error message per outcome


async def _one_round(
    address: str, connections: int, streams: int, stream_channels: int, hold: float
) -> Counter[str]:
    """Open, hold, drop; returns how the silent streams ended."""
    ended: Counter[str] = Counter()
    idle = [grpc.aio.insecure_channel(address, options=OWN_CONNECTION) for _ in range(connections)]
    carriers = [grpc.aio.insecure_channel(address, options=OWN_CONNECTION) for _ in range(stream_channels)]
    try:
        await asyncio.gather(
            *(asyncio.wait_for(c.channel_ready(), 30) for c in idle + carriers), return_exceptions=True
        )
        calls = (
            [sgrpc.MatchServiceStub(carriers[i % len(carriers)]).Play() for i in range(streams)]
            if carriers
            else []
        )

        async def outcome(call: Any) -> str:
            try:
                await call.read()
                return "answered"
            except grpc.aio.AioRpcError as error:
                # gRPC reports the client's own cancel() as CANCELLED or as CancelledError
                cancelled = error.code() == grpc.StatusCode.CANCELLED and call.cancelled()
                return "dropped by the client" if cancelled else error.code().name
            except asyncio.CancelledError:  # the call, cancelled by this client at the end of the hold
                return "dropped by the client"

        waiting = [asyncio.create_task(outcome(call)) for call in calls]
        await asyncio.sleep(hold)
        for call in calls:
            call.cancel()
        for result in await asyncio.gather(*waiting):
            ended[result] += 1
    finally:
        await asyncio.gather(*(c.close() for c in idle + carriers), return_exceptions=True)
    return ended


def _loader(address: str, args: argparse.Namespace, share: int, stop_at: float, results: Any) -> None:
    raise_nofile()

    async def run() -> None:
        total: Counter[str] = Counter()
        rounds = 0
        while time.time() < stop_at:
            total += await _one_round(
                address,
                args.connections // share,
                args.streams // share,
                max(1, args.stream_channels // share),
                args.hold,
            )
            rounds += 1
        usage = resource.getrusage(resource.RUSAGE_SELF)
        results.put((rounds, dict(total), usage.ru_utime + usage.ru_stime, usage.ru_maxrss))

    asyncio.run(run())


def go_loader() -> Path:
    """The Go loader's binary: built with ``go build`` into a cache directory the first time,
    and again whenever its sources change (the file name carries their hash)."""
    sources = sorted(p for p in GO_LOADER.iterdir() if p.suffix in (".go", ".mod", ".sum"))
    digest = hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in sources)).hexdigest()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ziggurat-bench"
    binary = cache / f"idle_load-{digest[:16]}"
    if binary.exists():
        return binary
    go = shutil.which("go")
    if go is None:
        raise SystemExit(
            "idle_soak.py: --loader go (the default) is built from benchmarks/idle_load/ with Go "
            "(1.24 or later, https://go.dev/dl/), and there is no `go` on PATH: install Go, or run "
            "with --loader python (whose client processes take much of the machine's CPU themselves)"
        )
    cache.mkdir(parents=True, exist_ok=True)
    print(f"building the Go loader: go build -o {binary} in {GO_LOADER}", flush=True)
    partial = binary.with_suffix(".partial")
    built = subprocess.run([go, "build", "-o", str(partial), "."], cwd=GO_LOADER, check=False)
    if built.returncode != 0:
        raise SystemExit(f"idle_soak.py: `go build` in {GO_LOADER} failed (exit {built.returncode})")
    partial.replace(binary)
    return binary


def _lower_priority(nice: int, idle: bool) -> None:
    """In the loader's process before it runs: its niceness, and with ``idle`` Linux's
    SCHED_IDLE class, which runs it only on CPU time nothing else wants."""
    if nice:
        os.nice(nice)
    if idle:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))


async def _go_load(binary: Path, address: str, args: argparse.Namespace, stop_at: float) -> LoadDone:
    """Run the Go loader until ``stop_at`` and read its report (one JSON object on stdout)."""
    process = await asyncio.create_subprocess_exec(
        str(binary),
        "-address",
        address,
        "-connections",
        str(args.connections),
        "-streams",
        str(args.streams),
        "-stream-channels",
        str(args.stream_channels),
        "-hold",
        str(args.hold),
        "-seconds",
        f"{max(0.0, stop_at - time.time()):.3f}",
        stdout=asyncio.subprocess.PIPE,
        preexec_fn=lambda: _lower_priority(args.loader_nice, args.loader_idle),
    )
    try:
        out, _ = await asyncio.wait_for(process.communicate(), args.seconds + 120)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    if process.returncode != 0:
        raise RuntimeError(f"the Go loader exited with {process.returncode}")
    report = json.loads(out)
    return LoadDone(
        rounds=report["rounds"],
        ended=Counter(report["ended"]),
        cpu=report["cpu_seconds"],
        peak_rss_kib=report["max_rss_kib"],
        not_ready=report["not_ready"],
        examples=report["examples"],
    )


async def _python_load(address: str, args: argparse.Namespace, stop_at: float) -> LoadDone:
    """Run ``--procs`` Python loader processes until ``stop_at``, each a share of every round."""
    context = multiprocessing.get_context("spawn")
    results: Any = context.Queue()
    loaders = [
        context.Process(target=_loader, args=(address, args, args.procs, stop_at, results))
        for _ in range(args.procs)
    ]
    for loader in loaders:
        loader.start()
    done = LoadDone()
    for _ in loaders:
        rounds, ended, cpu, peak = await asyncio.to_thread(results.get, True, args.seconds + 120)
        done.rounds += rounds
        done.ended.update(ended)
        done.cpu += cpu
        done.peak_rss_kib += peak
    for loader in loaders:
        loader.join(30)
    return done


async def _new_match(address: str) -> str:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = sgrpc.MatchServiceStub(channel)
        config = game_pb2.GameConfig(game=game_pb2.GAME_PYLOS, seats=2)
        match = (await stub.CreateMatch(spb.CreateMatchRequest(config=config))).match
        for name in ("a", "b"):
            await stub.JoinMatch(spb.JoinMatchRequest(match_id=match.match_id, player_name=name))
        return str(match.match_id)


async def _healthy(
    targets: list[tuple[str, str]], stop_at: float, lags: list[float]
) -> list[list[tuple[float, float]]]:
    """(time, latency ms) of GetMatch calls on each (address, match id), in turn, every 20 ms
    until ``stop_at``: the loaded server and its unloaded twin, measured alike. ``lags`` gets
    how late (ms) each of this client's own 10 ms pauses woke up: on a shared machine the
    client itself waits for a core at times, and that delay is in both servers' figures."""
    samples: list[list[tuple[float, float]]] = [[] for _ in targets]
    channels = [grpc.aio.insecure_channel(address) for address, _ in targets]
    try:
        calls = [
            (sgrpc.MatchServiceStub(channel).GetMatch, spb.GetMatchRequest(match_id=match_id))
            for channel, (_, match_id) in zip(channels, targets, strict=True)
        ]
        while time.time() < stop_at:
            for (call, request), sample in zip(calls, samples, strict=True):
                started = time.perf_counter()
                try:
                    await call(request, timeout=5)
                    sample.append((time.time(), (time.perf_counter() - started) * 1000))
                except grpc.aio.AioRpcError:  # failed or timed out (5 s): counted as the timeout
                    sample.append((time.time(), FAILED_MS))
                paused = time.perf_counter()
                await asyncio.sleep(0.01)
                lags.append(max(0.0, (time.perf_counter() - paused) * 1000 - 10))
    finally:
        for channel in channels:
            await channel.close()
    return samples


def memory_map(pid: int) -> dict[str, int]:
    """Resident KiB of a process by kind of mapping: the main malloc heap (``[heap]``, brk),
    anonymous mappings (other malloc arenas, thread stacks, large blocks) and files."""
    kinds: dict[str, int] = {"heap": 0, "anonymous": 0, "files": 0}
    kind = "anonymous"
    with open(f"/proc/{pid}/smaps") as smaps:
        for line in smaps:
            fields = line.split()
            if fields and "-" in fields[0] and not fields[0].endswith(":"):
                name = fields[5] if len(fields) > 5 else ""
                kind = "heap" if name == "[heap]" else "files" if name.startswith("/") else "anonymous"
            elif fields and fields[0] == "Rss:":
                kinds[kind] += int(fields[1])
    return kinds


def _mb(kinds: dict[str, int]) -> str:
    return ", ".join(f"{kind} {kib / 1024:.1f}" for kind, kib in kinds.items())


def _parts(values: dict[str, int] | dict[str, float], scale: float = 1024) -> str:
    """`` (server 80.1 + gate 20.3)`` (KiB as MB by default) when the server is two processes."""
    if len(values) < 2:
        return ""
    return " (" + " + ".join(f"{name} {value / scale:.1f}" for name, value in values.items()) + ")"


async def _main(args: argparse.Namespace) -> None:
    raise_nofile()
    binary = go_loader() if args.loader == "go" else None
    extra = ["--first-message-timeout", str(args.first_message_timeout)]
    with (
        ServerProcess(log_level="warning", extra=extra, profile=args.profile, gate=args.gate) as server,
        ServerProcess(log_level="warning", extra=extra, gate=args.gate) as twin,
    ):
        targets = [
            (server.address, await _new_match(server.address)),
            (twin.address, await _new_match(twin.address)),
        ]
        await asyncio.sleep(1)
        load_start = os.getloadavg()
        rss_start = server.rss_parts()
        map_start = {name: memory_map(pid) for name, pid in server.pids().items()}
        cpu_start = server.cpu_parts()
        began = time.time()
        stop_at = began + args.seconds
        load = asyncio.create_task(
            _go_load(binary, server.address, args, stop_at)
            if binary is not None
            else _python_load(server.address, args, stop_at)
        )
        peak = dict(rss_start)
        peak_total = sum(rss_start.values())

        async def watch_rss() -> None:
            nonlocal peak_total
            while time.time() < stop_at:
                now = server.rss_parts()
                peak_total = max(peak_total, sum(now.values()))
                for name, kib in now.items():
                    peak[name] = max(peak[name], kib)
                await asyncio.sleep(1)

        lags: list[float] = []
        try:
            (samples, twin_samples), _ = await asyncio.gather(_healthy(targets, stop_at, lags), watch_rss())
            load_end = os.getloadavg()
            done = await load
        finally:
            load.cancel()
        load_seconds = time.time() - began
        await asyncio.sleep(args.settle)
        rss_end = server.rss_parts()
        map_end = {name: memory_map(pid) for name, pid in server.pids().items()}
        cpu = {name: seconds - cpu_start[name] for name, seconds in server.cpu_parts().items()}

    rows = []
    window = 0
    while began + window * WINDOW_S < stop_at:
        low, high = began + window * WINDOW_S, began + (window + 1) * WINDOW_S
        part = [ms for at, ms in samples if low <= at < high]
        twin_part = [ms for at, ms in twin_samples if low <= at < high]
        if part and twin_part:
            s, t = Summary.of(part), Summary.of(twin_part)
            rows.append(
                [
                    f"{window * WINDOW_S:.0f}-{(window + 1) * WINDOW_S:.0f} s",
                    len(part),
                    f"{s.p50:.2f}",
                    f"{s.p99:.2f}",
                    f"{s.max:.1f}",
                    f"{t.p50:.2f}",
                    f"{t.p99:.2f}",
                ]
            )
        window += 1
    overall = Summary.of([ms for _, ms in samples])
    baseline = Summary.of([ms for _, ms in twin_samples])
    failed = sum(ms >= FAILED_MS for _, ms in samples)
    twin_failed = sum(ms >= FAILED_MS for _, ms in twin_samples)
    if binary is not None:
        priority = f", niceness {args.loader_nice}" if args.loader_nice else ""
        priority += ", SCHED_IDLE" if args.loader_idle else ""
        loader = f"the Go loader (one process{priority}), {done.rounds} rounds"
    else:
        loader = (
            f"{args.procs} Python client processes, {done.rounds} rounds of "
            f"{args.connections // args.procs:,} + {args.streams // args.procs:,} "
            f"(each process its share of every round)"
        )
    print(
        f"idle soak: {args.connections:,} idle connections + {args.streams:,} silent Play streams per round "
        f"over {args.stream_channels} connections, {loader} in {args.seconds:.0f} s (hold {args.hold:g} s); "
        f"server {'behind its gate (serve --gate)' if args.gate else 'without the gate'}, "
        f"first-message timeout {args.first_message_timeout:g} s"
    )
    total_cpu = sum(cpu.values())
    print(
        f"CPU: the server {total_cpu:.1f} s{_parts(cpu, 1)} "
        f"= {total_cpu / load_seconds:.2f} core over the {load_seconds:.0f} s of load (and {args.settle:g} s "
        f"settle); the loader {done.cpu:.1f} s = {done.cpu / load_seconds:.2f} core, its peak RSS "
        f"{done.peak_rss_kib / 1024:.0f} MB"
    )
    print(f"silent streams ended: {dict(done.ended)}")
    for outcome, message in done.examples.items():
        print(f"  {outcome}, for example: {message}")
    if done.not_ready:
        print(f"connections not ready within 30 s (over all rounds): {done.not_ready:,}")
    print_table(
        ["healthy GetMatch", "calls", "p50 ms", "p99 ms", "max ms", "twin p50 ms", "twin p99 ms"], rows
    )
    print(
        f"overall: {overall.n} calls, p50 {overall.p50:.2f} ms, p99 {overall.p99:.2f} ms, "
        f"max {overall.max:.1f} ms, {failed} failed or timed out (counted as 5 s); the unloaded twin "
        f"server, same client, same moments: p50 {baseline.p50:.2f} ms, p99 {baseline.p99:.2f} ms, "
        f"max {baseline.max:.1f} ms, {twin_failed} failed"
    )
    lag = Summary.of(lags)
    print(
        f"the healthy client's own wake-up delay after a 10 ms pause (its share of the figures above): "
        f"p50 {lag.p50:.2f} ms, p99 {lag.p99:.2f} ms, max {lag.max:.1f} ms"
    )
    print(
        "load average: at the start {:.2f} {:.2f} {:.2f}, at the end of the load {:.2f} {:.2f} {:.2f} "
        "(2 cores)".format(*load_start, *load_end)
    )
    start_total, end_total = sum(rss_start.values()), sum(rss_end.values())
    back = (end_total - start_total) / start_total
    print(
        f"server RSS: start {start_total / 1024:.1f} MB{_parts(rss_start)}, peak {peak_total / 1024:.1f} MB"
        f"{_parts(peak)}, end (after {args.settle:g} s settle) {end_total / 1024:.1f} MB{_parts(rss_end)} "
        f"({back:+.1%})"
    )
    for name, kinds in map_start.items():
        print(f"{name} resident MB by mapping: start {_mb(kinds)}; end {_mb(map_end[name])}")
    print(f"goal: healthy GetMatch p99 under {GOAL_P99_MS:g} ms: {verdict(overall.p99 < GOAL_P99_MS)}")
    print(
        f"goal: server RSS{' (server + gate)' if args.gate else ''} back within {GOAL_RSS_RETURN:.0%} "
        f"of the start: {verdict(back <= GOAL_RSS_RETURN)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--connections", type=int, default=10_000, help="idle connections per round (10,000)")
    parser.add_argument("--streams", type=int, default=10_000, help="silent Play streams per round (10,000)")
    parser.add_argument(
        "--stream-channels", type=int, default=20, help="connections carrying the streams (20)"
    )
    parser.add_argument("--seconds", type=float, default=300.0, help="duration of the load (300)")
    parser.add_argument("--hold", type=float, default=5.0, help="seconds each round holds its load (5)")
    parser.add_argument(
        "--loader",
        choices=("go", "python"),
        default="go",
        help="what applies the load: go (default; benchmarks/idle_load, one process, built with "
        "`go build` on first use) or python (--procs grpc.aio client processes)",
    )
    parser.add_argument(
        "--loader-nice",
        type=int,
        default=0,
        metavar="N",
        help="run the Go loader at this niceness (0): it stands in for clients on other hosts, so "
        "19 keeps it from taking CPU the servers and the healthy client want on a small machine",
    )
    parser.add_argument(
        "--loader-idle",
        action="store_true",
        help="run the Go loader in Linux's SCHED_IDLE class (only on CPU time nothing else wants): "
        "closer still to clients on other hosts than --loader-nice 19",
    )
    parser.add_argument("--procs", type=int, default=2, help="client processes of --loader python (2)")
    parser.add_argument(
        "--gate",
        action="store_true",
        help=(
            "both servers run `ziggurat serve --gate` (behind ziggurat-gate), with "
            "--max-open-connections-per-address 0: all the idle connections come from 127.0.0.1"
        ),
    )
    parser.add_argument(
        "--settle", type=float, default=15.0, help="seconds after the load before the last RSS (15)"
    )
    parser.add_argument(
        "--first-message-timeout", type=float, default=10.0, help="the server's --first-message-timeout (10)"
    )
    parser.add_argument("--profile", metavar="FILE", help="run the loaded server under cProfile, into FILE")
    args = parser.parse_args()
    asyncio.run(_main(args))
    if args.profile:
        print_profile(args.profile)


if __name__ == "__main__":
    main()
