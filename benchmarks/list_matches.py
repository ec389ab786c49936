"""ListMatches over many finished matches, beside GetMatch, and a live match's plies under it.

What is timed (time.perf_counter in this client process; the server is ``ziggurat serve``
in its own process on a database prepared beforehand):

* the database: ``--matches`` (default 10,000) finished Pylos matches, each played to its
  end with random moves through the server's own match code (full logs, summaries written
  as the server writes them). It is kept in ``--cache`` so that later runs start at once.
* ListMatches latency: first pages (``status=FINISHED``, 100 matches a page) and pages
  deep in the listing (reached by following next_page_token), one call at a time.
* GetMatch latency: one finished match at a time, chosen at random.
* ply latency: SubmitMove round trips of a live Pylos match between two random movers,
  first with no other load (baseline) and then while ``--hammer`` concurrent loops in a
  separate process call ListMatches (100 finished matches a page) as fast as they can.
  Both phases run in the same run against the same server.

    .venv/bin/python benchmarks/list_matches.py
    .venv/bin/python benchmarks/list_matches.py --matches 2000 --plies 300
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
from _baseline import ServerProcess, Summary, print_table, pylos_config

from ziggurat.core.manager import MatchManager
from ziggurat.core.timecontrol import TimeControl
from ziggurat.store.sqlite import Store
from ziggurat.v1 import match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as rpc

FINISHED = match_pb2.MATCH_STATUS_FINISHED


async def _populate(path: Path, count: int, seed: int) -> None:
    store = Store(path)
    manager = MatchManager(store, max_live_matches=count + 10)
    rng = random.Random(seed)
    started = time.perf_counter()
    for index in range(count):
        match = manager.create("pylos", 2, {}, TimeControl(), "chosen")
        match.join("a", None)
        match.join("b", None)
        while match.status != "finished":
            turn = match.rules.to_move(match.state)
            assert turn is not None
            match.submit(turn, rng.choice(list(match.rules.legal_moves(match.state))))
        if (index + 1) % 1000 == 0:
            print(f"  {index + 1:,} finished matches ({time.perf_counter() - started:.0f} s)", flush=True)
    manager.close()
    store.close()


def prepare(cache: Path, count: int) -> Path:
    """The database with ``count`` finished matches (built once, then reused from ``cache``)."""
    if cache.exists():
        return cache
    print(f"building {count:,} finished matches into {cache} (once) ...", flush=True)
    partial = cache.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    asyncio.run(_populate(partial, count, seed=1))
    partial.rename(cache)
    return cache


async def _timed(calls: int, call: object) -> list[float]:
    out = []
    for _ in range(calls):
        start = time.perf_counter()
        await call()  # type: ignore[operator]
        out.append((time.perf_counter() - start) * 1000)
    return out


async def list_and_get(address: str, calls: int) -> list[tuple[str, Summary]]:
    """ListMatches (first and deep pages) and GetMatch latencies, one call at a time."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub = rpc.MatchServiceStub(channel)
        first = spb.ListMatchesRequest(status=FINISHED, page_size=100)
        page = await stub.ListMatches(first)
        ids = [m.match_id for m in page.matches]
        token, reached = page.next_page_token, 1
        while token and reached < 51:  # page 51: 5,000 matches deep (with enough matches)
            page = await stub.ListMatches(
                spb.ListMatchesRequest(status=FINISHED, page_size=100, page_token=token)
            )
            ids += [m.match_id for m in page.matches]
            token, reached = page.next_page_token, reached + 1
        deep = spb.ListMatchesRequest(status=FINISHED, page_size=100, page_token=token)
        deep_name = f"ListMatches, page {reached + 1 if token else 1} (100)"
        rng = random.Random(2)

        async def get() -> None:
            await stub.GetMatch(spb.GetMatchRequest(match_id=rng.choice(ids)))

        return [
            (
                "ListMatches, first page (100)",
                Summary.of(await _timed(calls, lambda: stub.ListMatches(first))),
            ),
            (deep_name, Summary.of(await _timed(calls, lambda: stub.ListMatches(deep)))),
            ("GetMatch, a finished match", Summary.of(await _timed(calls, get))),
        ]


async def plies(address: str, count: int, seed: int) -> list[float]:
    """SubmitMove round trips (ms) of live Pylos matches between two random movers."""
    rng = random.Random(seed)
    out: list[float] = []
    async with grpc.aio.insecure_channel(address) as channel:
        stub = rpc.MatchServiceStub(channel)
        while len(out) < count:
            created = await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
            match_id = created.match.match_id
            tokens = {}
            for name in ("a", "b"):
                joined = await stub.JoinMatch(spb.JoinMatchRequest(match_id=match_id, player_name=name))
                tokens[joined.seat] = [("authorization", f"Bearer {joined.token}")]
            while len(out) < count:
                view = (await stub.GetMatch(spb.GetMatchRequest(match_id=match_id), metadata=tokens[1])).match
                if view.status == FINISHED:
                    break
                seat = view.view.to_move
                mine = (
                    await stub.GetMatch(spb.GetMatchRequest(match_id=match_id), metadata=tokens[seat])
                ).match
                move = rng.choice(list(mine.view.legal_moves))
                start = time.perf_counter()
                await stub.SubmitMove(
                    spb.SubmitMoveRequest(match_id=match_id, move=move, ply=mine.view.ply),
                    metadata=tokens[seat],
                )
                out.append((time.perf_counter() - start) * 1000)
    return out


async def hammer(address: str, loops: int, seconds: float) -> None:
    """``loops`` concurrent ListMatches loops for ``seconds`` or until SIGTERM (in its own process)."""
    deadline = time.monotonic() + seconds
    started = time.monotonic()
    calls = 0

    def stop() -> None:
        nonlocal deadline
        deadline = 0.0

    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)
    async with grpc.aio.insecure_channel(address) as channel:
        stub = rpc.MatchServiceStub(channel)
        request = spb.ListMatchesRequest(status=FINISHED, page_size=100)

        async def loop() -> None:
            nonlocal calls
            while time.monotonic() < deadline:
                await stub.ListMatches(request)
                calls += 1

        await asyncio.gather(*(loop() for _ in range(loops)))
    elapsed = time.monotonic() - started
    print(f"hammer: {calls:,} ListMatches calls in {elapsed:.1f} s ({calls / elapsed:,.0f}/s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--matches", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=200, help="ListMatches/GetMatch calls timed")
    parser.add_argument("--plies", type=int, default=400, help="plies timed in each phase")
    parser.add_argument("--hammer", type=int, default=4, help="concurrent ListMatches loops")
    parser.add_argument("--cache", type=Path, default=None, help="database cache file")
    parser.add_argument("--hammer-only", metavar="ADDRESS", help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, default=600.0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.hammer_only:
        asyncio.run(hammer(args.hammer_only, args.hammer, args.seconds))
        return
    cache = args.cache or Path(f"/tmp/ziggurat-bench-list-{args.matches}.db")
    prepare(cache, args.matches)
    server = ServerProcess()
    shutil.copy(cache, server.tmp / "bench.db")
    with server:
        address = server.address
        print(f"\nserver {address}, {args.matches:,} finished matches\n")
        rows = asyncio.run(list_and_get(address, args.calls))
        baseline = Summary.of(asyncio.run(plies(address, args.plies, seed=3)))
        hammer_process = subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--hammer-only",
                address,
                "--hammer",
                str(args.hammer),
                "--seconds",
                "600",
            ],
        )
        try:
            time.sleep(2.0)  # let the hammer reach full speed
            loaded = Summary.of(asyncio.run(plies(address, args.plies, seed=4)))
        finally:
            hammer_process.terminate()
            hammer_process.wait(30)
        rows += [
            ("SubmitMove ply, no other load", baseline),
            (f"SubmitMove ply, {args.hammer} ListMatches loops", loaded),
        ]
        print_table(
            ["call (latency in ms)", "n", "p50", "p90", "p99", "max"],
            [(name, s.n, s.p50, s.p90, s.p99, s.max) for name, s in rows],
        )


if __name__ == "__main__":
    main()
