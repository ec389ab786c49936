"""Soak: 2,000 live Pylos matches in one server process for 10 minutes (issue 12).

A ``ziggurat serve`` subprocess is loaded by ``--procs`` client processes that keep
``--matches`` matches live (the bots of :mod:`capacity`: both seats on a Play stream, a
random 0.5-2 s think before each move, a match that ends replaced by a new one) for
``--minutes``. The harness itself only reads: the server's RSS every ``--every`` seconds and,
from the server's own ``ListMatches``, every active match's ply.

Printed: the server's RSS once every match is live and settled (the start), every
``--every`` seconds, and at the end (goal: the end within 10 % of the start); the stuck-match
check (goal: every match that was active a minute before the end has either ended or moved
since); the load average beside the figures (2 cores shared: read the figures with it).
Beside the start and end RSS: the matches active then (the server's memory follows them, and
client processes short of CPU keep fewer of the ``--matches`` slots playing) and the resident
memory by kind of mapping (:func:`idle_soak.memory_map`: the main malloc heap, anonymous
mappings with Python's object arenas and the other malloc arenas, files); and the RSS above
the idle server's (after one warm-up match) per active match, at the start and the end: where
the RSS moves only because the clients keep more or fewer matches playing, this stays put.

    python benchmarks/soak.py                            # 2,000 matches, 10 minutes
    python benchmarks/soak.py --matches 200 --minutes 2  # a quick look
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import time
from typing import Any

from _baseline import ServerProcess, cpu_seconds, print_table, raise_nofile, rss_kb, verdict
from capacity import warm_up, worker
from idle_soak import memory_map

from ziggurat.v1 import match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat_client import ZigguratClient

GOAL_RSS_RETURN = 0.10
STUCK_WINDOW_S = 60.0


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


async def active_plies(address: str) -> dict[str, int]:
    """Every active match's ply, as the server lists them."""
    plies: dict[str, int] = {}
    async with ZigguratClient(address) as client:
        token = ""
        while True:
            page = await client.stub.ListMatches(
                spb.ListMatchesRequest(
                    status=match_pb2.MATCH_STATUS_ACTIVE, page_size=1000, page_token=token
                ),
                timeout=60,
            )
            plies.update((m.match_id, m.view.ply) for m in page.matches)
            token = page.next_page_token
            if not token:
                return plies


async def finished_or_moved(
    address: str, before: dict[str, int]
) -> tuple[int, int, list[str], dict[str, int]]:
    """(ended, moved, stuck ids, the active matches now) of the matches in ``before`` (match id
    -> ply a minute ago)."""
    now = await active_plies(address)
    ended = moved = 0
    stuck: list[str] = []
    for match_id, ply in before.items():
        if match_id not in now:
            ended += 1
        elif now[match_id] > ply:
            moved += 1
        else:
            stuck.append(match_id)
    return ended, moved, stuck, now


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--matches", type=int, default=2000, help="live matches (2000)")
    parser.add_argument("--minutes", type=float, default=10.0, help="duration of the soak (10)")
    parser.add_argument("--procs", type=int, default=4, help="client processes (4)")
    parser.add_argument("--min-delay", type=float, default=0.5, help="bot think time, lower bound (0.5 s)")
    parser.add_argument("--max-delay", type=float, default=2.0, help="bot think time, upper bound (2.0 s)")
    parser.add_argument(
        "--settle", type=float, default=30.0, help="seconds after all are live before the start RSS (30)"
    )
    parser.add_argument("--every", type=float, default=60.0, help="seconds between RSS readings (60)")
    args = parser.parse_args()
    raise_nofile()
    ctx = multiprocessing.get_context("spawn")
    results: Any = ctx.Queue()
    stop = ctx.Event()
    with ServerProcess(log_level="info") as server:
        print(f"server pid {server.pid} at {server.address}; {load()}", flush=True)
        asyncio.run(warm_up(server.address))
        time.sleep(0.5)
        rss_idle = rss_kb(server.pid)
        shares = [args.matches // args.procs + (i < args.matches % args.procs) for i in range(args.procs)]
        procs = [
            ctx.Process(
                target=worker,
                args=(server.address, share, (args.min_delay, args.max_delay), i, results, stop),
                daemon=True,
            )
            for i, share in enumerate(shares)
        ]
        began = time.time()
        for proc in procs:
            proc.start()
        for _ in procs:
            kind, _ = results.get(timeout=900)
            assert kind == "ready", kind
        print(
            f"{args.matches:,} matches live after {time.time() - began:.0f} s; settling {args.settle:g} s",
            flush=True,
        )
        time.sleep(args.settle)
        start = time.time()
        end = start + args.minutes * 60
        rss_start = rss_kb(server.pid)
        map_start = memory_map(server.pid)
        cpu_start = cpu_seconds(server.pid)
        active_start = len(asyncio.run(active_plies(server.address)))
        rows: list[list[object]] = [["0:00", f"{rss_start / 1024:.1f}", "+0.0%", load()]]
        before: dict[str, int] | None = None
        next_reading = start + args.every
        while (now := time.time()) < end:
            if before is None and now >= end - STUCK_WINDOW_S:
                before = asyncio.run(active_plies(server.address))
            time.sleep(max(0.0, min(1.0, end - now)))
            if time.time() >= next_reading:
                rss = rss_kb(server.pid)
                at = time.time() - start
                rows.append(
                    [
                        f"{int(at // 60)}:{int(at % 60):02d}",
                        f"{rss / 1024:.1f}",
                        f"{rss / rss_start - 1:+.1%}",
                        load(),
                    ]
                )
                print(f"  {rows[-1][0]}  RSS {rows[-1][1]} MB ({rows[-1][2]}); {load()}", flush=True)
                next_reading += args.every
        assert before is not None
        ended, moved, stuck, active_end = asyncio.run(finished_or_moved(server.address, before))
        rss_end = rss_kb(server.pid)
        map_end = memory_map(server.pid)
        cpu = (cpu_seconds(server.pid) - cpu_start) / (time.time() - start)
        at_end = load()
        stop.set()
        replaced = 0
        for _ in procs:
            kind, payload = results.get(timeout=300)
            replaced += payload[1]
        for proc in procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
    print()
    print(
        f"soak: {args.matches:,} live matches ({2 * args.matches:,} Play streams) for {args.minutes:g} min, "
        f"bots think {args.min_delay:g}-{args.max_delay:g} s, {args.procs} client processes; "
        f"{replaced:,} matches finished and replaced; server CPU {cpu:.2f} core"
    )
    print_table(["time", "server RSS MB", "vs start", "load"], rows)
    back = rss_end / rss_start - 1
    print(f"server RSS: start {rss_start / 1024:.1f} MB, end {rss_end / 1024:.1f} MB ({back:+.1%}); {at_end}")
    print(
        f"matches active: {active_start:,} at the start, {len(active_end):,} at the end (of {args.matches:,})"
    )
    per_start = (rss_start - rss_idle) / max(1, active_start)
    per_end = (rss_end - rss_idle) / max(1, len(active_end))
    print(
        f"server RSS above the idle server's ({rss_idle / 1024:.1f} MB) per active match: "
        f"start {per_start:.1f} KiB, end {per_end:.1f} KiB ({per_end / per_start - 1:+.1%})"
    )
    for label, kinds in (("start", map_start), ("end", map_end)):
        print(
            f"server memory at the {label} by mapping (MB): "
            + ", ".join(f"{k} {v / 1024:.1f}" for k, v in kinds.items())
        )
    print(
        f"matches active {STUCK_WINDOW_S:.0f} s before the end: {len(before):,}: {ended:,} ended since, "
        f"{moved:,} moved, {len(stuck):,} stuck{(' (e.g. ' + ', '.join(stuck[:5]) + ')') if stuck else ''}"
    )
    print(
        f"goal: server RSS at the end within {GOAL_RSS_RETURN:.0%} of the start: "
        f"{verdict(back <= GOAL_RSS_RETURN)}"
    )
    print(
        f"goal: no stuck match (each ended or moved in the last minute): "
        f"{verdict(not stuck and bool(before))}"
    )


if __name__ == "__main__":
    main()
