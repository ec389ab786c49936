"""Server CPU per message of bare grpc.aio stream patterns: what a ply costs with no game in it.

A ziggurat ply is one message in (the mover's move) and two out (the mover's ack, the next
seat's turn), on two Play streams; the raw echo of the other benchmarks is one in and one
out on one stream. This benchmark runs, each in its own server process with raw bytes and
no ziggurat code at all:

* ``echo``: the baseline of ``throughput.py``/``ply_latency.py`` (a generator echoing back);
* ``ply``: Play's shape with nothing inside: streams paired by metadata, each with a reader
  task; a message in on one stream puts an ack on it and a turn on its partner, each
  stream's writer coroutine wakes on a future and sends with ``context.write``;
* ``ply-guarded``: ``ply`` behind ziggurat's own interceptors (``Guard`` and
  ``StatusGuard``, as ``ziggurat serve`` installs them), with a protobuf request decoded.

A client in this process keeps ``--streams`` streams busy (``ply``: pairs taking turns),
one unit in flight per stream or pair, for ``--seconds`` after ``--warmup``; the server's
CPU time (user + system, every thread) over the window divided by the units done is its
CPU per unit (an echo round trip, or a ply). Rounds alternate the patterns, so load on a
shared machine hits them alike. The gap between ``ply-guarded`` and ``throughput.py``'s
CPU per ply is what ziggurat's own work (decide, commit, render, a match's set-up) and
its asyncio plumbing add to the transport.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
from _baseline import CHANNEL_OPTIONS, ECHO_SERVER_OPTIONS, cpu_seconds, load_average, print_table

METHOD = "/bench.Patterns/Chat"
PATTERNS = ("echo", "ply", "ply-guarded")


class _Wake:
    """A stream's outbox and the future its writer sleeps on (as ziggurat's Subscriber)."""

    __slots__ = ("future", "out")

    def __init__(self) -> None:
        self.future: asyncio.Future[None] | None = None
        self.out: list[bytes] = []

    async def wait(self) -> None:
        if self.future is None:
            self.future = asyncio.get_running_loop().create_future()
        try:
            await self.future
        finally:
            self.future = None

    def wake(self) -> None:
        if self.future is None:
            self.future = asyncio.get_running_loop().create_future()
        if not self.future.done():
            self.future.set_result(None)


class _Pair:
    def __init__(self) -> None:
        self.streams = (_Wake(), _Wake())
        self.closed = False


_PAIRS: dict[str, _Pair] = {}


async def _echo(requests: AsyncIterator[bytes], context: Any) -> AsyncIterator[bytes]:
    async for message in requests:
        yield message


async def _ply(requests: AsyncIterator[bytes], context: Any) -> None:
    metadata = dict(context.invocation_metadata())
    pair = _PAIRS.setdefault(metadata["pair"], _Pair())
    seat = int(metadata["seat"])
    mine, other = pair.streams[seat], pair.streams[1 - seat]

    async def reader() -> None:
        first = True
        async for message in requests:
            if first:  # the hello that opens the stream
                first = False
                continue
            mine.out.append(b"ack" + message)
            other.out.append(b"turn" + message)
            other.wake()
            mine.wake()
        pair.closed = True
        mine.wake()
        other.wake()

    task = asyncio.create_task(reader())
    try:
        while True:
            out, mine.out = mine.out, []
            if out:
                await context.write(b"".join(out))
            elif pair.closed:
                return
            else:
                await mine.wait()
    finally:
        task.cancel()
        _PAIRS.pop(metadata["pair"], None)


async def serve(pattern: str) -> None:
    """One pattern's server, until SIGTERM (prints its port)."""
    interceptors: tuple[Any, ...] = ()
    deserializer = None
    if pattern == "ply-guarded":
        from ziggurat.api.guard import Guard, GuardLimits
        from ziggurat.api.status_guard import StatusGuard
        from ziggurat.v1 import match_service_pb2 as spb

        interceptors = (Guard(GuardLimits(0, 0, 10.0)), StatusGuard())

        def deserializer(data: bytes) -> bytes:
            return spb.PlayRequest.FromString(data).move.encode()

    server = grpc.aio.server(options=ECHO_SERVER_OPTIONS, interceptors=interceptors)
    behaviour = _echo if pattern == "echo" else _ply
    handler = grpc.stream_stream_rpc_method_handler(behaviour, request_deserializer=deserializer)
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("bench.Patterns", {"Chat": handler}),)
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"listening {port}", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await server.stop(0.2)


async def _drive(
    port: int, pattern: str, streams: int, warmup: float, seconds: float, pid: int
) -> tuple[int, float]:
    """Units done in the window and the server's CPU seconds in it."""
    payload = b"\x0a\x04a1b2"  # a PlayRequest with move "a1b2"
    counting = stopping = False
    done = 0
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=CHANNEL_OPTIONS) as channel:
        method = channel.stream_stream(METHOD, None, None)  # type: ignore[call-arg]

        async def echo() -> None:
            nonlocal done
            call = method()
            while not stopping:
                await call.write(payload)
                await call.read()
                done += counting
            await call.done_writing()

        async def ply(key: str) -> None:
            nonlocal done
            calls = [method(metadata=(("pair", key), ("seat", str(seat)))) for seat in (0, 1)]
            for call in calls:
                await call.write(payload)  # hello
            mover, waiting = calls
            while not stopping:
                await mover.write(payload)
                await mover.read()  # the ack
                await waiting.read()  # the turn
                done += counting
                mover, waiting = waiting, mover
            for call in calls:
                await call.done_writing()

        if pattern == "echo":
            tasks = [asyncio.create_task(echo()) for _ in range(streams)]
        else:
            tasks = [asyncio.create_task(ply(f"{os.getpid()}-{i}")) for i in range(streams // 2)]
        await asyncio.sleep(warmup)
        counting, before, start = True, cpu_seconds(pid), time.monotonic()
        await asyncio.sleep(seconds)
        counting, used = False, cpu_seconds(pid) - before
        units = done
        stopping = True
        await asyncio.wait(tasks, timeout=5)
        return units, used * seconds / (time.monotonic() - start)


def measure(pattern: str, streams: int, warmup: float, seconds: float) -> tuple[float, float]:
    """(units/s, server CPU µs per unit) of one pattern in a fresh server process."""
    proc = subprocess.Popen([sys.executable, __file__, "--serve", pattern], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().split()[1])
        units, cpu = asyncio.run(_drive(port, pattern, streams, warmup, seconds, proc.pid))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
    return units / seconds, cpu / max(units, 1) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--streams", type=int, default=200, help="client streams (ply: pairs of them) (200)")
    parser.add_argument("--seconds", type=float, default=5.0, help="measurement window per run (5)")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before the window opens (2)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds, each running every pattern (2)")
    parser.add_argument("--serve", choices=PATTERNS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve))
        return
    print(f"{args.streams} streams, {args.rounds} rounds of {args.seconds:g} s; {load_average()}", flush=True)
    results: dict[str, list[tuple[float, float]]] = {pattern: [] for pattern in PATTERNS}
    for _ in range(args.rounds):
        for pattern in PATTERNS:
            results[pattern].append(measure(pattern, args.streams, args.warmup, args.seconds))
    echo = sum(cpu for _, cpu in results["echo"]) / args.rounds
    rows = []
    for pattern, runs in results.items():
        rate = sum(r for r, _ in runs) / len(runs)
        cpu = sum(c for _, c in runs) / len(runs)
        unit = "echo round trip" if pattern == "echo" else "ply (1 in, 2 out)"
        rows.append([pattern, unit, rate, cpu, cpu / echo])
    print()
    print_table(["pattern", "unit", "units/s", "server CPU us/unit", "x echo"], rows)
    print(f"\n{load_average()} at the end")


if __name__ == "__main__":
    main()
