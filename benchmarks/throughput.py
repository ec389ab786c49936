"""Server throughput in plies/s over many concurrent Pylos matches vs raw grpc.aio msg/s.

* ziggurat: ``--matches`` (200) Pylos matches at once, each two random bots on their own
  Play streams answering immediately, driven from ``--client-procs`` client processes
  (default 1) separate from the server process (``ziggurat serve --rate 0``). A slot
  whose match ends creates and joins a new one (that set-up is counted in the server's
  work, not in the plies). Counted: plies completed in the measurement window, i.e.
  TurnStarted events received by the seat to move for ply >= 1 (move written ->
  server -> the next bot told). Also reported: ply latency under that load.
* raw: the same number of bidirectional streams (``--matches``, i.e. 200 by default) to
  a grpc.aio echo server (generic handler, raw bytes) in its own process, each with one
  ``--payload``-byte message in flight; counted: completed round trips.

Both run one after the other in this run, over a window of ``--seconds`` after
``--warmup`` seconds. Also printed: each server's CPU use in the window (1.00 = one core
busy) so you can tell a CPU-bound server from a client-bound run. Goals (issue 12): plies/s
>= 0.5 x raw round trips/s, and the server's CPU per ply <= 4 x the echo server's CPU per
round trip (both measured in this run).
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import random
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

from _baseline import (
    EchoProcess,
    ServerProcess,
    Summary,
    cpu_seconds,
    load_average,
    new_pylos_match,
    print_profile,
    print_table,
    raise_nofile,
    raw_pingpong_throughput,
    verdict,
)

from ziggurat.v1 import match_pb2
from ziggurat_client import ZigguratClient
from ziggurat_client.bot import Turn

GOAL_RATIO = 0.5
GOAL_CPU_RATIO = 4.0


async def _drive(
    address: str, matches: int, start_at: float, stop_at: float, seed: int
) -> tuple[int, list[float]]:
    rng = random.Random(seed)
    done = 0
    latencies: list[float] = []

    async def one_match(client: ZigguratClient) -> None:
        nonlocal done
        handles = await new_pylos_match(client)
        sent: dict[int, float] = {}

        def make(seat: int):  # type: ignore[no-untyped-def]
            def choose(turn: Turn) -> str:
                move = rng.choice(turn.legal_moves)
                sent[turn.ply] = time.perf_counter()
                return move

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

    async with ZigguratClient(address) as client:
        tasks = [asyncio.create_task(slot(client)) for _ in range(matches)]
        await asyncio.sleep(max(0.0, stop_at - time.time()))
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return done, latencies


async def _with_cpu(
    work: Awaitable[tuple[int, list[float]]], start_at: float, stop_at: float
) -> tuple[int, list[float], float]:
    """Run ``work`` and measure this process's CPU seconds within the window."""

    async def sample() -> float:
        await asyncio.sleep(max(0.0, start_at - time.time()))
        before = time.process_time()
        await asyncio.sleep(max(0.0, stop_at - time.time()))
        return time.process_time() - before

    (count, latencies), cpu = await asyncio.gather(work, sample())
    return count, latencies, cpu


def drive_matches(
    address: str, matches: int, start_at: float, stop_at: float, seed: int
) -> tuple[int, list[float], float]:
    """Worker process: play ``matches`` concurrent matches; plies done in the window, latencies, CPU s."""
    raise_nofile()
    return asyncio.run(_with_cpu(_drive(address, matches, start_at, stop_at, seed), start_at, stop_at))


def drive_raw(
    address: str, streams: int, start_at: float, stop_at: float, payload: int
) -> tuple[int, list[float], float]:
    """Worker process: ``streams`` concurrent ping-pong streams to the echo server."""
    raise_nofile()
    work = raw_pingpong_throughput(address, streams, start_at, stop_at, bytes(payload))
    return asyncio.run(_with_cpu(work, start_at, stop_at))


def run_workers(
    pool: ProcessPoolExecutor,
    fn: Callable[..., tuple[int, list[float], float]],
    address: str,
    total: int,
    procs: int,
    window: tuple[float, float],
    extra: int,
) -> tuple[int, list[float], float]:
    """Split ``total`` over ``procs`` workers; returns (count, latencies, client CPU in the window)."""
    start_at, stop_at = window
    shares = [total // procs + (1 if i < total % procs else 0) for i in range(procs)]
    futures = [
        pool.submit(fn, address, share, start_at, stop_at, extra + i) for i, share in enumerate(shares)
    ]
    count = 0
    cpu = 0.0
    latencies: list[float] = []
    for future in futures:
        n, lat, used = future.result()
        count += n
        latencies += lat
        cpu += used
    return count, latencies, cpu / (stop_at - start_at)


def cpu_in_window(pid: int, start_at: float, stop_at: float) -> float:
    """Sample a process's CPU seconds at the window edges (call right at start)."""
    time.sleep(max(0.0, start_at - time.time()))
    before = cpu_seconds(pid)
    time.sleep(max(0.0, stop_at - time.time()))
    return (cpu_seconds(pid) - before) / (stop_at - start_at)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--matches", type=int, default=200, help="concurrent matches = raw streams (200)")
    parser.add_argument("--seconds", type=float, default=20.0, help="measurement window per side (20)")
    parser.add_argument("--warmup", type=float, default=5.0, help="seconds before the window opens (5)")
    parser.add_argument("--client-procs", type=int, default=1, help="client processes per side (1)")
    parser.add_argument("--payload", type=int, default=64, help="raw ping-pong message size in bytes (64)")
    parser.add_argument("--log-level", default="info", help="server --log-level (default info, as deployed)")
    parser.add_argument("--durable", action="store_true", help="serve with --durable (an fsync per commit)")
    parser.add_argument(
        "--profile", metavar="FILE", help="run the server under cProfile, write FILE, print top"
    )
    args = parser.parse_args()
    raise_nofile()
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(args.client_procs, mp_context=ctx) as pool:
        # Make the workers exist before timing starts.
        list(pool.map(time.sleep, [0.1] * args.client_procs))
        with EchoProcess() as echo:
            print(f"raw: {args.matches} streams to echo server pid {echo.pid}; {load_average()}", flush=True)
            start_at = time.time() + 1.0 + args.warmup

            with ThreadPoolExecutor(1) as sampler:
                window = (start_at, start_at + args.seconds)
                raw_cpu_future = sampler.submit(cpu_in_window, echo.pid, *window)
                raw_count, raw_rtts, raw_client_cpu = run_workers(
                    pool, drive_raw, echo.address, args.matches, args.client_procs, window, args.payload
                )
                raw_cpu = raw_cpu_future.result()
            raw_rate = raw_count / args.seconds
        extra = ["--durable"] if args.durable else []
        with ServerProcess(profile=args.profile, log_level=args.log_level, extra=extra) as server:
            print(f"ziggurat: {args.matches} matches, server pid {server.pid}; {load_average()}", flush=True)
            start_at = time.time() + 1.0 + args.warmup

            with ThreadPoolExecutor(1) as sampler:
                window = (start_at, start_at + args.seconds)
                cpu_future = sampler.submit(cpu_in_window, server.pid, *window)
                plies, latencies, client_cpu = run_workers(
                    pool, drive_matches, server.address, args.matches, args.client_procs, window, 1
                )
                server_cpu = cpu_future.result()
            ply_rate = plies / args.seconds
            server.stop()
    lat, rtt = Summary.of(latencies), Summary.of(raw_rtts)
    print()
    print_table(
        ["side", "streams", "per second", "server CPU", "client CPU", "p50 ms", "p99 ms"],
        [
            ["ziggurat plies", 2 * args.matches, ply_rate, server_cpu, client_cpu, lat.p50, lat.p99],
            [
                f"raw round trips ({args.payload} B)",
                args.matches,
                raw_rate,
                raw_cpu,
                raw_client_cpu,
                rtt.p50,
                rtt.p99,
            ],
        ],
    )
    ratio = ply_rate / raw_rate
    per_ply, per_trip = server_cpu / ply_rate * 1e6, raw_cpu / raw_rate * 1e6
    cpu_ratio = per_ply / per_trip
    print(
        f"\nplies/s over raw msg/s: {ratio:.3f}x; server CPU per ply {per_ply:,.0f} us, "
        f"echo CPU per round trip {per_trip:,.0f} us ({cpu_ratio:.1f}x)"
    )
    print(f"{load_average()} at the end")
    print(f"goal: plies/s >= {GOAL_RATIO}x raw -> {ratio:.3f}x: {verdict(ratio >= GOAL_RATIO)}")
    print(
        f"goal: server CPU per ply <= {GOAL_CPU_RATIO:.0f}x echo CPU per round trip -> {cpu_ratio:.1f}x: "
        f"{verdict(cpu_ratio <= GOAL_CPU_RATIO)}"
    )
    if args.profile:
        print_profile(args.profile)


if __name__ == "__main__":
    main()
