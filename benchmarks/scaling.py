"""Scaling: the throughput and capacity workloads on ``ziggurat serve --workers N``, N=1 and N=2.

For each N (``--workers``, default ``1,2``) a fresh server (``ziggurat serve --workers N --rate
0``, a temporary database) serves two workloads, one after the other, through its ONE public
address:

* throughput (as ``throughput.py``): ``--matches`` (200) Pylos matches at once, two random bots
  each answering at once; counted: plies completed in the window (move sent -> the next seat
  told), plies/s, server CPU per ply;
* capacity (as ``capacity.py``): ``--live`` (1,000) matches whose bots think 0.5-2 s;
  reported: ply latency p50/p99 (think time excluded) and the server's CPU.

The bots run in ``--client-procs`` (2) client processes, each with ``--connections`` (8) TCP
connections of its own (``grpc.use_local_subchannel_pool``): SO_REUSEPORT spreads connections,
not calls, over the workers, so one connection would reach one worker only. A match is
created on the worker its connection reached and then played there (the client follows
``Match.server_address``). The table shows how the matches fell on the workers.

Server CPU is the sum over the supervisor and its workers (1.00 = one core busy), "busiest proc"
the most any one of them used: the capacity workload's demand is fixed by the bots' think
time, so there the gain shows as less load on each core rather than as more plies/s. The load
average of the machine is printed before and after each run: on a 2-core machine the client
processes compete with the workers for the same cores, so the scaling factor printed at the
end (plies/s at N=2 over N=1) is a floor of what a host with spare cores would show.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import sqlite3
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from _baseline import (
    ServerProcess,
    Summary,
    cpu_seconds,
    new_pylos_match,
    print_table,
    raise_nofile,
)

from ziggurat.hosting.shards import shard_path
from ziggurat.v1 import match_pb2
from ziggurat_client import ZigguratClient
from ziggurat_client.bot import Turn

OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]


async def _drive(
    address: str,
    matches: int,
    connections: int,
    delays: tuple[float, float],
    window: tuple[float, float],
    seed: int,
) -> tuple[int, list[float]]:
    """Keep ``matches`` matches going over ``connections`` connections; plies and latencies (ms)
    in the window."""
    rng = random.Random(seed)
    start_at, stop_at = window
    done = 0
    latencies: list[float] = []

    async def one_match(client: ZigguratClient) -> None:
        nonlocal done
        handles = await new_pylos_match(client)
        sent: dict[int, float] = {}

        def make(seat: int):  # type: ignore[no-untyped-def]
            async def choose(turn: Turn) -> str:
                if delays[1] > 0:
                    await asyncio.sleep(rng.uniform(*delays))
                sent[turn.ply] = time.perf_counter()
                return rng.choice(turn.legal_moves)

            def on_event(event: match_pb2.Event) -> None:
                nonlocal done
                if event.WhichOneof("kind") == "turn_started" and event.turn_started.seat == seat:
                    start = sent.get(event.turn_started.ply - 1)
                    if start is not None and start_at <= time.time() < stop_at:
                        done += 1
                        latencies.append((time.perf_counter() - start) * 1000)

            return choose, on_event

        bots = [make(h.seat) for h in handles]
        await asyncio.gather(
            *(client.play(h, c, on_event=e) for h, (c, e) in zip(handles, bots, strict=True))
        )

    async def slot(client: ZigguratClient) -> None:
        while time.time() < stop_at:
            await one_match(client)

    clients = [ZigguratClient(address, options=OWN_CONNECTION) for _ in range(connections)]
    try:
        tasks = [asyncio.create_task(slot(clients[i % connections])) for i in range(matches)]
        await asyncio.sleep(max(0.0, stop_at - time.time()))
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    finally:
        for client in clients:
            await client.close()
    return done, latencies


def drive(
    address: str,
    matches: int,
    connections: int,
    delays: tuple[float, float],
    window: tuple[float, float],
    seed: int,
) -> tuple[int, list[float]]:
    """Client process entry point."""
    raise_nofile()
    return asyncio.run(_drive(address, matches, connections, delays, window, seed))


@dataclass
class Run:
    """One workload on one server."""

    workers: int
    workload: str
    plies_per_s: float
    latency: Summary
    server_cpu: float
    busiest: float
    per_worker: list[int]
    load_before: float
    load_after: float

    @property
    def cpu_us_per_ply(self) -> float:
        return self.server_cpu / self.plies_per_s * 1e6 if self.plies_per_s else float("nan")


def _server_pids(server: ServerProcess, workers: int) -> list[int]:
    """The supervisor (or the single server) and its workers, from the shards' owner locks."""
    pids = [server.pid]
    if workers > 1:
        for index in range(workers):
            text = Path(f"{shard_path(server.tmp / 'bench.db', index)}.lock").read_text()
            pids.append(int(text.split()[1].rstrip(":")))
    return pids


def _matches_per_shard(server: ServerProcess, workers: int) -> list[int]:
    counts = []
    for index in range(workers):
        path = shard_path(server.tmp / "bench.db", index)
        with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as db:
            counts.append(int(db.execute("SELECT COUNT(*) FROM matches").fetchone()[0]))
    return counts


def run_one(pool: ProcessPoolExecutor, args: argparse.Namespace, workers: int, workload: str) -> Run:
    """Start a server with ``workers`` workers, run the workload through its public address."""
    matches = args.matches if workload == "throughput" else args.live
    delays = (0.0, 0.0) if workload == "throughput" else (0.5, 2.0)
    warmup = args.warmup if workload == "throughput" else args.warmup + matches / 100
    extra = ["--workers", str(workers), "--max-matches", str(4 * matches + 100)]
    with ServerProcess(log_level="warning", extra=extra) as server:
        load_before = os.getloadavg()[0]
        pids = _server_pids(server, workers)
        start_at = time.time() + 1.0 + warmup
        window = (start_at, start_at + args.seconds)
        shares = [
            matches // args.client_procs + (i < matches % args.client_procs) for i in range(args.client_procs)
        ]
        futures = [
            pool.submit(drive, server.address, share, args.connections, delays, window, 100 * workers + i)
            for i, share in enumerate(shares)
        ]
        time.sleep(max(0.0, start_at - time.time()))
        before = [cpu_seconds(pid) for pid in pids]
        time.sleep(max(0.0, window[1] - time.time()))
        used = [(cpu_seconds(pid) - b) / args.seconds for pid, b in zip(pids, before, strict=True)]
        server_cpu = sum(used)
        plies = 0
        latencies: list[float] = []
        for future in futures:
            count, lat = future.result()
            plies += count
            latencies += lat
        per_worker = _matches_per_shard(server, workers)
        load_after = os.getloadavg()[0]
    return Run(
        workers,
        workload,
        plies / args.seconds,
        Summary.of(latencies),
        server_cpu,
        max(used),
        per_worker,
        load_before,
        load_after,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", default="1,2", help="worker counts to compare (default 1,2)")
    parser.add_argument(
        "--workloads", default="throughput,capacity", help="throughput,capacity (default both)"
    )
    parser.add_argument("--matches", type=int, default=200, help="throughput: concurrent matches (200)")
    parser.add_argument("--live", type=int, default=1000, help="capacity: live slow matches (1000)")
    parser.add_argument("--seconds", type=float, default=15.0, help="measurement window per run (15)")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds before the window opens (5)")
    parser.add_argument("--client-procs", type=int, default=2, help="client processes (2)")
    parser.add_argument("--connections", type=int, default=8, help="TCP connections per client process (8)")
    args = parser.parse_args()
    raise_nofile()
    counts = [int(n) for n in args.workers.split(",")]
    workloads = args.workloads.split(",")
    print(f"host: {os.cpu_count()} cores; load average now {os.getloadavg()[0]:.2f}", flush=True)
    runs: list[Run] = []
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.client_procs, mp_context=ctx) as pool:
        list(pool.map(time.sleep, [0.1] * args.client_procs))
        for workload in workloads:
            for workers in counts:
                print(f"{workload}: --workers {workers} ...", flush=True)
                runs.append(run_one(pool, args, workers, workload))
    print()
    print_table(
        [
            "workload",
            "N",
            "plies/s",
            "p50 ms",
            "p99 ms",
            "server CPU",
            "busiest proc",
            "CPU us/ply",
            "matches per worker",
            "load 1m before/after",
        ],
        [
            [
                r.workload,
                r.workers,
                r.plies_per_s,
                r.latency.p50,
                r.latency.p99,
                r.server_cpu,
                r.busiest,
                r.cpu_us_per_ply,
                "/".join(str(n) for n in r.per_worker),
                f"{r.load_before:.2f}/{r.load_after:.2f}",
            ]
            for r in runs
        ],
    )
    print()
    for workload in workloads:
        by_n = {r.workers: r for r in runs if r.workload == workload}
        base = by_n.get(1)
        for n, run in sorted(by_n.items()):
            if base is None or n == 1:
                continue
            factor = run.plies_per_s / base.plies_per_s
            print(
                f"scaling factor ({workload}, N={n} over N=1): plies/s {factor:.2f}x, "
                f"server CPU {run.server_cpu / base.server_cpu:.2f}x, "
                f"busiest process {base.busiest:.2f} -> {run.busiest:.2f} core, "
                f"p99 {base.latency.p99:.1f} -> {run.latency.p99:.1f} ms"
            )


if __name__ == "__main__":
    main()
