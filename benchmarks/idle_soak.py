"""Idle soak: idle connections and silent streams opened and dropped in a loop, for a while.

A ``ziggurat serve`` process (its default limits, except the per-address caps: every client
here shares the address 127.0.0.1, so all the load is really held) is loaded by ``--procs``
client processes that, round after round until ``--seconds`` have passed, open
``--connections`` idle TCP connections (channels that connect and make no call) and
``--streams`` silent ``Play`` streams (opened, never a first message) over
``--stream-channels`` channels, hold them ``--hold`` seconds, and drop them all. Meanwhile a
healthy client in this process calls ``GetMatch`` on the loaded server and, in turn, on an
unloaded twin server (another ``ziggurat serve`` process): the twin is the in-run baseline,
what the same call costs on this machine at the same moments (2 cores shared with the
loaders and whatever else runs), so the difference is the load's effect on the server.

Printed: the server's RSS before the load, its peak, and after the load has stopped and
the server settled (goal: back within 10 % of the start), and its resident memory by kind
of mapping (main malloc heap, anonymous: other malloc arenas and Python's, files); the
healthy client's GetMatch latency for every 10-second window and overall, beside the
twin's (goal: p99 under 10 ms), and how late the healthy client's own pauses woke up (a
client starved of CPU by the loaders on a 2-core machine delays both servers' figures);
how the silent streams ended; the load average.
``--profile FILE`` runs the loaded server under cProfile and prints the top of it.

    python benchmarks/idle_soak.py                       # 10,000 / 10,000 for 5 minutes
    python benchmarks/idle_soak.py --connections 2000 --streams 2000 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import time
from collections import Counter
from typing import Any

import grpc
from _baseline import (
    ServerProcess,
    Summary,
    cpu_seconds,
    print_profile,
    print_table,
    raise_nofile,
    rss_kb,
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
        results.put((rounds, dict(total)))

    asyncio.run(run())


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


async def _main(args: argparse.Namespace) -> None:
    raise_nofile()
    extra = ["--first-message-timeout", str(args.first_message_timeout)]
    with (
        ServerProcess(log_level="warning", extra=extra, profile=args.profile) as server,
        ServerProcess(log_level="warning", extra=extra) as twin,
    ):
        targets = [
            (server.address, await _new_match(server.address)),
            (twin.address, await _new_match(twin.address)),
        ]
        await asyncio.sleep(1)
        load_start = os.getloadavg()
        rss_start = rss_kb(server.pid)
        map_start = memory_map(server.pid)
        cpu_start = cpu_seconds(server.pid)
        began = time.time()
        stop_at = began + args.seconds
        results: Any = multiprocessing.get_context("spawn").Queue()
        loaders = [
            multiprocessing.get_context("spawn").Process(
                target=_loader, args=(server.address, args, args.procs, stop_at, results)
            )
            for _ in range(args.procs)
        ]
        for loader in loaders:
            loader.start()
        peak = rss_start

        async def watch_rss() -> None:
            nonlocal peak
            while time.time() < stop_at:
                peak = max(peak, rss_kb(server.pid))
                await asyncio.sleep(1)

        lags: list[float] = []
        (samples, twin_samples), _ = await asyncio.gather(_healthy(targets, stop_at, lags), watch_rss())
        load_end = os.getloadavg()
        finished = [await asyncio.to_thread(results.get, True, args.seconds + 120) for _ in loaders]
        for loader in loaders:
            loader.join(30)
        await asyncio.sleep(args.settle)
        rss_end = rss_kb(server.pid)
        map_end = memory_map(server.pid)
        cpu = cpu_seconds(server.pid) - cpu_start

    rounds = sum(r for r, _ in finished)
    ended: Counter[str] = Counter()
    for _, counts in finished:
        ended.update(counts)
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
    print(
        f"idle soak: {args.connections:,} idle connections + {args.streams:,} silent Play streams per round, "
        f"{args.procs} client processes, {rounds} rounds in {args.seconds:.0f} s (hold {args.hold:g} s); "
        f"server first-message timeout {args.first_message_timeout:g} s, server CPU {cpu:.1f} s"
    )
    print(f"silent streams ended: {dict(ended)}")
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
    back = (rss_end - rss_start) / rss_start
    print(
        f"server RSS: start {rss_start / 1024:.1f} MB, peak {peak / 1024:.1f} MB, "
        f"end (after {args.settle:g} s settle) {rss_end / 1024:.1f} MB ({back:+.1%})"
    )
    print(f"server resident MB by mapping: start {_mb(map_start)}; end {_mb(map_end)}")
    print(f"goal: healthy GetMatch p99 under {GOAL_P99_MS:g} ms: {verdict(overall.p99 < GOAL_P99_MS)}")
    print(
        f"goal: server RSS back within {GOAL_RSS_RETURN:.0%} of the start: {verdict(back <= GOAL_RSS_RETURN)}"
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
    parser.add_argument("--procs", type=int, default=2, help="client processes (2)")
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
