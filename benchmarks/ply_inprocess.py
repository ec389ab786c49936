"""The server's own CPU per ply, without gRPC: ``Match.submit`` plus rendering for both seats.

Pylos matches between two random movers, played in this process on a real database file
(one transaction per move, as the server commits), each ply followed by what the server
does for the seats' Play streams: the new events framed for each seat. CPU time of this
process (``time.process_time``) per ply; ``--profile`` prints cProfile's top functions.
The figure the gRPC benchmarks cannot separate from the transport: what a ply costs in
ziggurat's own code (decide, store, evolve, render, logging).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import pstats
import random
import tempfile
import time
from pathlib import Path

from _baseline import load_average

from ziggurat.core.manager import MatchManager
from ziggurat.core.render import framed_batches
from ziggurat.core.timecontrol import TimeControl
from ziggurat.store.sqlite import Store


async def run(plies_wanted: int, profiler: cProfile.Profile | None) -> float:
    """CPU seconds per ply over at least ``plies_wanted`` plies."""
    rng = random.Random(1)
    plies = 0
    used = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "bench.db")
        manager = MatchManager(store)
        while plies < plies_wanted:
            match = manager.create("pylos", 2, {}, TimeControl(), "chosen")
            match.join("a", 0)
            match.join("b", 1)
            streams = [match.subscribe(match.last_seq, seat) for seat in (0, 1)]
            if profiler is not None:
                profiler.enable()
            start = time.process_time()
            while match.status != "finished":
                turn = match.current.turn
                assert turn is not None
                match.submit(turn.seat, rng.choice(match.rules.legal_moves(match.state)), turn.ply)
                for stream in streams:
                    entries = match.entries[stream.cursor :]
                    stream.cursor = match.last_seq
                    for _message in framed_batches(match, entries, stream.seat):
                        pass
                plies += 1
            used += time.process_time() - start
            if profiler is not None:
                profiler.disable()
            match.close()
        manager.close()
        store.close()
    return used / plies


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--plies", type=int, default=5000, help="plies to play (5000)")
    parser.add_argument("--profile", action="store_true", help="print cProfile's top 30")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, handlers=[logging.NullHandler()])  # as served: INFO
    profiler = cProfile.Profile() if args.profile else None
    per_ply = asyncio.run(run(args.plies, profiler))
    print(f"server CPU per ply without gRPC: {per_ply * 1e6:.1f} us ({load_average()})")
    if profiler is not None:
        stats = pstats.Stats(profiler)
        stats.strip_dirs()
        stats.sort_stats("tottime").print_stats(30)
        stats.sort_stats("cumulative").print_stats(30)


if __name__ == "__main__":
    main()
