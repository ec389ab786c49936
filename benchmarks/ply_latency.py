"""Bot-to-bot ply latency through the ziggurat server vs raw grpc.aio ping-pong.

What is timed (one clock: time.perf_counter in this client process):

* ply latency: from bot A's ``write`` of its move on its Play stream to bot B's receipt
  of the TurnStarted event for B on B's own Play stream. B answers at once with a random
  legal move, which starts the next measured ply. The server runs in a separate process
  (``ziggurat serve --rate 0`` on a temporary database), both bots here, each on its
  own Play stream (the client SDK's ``ZigguratClient.play``). Matches are Pylos,
  standard, played one after another until ``--plies`` plies have been timed.
* move ack: from A's write of its move to A's receipt of its own MovePlayed event.
* raw round trip: one message client → server → client on one grpc.aio bidirectional
  stream to an echo server (generic handler, raw bytes, ``--payload`` bytes) in a
  separate process; the next message is written once the echo is read.

The two are measured in alternating rounds in the same run (both servers stay up), so
drift on a noisy machine hits both. Goal: ply p50 <= 1.5 x raw round-trip p50.

``--gate`` runs ``ziggurat serve --gate``: the bots' calls go through ``ziggurat-gate`` (the
public port) and a Unix socket to the Python server, so the figures include that extra hop;
the server's CPU per ply is then the server process's and the gate's, summed and apart.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import time

from _baseline import (
    EchoProcess,
    ServerProcess,
    Summary,
    cpu_seconds,
    load_average,
    new_pylos_match,
    print_profile,
    print_table,
    raw_pingpong_latency,
    verdict,
)

from ziggurat.v1 import match_pb2
from ziggurat_client import ZigguratClient
from ziggurat_client.bot import Turn

GOAL_RATIO = 1.5


async def play_one_match(
    client: ZigguratClient, rng: random.Random, plies: list[float], acks: list[float]
) -> int:
    """One Pylos match between two immediate random bots; appends timings (ms)."""
    handles = await new_pylos_match(client)
    sent: dict[int, float] = {}  # ply the move was played at -> perf_counter at write

    def bot(seat: int):  # type: ignore[no-untyped-def]
        def choose(turn: Turn) -> str:
            move = rng.choice(turn.legal_moves)
            sent[turn.ply] = time.perf_counter()  # the SDK writes it right after we return
            return move

        def on_event(event: match_pb2.Event) -> None:
            now = time.perf_counter()
            kind = event.WhichOneof("kind")
            if kind == "turn_started" and event.turn_started.seat == seat:
                start = sent.get(event.turn_started.ply - 1)
                if start is not None:
                    plies.append((now - start) * 1000)
            elif kind == "move_played" and event.move_played.seat == seat:
                start = sent.get(event.move_played.view.ply - 1)
                if start is not None:
                    acks.append((now - start) * 1000)

        return choose, on_event

    tasks = []
    for handle in handles:
        choose, on_event = bot(handle.seat)
        tasks.append(asyncio.create_task(client.play(handle, choose, on_event=on_event)))
    await asyncio.gather(*tasks)
    return len(sent)


async def measure_plies(address: str, count: int, rng: random.Random) -> tuple[list[float], list[float], int]:
    plies: list[float] = []
    acks: list[float] = []
    matches = 0
    async with ZigguratClient(address) as client:
        while len(plies) < count:
            await play_one_match(client, rng, plies, acks)
            matches += 1
    return plies[:count], acks, matches


async def warm_up(address: str, echo_address: str, payload: bytes, rng: random.Random) -> None:
    await measure_plies(address, 100, rng)
    await raw_pingpong_latency(echo_address, 200, payload, warmup=0)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--plies", type=int, default=2000, help="plies to time (default 2000)")
    parser.add_argument(
        "--pingpongs", type=int, default=0, help="raw round trips to time (default = --plies)"
    )
    parser.add_argument("--rounds", type=int, default=4, help="alternating measurement rounds (default 4)")
    parser.add_argument("--payload", type=int, default=64, help="raw ping-pong message size in bytes (64)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the random bots")
    parser.add_argument("--log-level", default="info", help="server --log-level (default info, as deployed)")
    parser.add_argument(
        "--gate", action="store_true", help="run `ziggurat serve --gate` (behind ziggurat-gate)"
    )
    parser.add_argument(
        "--profile", metavar="FILE", help="run the server under cProfile, write FILE, print top"
    )
    args = parser.parse_args()
    pingpongs = args.pingpongs or args.plies
    rng = random.Random(args.seed)
    payload = bytes(args.payload)

    async def run(
        server: ServerProcess, echo: EchoProcess
    ) -> tuple[list[float], list[float], list[float], int]:
        await warm_up(server.address, echo.address, payload, rng)
        plies: list[float] = []
        acks: list[float] = []
        raw: list[float] = []
        matches = 0
        echo_cpu = 0.0
        server_cpu = dict.fromkeys(server.pids(), 0.0)
        for r in range(args.rounds):
            n_raw = pingpongs // args.rounds + (1 if r < pingpongs % args.rounds else 0)
            n_ply = args.plies // args.rounds + (1 if r < args.plies % args.rounds else 0)
            before = cpu_seconds(echo.pid)
            raw += await raw_pingpong_latency(echo.address, n_raw, payload, warmup=20)
            echo_cpu += cpu_seconds(echo.pid) - before
            before = server.cpu_parts()
            got, got_acks, got_matches = await measure_plies(server.address, n_ply, rng)
            for name, seconds in server.cpu_parts().items():
                server_cpu[name] += seconds - before[name]
            plies += got
            acks += got_acks
            matches += got_matches
        apart = " + ".join(
            f"{name} {seconds / len(plies) * 1e6:,.0f}" for name, seconds in server_cpu.items()
        )
        print(
            f"server CPU per ply (incl. match set-up): {sum(server_cpu.values()) / len(plies) * 1e6:,.0f} us"
            f"{f' ({apart})' if args.gate else ''}; "
            f"echo server CPU per round trip: {echo_cpu / len(raw) * 1e6:,.0f} us"
        )
        return plies, acks, raw, matches

    with (
        ServerProcess(profile=args.profile, log_level=args.log_level, gate=args.gate) as server,
        EchoProcess() as echo,
    ):
        print(
            f"ziggurat server pid {server.pid} at {server.address}"
            f"{f' (its gate pid {server.gate_pid})' if args.gate else ''}; "
            f"echo server pid {echo.pid} at {echo.address}; {load_average()}"
        )
        started = time.perf_counter()
        plies, acks, raw, matches = asyncio.run(run(server, echo))
        elapsed = time.perf_counter() - started
        server.stop()
    ply, ack, rtt = Summary.of(plies), Summary.of(acks), Summary.of(raw)
    print(f"\n{ply.n} plies over {matches} Pylos matches, {rtt.n} raw round trips, {elapsed:.1f} s\n")
    print_table(
        ["what (ms)", "n", "p50", "p90", "p99", "max", "mean"],
        [
            ["ply: A writes move -> B gets TurnStarted", ply.n, ply.p50, ply.p90, ply.p99, ply.max, ply.mean],
            ["move ack: A writes -> A gets MovePlayed", ack.n, ack.p50, ack.p90, ack.p99, ack.max, ack.mean],
            [
                f"raw grpc.aio bidi round trip ({args.payload} B)",
                rtt.n,
                rtt.p50,
                rtt.p90,
                rtt.p99,
                rtt.max,
                rtt.mean,
            ],
        ],
    )
    ratio50, ratio99 = ply.p50 / rtt.p50, ply.p99 / rtt.p99
    print(f"\nratio ply/raw: p50 {ratio50:.2f}x, p99 {ratio99:.2f}x")
    print(f"{load_average()} at the end")
    print(f"goal: ply p50 <= {GOAL_RATIO}x raw p50 -> {ratio50:.2f}x: {verdict(ratio50 <= GOAL_RATIO)}")
    if args.profile:
        print_profile(args.profile)


if __name__ == "__main__":
    main()
