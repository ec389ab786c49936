"""Fan-out: delivery delay of every move to many spectators of one match.

``--spectators`` (1,000) WatchMatch streams, split over ``--procs`` client processes,
watch one Pylos match that two random bots (in this process, on Play streams) play,
each bot thinking ``--think`` seconds before it moves. ``--games`` matches are played
one after another (spectators re-watch each new match before its first move).

What is timed, all on one clock (time.time(), the same in every process of the machine):
from a bot's ``write`` of its move to the receipt of the MovePlayed event for that move
by each spectator. Reported per delivery (one move x one spectator) and per move (the
slowest spectator of that move, i.e. "delivered to all"); also the server-side part:
the event's ``time_ms`` (stamped at commit) -> receipt. Goal (issue 12): p99 delivery < 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import random
import time
from collections import defaultdict
from typing import Any

import grpc
from _baseline import (
    ServerProcess,
    Summary,
    cpu_seconds,
    load_average,
    new_pylos_match,
    print_table,
    raise_nofile,
    verdict,
)

from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as sgrpc
from ziggurat_client import ZigguratClient
from ziggurat_client.bot import Turn

GOAL_P99_MS = 50.0
Receipt = tuple[int, float, float]  # (ply of the move, time.time() at receipt, server time_ms / 1000)


async def _spectate(address: str, count: int, jobs: Any, results: Any) -> None:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = sgrpc.MatchServiceStub(channel)
        while True:
            match_id = jobs.get()  # blocking is fine: nothing else runs between matches
            if match_id is None:
                return
            connected = 0
            all_connected = asyncio.Event()

            async def watch(match_id: str, all_connected: asyncio.Event) -> list[Receipt]:
                nonlocal connected
                got: list[Receipt] = []
                call = stub.WatchMatch(spb.WatchMatchRequest(match_id=match_id))
                first = True
                async for response in call:
                    now = time.time()
                    if first:
                        first = False
                        connected += 1
                        if connected == count:
                            all_connected.set()
                    for event in response.events:
                        if event.WhichOneof("kind") == "move_played":
                            got.append((event.move_played.view.ply - 1, now, event.time_ms / 1000))
                return got

            tasks = [asyncio.create_task(watch(match_id, all_connected)) for _ in range(count)]
            await all_connected.wait()
            results.put(("ready", None))
            receipts = await asyncio.gather(*tasks)
            results.put(("done", receipts))


def spectator_worker(address: str, count: int, jobs: Any, results: Any) -> None:
    """Client process: ``count`` WatchMatch streams on each match id it is given."""
    raise_nofile()
    asyncio.run(_spectate(address, count, jobs, results))


async def play_match(
    client: ZigguratClient, handles: list[Any], think: float, rng: random.Random
) -> dict[int, float]:
    """Two random bots; returns ply -> time.time() at the write of that ply's move."""
    sent: dict[int, float] = {}

    async def choose(turn: Turn) -> str:
        await asyncio.sleep(think)
        move = rng.choice(turn.legal_moves)
        sent[turn.ply] = time.time()
        return move

    await asyncio.gather(*(client.play(h, choose) for h in handles))
    return sent


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--spectators", type=int, default=1000, help="WatchMatch streams (default 1000)")
    parser.add_argument("--procs", type=int, default=4, help="spectator client processes (default 4)")
    parser.add_argument("--games", type=int, default=3, help="matches played one after another (default 3)")
    parser.add_argument("--think", type=float, default=0.1, help="bot think time before each move, s (0.1)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the random bots")
    parser.add_argument("--log-level", default="info", help="server --log-level (default info, as deployed)")
    args = parser.parse_args()
    raise_nofile()
    rng = random.Random(args.seed)
    ctx = multiprocessing.get_context("spawn")
    results: Any = ctx.Queue()
    jobs = [ctx.Queue() for _ in range(args.procs)]
    shares = [
        args.spectators // args.procs + (1 if i < args.spectators % args.procs else 0)
        for i in range(args.procs)
    ]
    per_delivery: list[float] = []
    per_move_all: list[float] = []
    server_side: list[float] = []
    missing = moves = 0
    with ServerProcess(log_level=args.log_level) as server:
        print(f"server pid {server.pid} at {server.address}; {load_average()}", flush=True)
        procs = [
            ctx.Process(target=spectator_worker, args=(server.address, share, jobs[i], results), daemon=True)
            for i, share in enumerate(shares)
        ]
        for proc in procs:
            proc.start()

        async def games() -> float:
            nonlocal missing, moves
            busy = 0.0
            async with ZigguratClient(server.address) as client:
                for game in range(args.games):
                    handles = await new_pylos_match(client)
                    for queue in jobs:
                        queue.put(handles[0].match_id)
                    for _ in procs:
                        await asyncio.to_thread(results.get, True, 300)
                    cpu_before, wall_before = cpu_seconds(server.pid), time.time()
                    sent = await play_match(client, handles, args.think, rng)
                    busy += cpu_seconds(server.pid) - cpu_before
                    receipts: list[list[Receipt]] = []
                    for _ in procs:
                        _kind, got = await asyncio.to_thread(results.get, True, 300)
                        receipts += got
                    slowest: dict[int, float] = defaultdict(float)
                    for stream in receipts:
                        missing += len(sent) - len(stream)
                        for ply, at, stamped in stream:
                            delay = (at - sent[ply]) * 1000
                            per_delivery.append(delay)
                            server_side.append((at - stamped) * 1000)
                            slowest[ply] = max(slowest[ply], delay)
                    per_move_all.extend(slowest.values())
                    moves += len(sent)
                    print(
                        f"game {game + 1}: {len(sent)} moves to {len(receipts)} spectators, "
                        f"{time.time() - wall_before:.1f} s",
                        flush=True,
                    )
            return busy

        busy = asyncio.run(games())
        for queue in jobs:
            queue.put(None)
        for proc in procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
        server.stop()
    each, whole, srv = Summary.of(per_delivery), Summary.of(per_move_all), Summary.of(server_side)
    print(f"\n{moves} moves x {args.spectators} spectators = {each.n:,} deliveries ({missing} missing); "
          f"server CPU {busy / max(moves, 1) * 1000:.1f} ms per move")  # fmt: skip
    print_table(
        ["delay (ms)", "n", "p50", "p90", "p99", "max"],
        [
            ["bot write -> each spectator", each.n, each.p50, each.p90, each.p99, each.max],
            ["bot write -> last spectator of a move", whole.n, whole.p50, whole.p90, whole.p99, whole.max],
            ["server commit time_ms -> each spectator", srv.n, srv.p50, srv.p90, srv.p99, srv.max],
        ],
    )
    print(f"\n{load_average()} at the end")
    met = verdict(each.p99 < GOAL_P99_MS)
    print(f"goal: p99 delivery < {GOAL_P99_MS:.0f} ms -> {each.p99:.1f} ms: {met}")


if __name__ == "__main__":
    main()
