"""Capacity: many live Pylos matches in ONE server process, all progressing slowly.

``--matches`` (2,000) matches are created and joined, then both seats of each open a
Play stream (4,000+ streams); each bot waits a random ``--min-delay``..``--max-delay``
seconds (0.5-2 s) before answering its turn with a random legal move. A match that ends
is replaced by a new one, so the number of live matches stays constant. The bots are
spread over ``--procs`` client processes (both seats of a match in the same process).

Reported:

* ply latency in the measurement window (``--seconds`` after every match is live and
  ``--settle`` seconds more): bot A's write of its move -> bot B's receipt of its
  TurnStarted (one clock per client process; the bots' think time is not included);
* resident memory per match: (server VmRSS with every match live - VmRSS of the idle
  server after one warm-up match) / matches, read from /proc/PID/status;
* server and client CPU use over the window (1.00 = one core) and the ply rate achieved:
  on a 2-core machine the client processes compete with the server, so read the
  latency together with these.

Goals (issue 12): p99 ply latency < 50 ms with the server under half a core, <= 100 KiB
of server memory per live match.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import multiprocessing
import queue
import random
import time
from multiprocessing.synchronize import Event as MpEvent
from typing import Any

from _baseline import (
    ServerProcess,
    Summary,
    cpu_seconds,
    load_average,
    new_pylos_match,
    print_table,
    raise_nofile,
    rss_kb,
    verdict,
)

from ziggurat.v1 import match_pb2
from ziggurat_client import ZigguratClient
from ziggurat_client.bot import Turn

GOAL_P99_MS = 50.0
GOAL_KB_PER_MATCH = 100.0
GOAL_SERVER_CORES = 0.5


async def _worker(
    address: str, matches: int, delays: tuple[float, float], seed: int, results: Any, stop: MpEvent
) -> None:
    rng = random.Random(seed)
    samples: list[tuple[float, float]] = []  # (time.time() at receipt, latency ms)
    setup = asyncio.Semaphore(32)
    ready = asyncio.Event()
    created = 0
    ended = 0

    async def one_match(client: ZigguratClient) -> None:
        nonlocal created, ended
        async with setup:
            handles = await new_pylos_match(client)
        sent: dict[int, float] = {}

        def make(seat: int):  # type: ignore[no-untyped-def]
            async def choose(turn: Turn) -> str:
                await asyncio.sleep(rng.uniform(*delays))
                move = rng.choice(turn.legal_moves)
                sent[turn.ply] = time.perf_counter()
                return move

            def on_event(event: match_pb2.Event) -> None:
                nonlocal created
                if event.WhichOneof("kind") == "turn_started":
                    if event.turn_started.ply == 0 and seat == 1:
                        created += 1  # both streams are open and the game has begun
                        if created == matches:
                            ready.set()
                    if event.turn_started.seat == seat:
                        start = sent.get(event.turn_started.ply - 1)
                        if start is not None:
                            samples.append((time.time(), (time.perf_counter() - start) * 1000))

            return choose, on_event

        bots = [make(h.seat) for h in handles]
        await asyncio.gather(
            *(client.play(h, c, on_event=e) for h, (c, e) in zip(handles, bots, strict=True))
        )
        ended += 1

    async def slot(client: ZigguratClient) -> None:
        while True:
            await one_match(client)

    async with ZigguratClient(address) as client:
        tasks = [asyncio.create_task(slot(client)) for _ in range(matches)]
        await ready.wait()
        results.put(("ready", 0))
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, stop.wait)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    results.put(("done", (samples, ended)))


def worker(
    address: str, matches: int, delays: tuple[float, float], seed: int, results: Any, stop: MpEvent
) -> None:
    """Client process: keep ``matches`` slow matches live until ``stop`` is set.

    The cyclic GC is tuned as the server tunes it, so that the clients' own collection
    pauses (a thousand streams per process) do not show up as server latency.
    """
    raise_nofile()
    gc.freeze()
    gc.set_threshold(50_000, *gc.get_threshold()[1:])
    asyncio.run(_worker(address, matches, delays, seed, results, stop))


async def warm_up(address: str) -> None:
    """Play one quick match so the idle RSS includes every code path a match loads."""
    rng = random.Random(0)
    async with ZigguratClient(address) as client:
        handles = await new_pylos_match(client)
        await asyncio.gather(*(client.play(h, lambda t: rng.choice(t.legal_moves)) for h in handles))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--matches", type=int, default=2000, help="live matches (default 2000)")
    parser.add_argument("--procs", type=int, default=4, help="client processes (default 4)")
    parser.add_argument("--min-delay", type=float, default=0.5, help="bot think time, lower bound (0.5 s)")
    parser.add_argument("--max-delay", type=float, default=2.0, help="bot think time, upper bound (2.0 s)")
    parser.add_argument(
        "--settle", type=float, default=5.0, help="seconds after all are live before timing (5)"
    )
    parser.add_argument("--seconds", type=float, default=30.0, help="measurement window (default 30)")
    parser.add_argument("--log-level", default="info", help="server --log-level (default info, as deployed)")
    args = parser.parse_args()
    raise_nofile()
    ctx = multiprocessing.get_context("spawn")
    results: Any = ctx.Queue()
    stop = ctx.Event()
    with ServerProcess(log_level=args.log_level) as server:
        print(f"server pid {server.pid} at {server.address}; {load_average()}", flush=True)
        rss_start = rss_kb(server.pid)
        asyncio.run(warm_up(server.address))
        time.sleep(0.5)
        rss_idle = rss_kb(server.pid)
        started = time.time()
        shares = [
            args.matches // args.procs + (1 if i < args.matches % args.procs else 0)
            for i in range(args.procs)
        ]
        procs = [
            ctx.Process(
                target=worker,
                args=(server.address, share, (args.min_delay, args.max_delay), i, results, stop),
                daemon=True,
            )
            for i, share in enumerate(shares)
        ]
        for proc in procs:
            proc.start()
        for _ in procs:
            kind, _payload = results.get(timeout=600)
            assert kind == "ready", kind
        live_after = time.time() - started
        print(
            f"{args.matches} matches live ({2 * args.matches} Play streams) after {live_after:.1f} s",
            flush=True,
        )
        time.sleep(args.settle)
        rss_live = rss_kb(server.pid)
        window_start = time.time()
        cpu_before = cpu_seconds(server.pid)
        clients_before = sum(cpu_seconds(p.pid) for p in procs if p.pid is not None)
        rss_samples = [rss_live]
        while time.time() < window_start + args.seconds:
            time.sleep(min(1.0, window_start + args.seconds - time.time()))
            rss_samples.append(rss_kb(server.pid))
        window_stop = time.time()
        server_cpu = (cpu_seconds(server.pid) - cpu_before) / (window_stop - window_start)
        clients_cpu = (sum(cpu_seconds(p.pid) for p in procs if p.pid is not None) - clients_before) / (
            window_stop - window_start
        )
        stop.set()
        latencies: list[float] = []
        replaced = 0
        for _ in procs:
            try:
                kind, payload = results.get(timeout=120)
            except queue.Empty:
                break
            samples, ended = payload
            replaced += ended
            latencies += [lat for at, lat in samples if window_start <= at < window_stop]
        for proc in procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
        server.stop()
    lat = Summary.of(latencies)
    per_match_kb = (rss_live - rss_idle) / args.matches
    peak_kb = (max(rss_samples) - rss_idle) / args.matches
    print()
    print_table(
        ["figure", "value"],
        [
            ["live matches / Play streams", f"{args.matches:,} / {2 * args.matches:,}"],
            ["bot think time (s)", f"{args.min_delay}-{args.max_delay}"],
            ["plies timed in window", lat.n],
            ["plies/s", lat.n / (window_stop - window_start)],
            ["matches finished and replaced", replaced],
            ["ply latency p50 (ms)", lat.p50],
            ["ply latency p90 (ms)", lat.p90],
            ["ply latency p99 (ms)", lat.p99],
            ["ply latency max (ms)", lat.max],
            ["server CPU in window (cores)", server_cpu],
            [f"client CPU in window (cores, {args.procs} procs)", clients_cpu],
            ["server RSS fresh / idle (MiB)", f"{rss_start / 1024:.1f} / {rss_idle / 1024:.1f}"],
            ["server RSS all live / peak (MiB)", f"{rss_live / 1024:.1f} / {max(rss_samples) / 1024:.1f}"],
            ["RSS per live match (KiB)", per_match_kb],
            ["RSS per match at peak of window (KiB)", peak_kb],
        ],
    )
    print(f"\n{load_average()} at the end")
    print(
        f"goal: p99 ply latency < {GOAL_P99_MS:.0f} ms with the server under {GOAL_SERVER_CORES} core -> "
        f"{lat.p99:.1f} ms at {server_cpu:.2f} core: "
        f"{verdict(lat.p99 < GOAL_P99_MS and server_cpu < GOAL_SERVER_CORES)}"
    )
    print(
        f"goal: <= {GOAL_KB_PER_MATCH:.0f} KiB per match -> {per_match_kb:.1f} KiB: "
        f"{verdict(per_match_kb <= GOAL_KB_PER_MATCH)}"
    )


if __name__ == "__main__":
    main()
