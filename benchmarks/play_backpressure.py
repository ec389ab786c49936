"""Play backpressure: what a Play stream that sends moves and never reads costs the server.

A ``ziggurat serve`` process (``--rate 0``: every move is refused as NOT_YOUR_TURN, none as
RATE_LIMITED, so the client's sends are the only limit) hosts one started Pylos match. A
client process (grpc.aio, a 1 KiB receive window, no bandwidth probe) opens a Play stream
for the seat that is not to move and sends ``--seconds`` worth of moves without reading;
the baseline, in the same run, is the same client reading every response. Printed for
each: the moves the client sent, the server's RSS before and after (from /proc), and the
growth. The server holds at most twice ``servicer.MAX_PENDING_REFUSALS`` refusals for a
stream that does not read (docs/operations.md, "Limits"); before it, one such stream had it
queue 92,170 refusals and +49 MB in 12 s.

    .venv/bin/python benchmarks/play_backpressure.py --seconds 8
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc

from ziggurat.v1 import game_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as sgrpc

TINY_WINDOW = [
    ("grpc.http2.lookahead_bytes", 1024),
    ("grpc.http2.bdp_probe", 0),
    ("grpc.use_local_subchannel_pool", 1),
]


def rss_kib(pid: int) -> int:
    """Resident set size of ``pid`` in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


async def flood(address: str, reading: bool, seconds: float) -> int:
    """Open a Play stream for a waiting seat of a new match, send moves for ``seconds``; the count."""
    async with grpc.aio.insecure_channel(address) as setup:
        stub = sgrpc.MatchServiceStub(setup)
        config = game_pb2.GameConfig(game=game_pb2.GAME_PYLOS, seats=2, pylos=game_pb2.PylosConfig())
        match_id = (await stub.CreateMatch(spb.CreateMatchRequest(config=config))).match.match_id
        joins = [await stub.JoinMatch(spb.JoinMatchRequest(match_id=match_id, player_name=n)) for n in "ab"]
        to_move = (await stub.GetMatch(spb.GetMatchRequest(match_id=match_id))).match.view.to_move
        waiting = next(j for j in joins if j.seat != to_move)
    async with grpc.aio.insecure_channel(address, options=TINY_WINDOW) as channel:
        play = sgrpc.MatchServiceStub(channel).Play(metadata=(("authorization", f"Bearer {waiting.token}"),))
        await play.write(spb.PlayRequest(match_id=match_id))
        reader = asyncio.create_task(_drain(play)) if reading else None
        sent = 0
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            await play.write(spb.PlayRequest(move="A1"))
            sent += 1
        await asyncio.sleep(1.0)  # the server reads what it still reads
        if reader is not None:
            reader.cancel()
        play.cancel()
        return sent


async def _drain(play: grpc.aio.StreamStreamCall) -> None:  # type: ignore[type-arg]
    while True:
        await play.read()


def main() -> None:
    """Run both clients against one server and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, "-m", "ziggurat.cli.main", "serve", "--host", "127.0.0.1", "--port", "0"]
        command += ["--db", os.path.join(tmp, "z.db"), "--no-web", "--no-mdns", "--rate", "0"]
        server = subprocess.Popen([*command, "--log-level", "error"], stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout is not None
            line = server.stdout.readline()
            address = line.split()[-1]
            for label, reading in (("reading client (baseline)", True), ("client that never reads", False)):
                before = rss_kib(server.pid)
                sent = asyncio.run(flood(address, reading, args.seconds))
                after = rss_kib(server.pid)
                print(
                    f"{label:28s} moves sent {sent:7d}  server RSS {before / 1024:6.1f} -> "
                    f"{after / 1024:6.1f} MiB ({(after - before) / 1024:+.1f} MiB)"
                )
        finally:
            server.terminate()
            server.wait(10)


if __name__ == "__main__":
    main()
