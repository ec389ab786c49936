"""A kept-alive GetMatch over the web port (Connect) beside the same call over gRPC.

What is timed (one clock: time.perf_counter in this client process): one unary GetMatch
of a waiting Pylos match, as a spectator, from the request's send to the whole answer read,
the next call sent once the answer is in. The server runs in a separate process
(``ziggurat serve --rate 0 --http-port 0`` on a temporary database):

* gRPC: one channel (one HTTP/2 connection), the generated stub, synchronous calls;
* web, proto: one kept-alive HTTP/1.1 connection (the standard library's client, which sends
  a request's head and body in one write), ``POST /ziggurat.v1.MatchService/GetMatch`` with
  an ``application/proto`` body, as the web client sends it;
* web, JSON: the same with ``application/json``, as curl would.

The three are measured in alternating rounds in the same run, so drift on a shared machine
hits all of them. Goal: the web port's p50 and p99 within 2x of gRPC's. Before the web
port's sockets had TCP_NODELAY, every call after a connection's first took 40-50 ms (a
response's head and body are two writes; the body waited for the client's delayed ACK).

Run: ``python benchmarks/web_vs_grpc.py [--calls 2000] [--rounds 5]``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import time
from collections.abc import Callable

import grpc
from _baseline import ServerProcess, Summary, load_average, print_table, pylos_config, verdict

from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as sgrpc

GOAL_RATIO = 2.0
PATH = "/ziggurat.v1.MatchService/GetMatch"


def web_caller(connection: http.client.HTTPConnection, body: bytes, content_type: str) -> Callable[[], None]:
    """One GetMatch on the kept-alive connection; fails loudly on anything but a 200."""
    headers = {"content-type": content_type}

    def call() -> None:
        connection.request("POST", PATH, body=body, headers=headers)
        response = connection.getresponse()
        data = response.read()
        if response.status != 200 or response.getheader("connection") == "close":
            raise RuntimeError(f"web GetMatch answered {response.status}: {data[:200]!r}")

    return call


def timed(call: Callable[[], None], count: int) -> list[float]:
    """``count`` sequential calls, each in milliseconds."""
    out = []
    for _ in range(count):
        start = time.perf_counter()
        call()
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per transport per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args()

    with ServerProcess(extra=["--http-port", "0"]) as server:
        assert server.proc is not None and server.proc.stdout is not None
        web_line = server.proc.stdout.readline()  # "ziggurat web client on http://HOST:PORT/"
        host, port = web_line.split("http://", 1)[1].strip().strip("/").rsplit(":", 1)
        channel = grpc.insecure_channel(server.address)
        stub = sgrpc.MatchServiceStub(channel)
        match_id = stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config())).match.match_id
        request = spb.GetMatchRequest(match_id=match_id)
        as_json = json.dumps({"matchId": match_id}).encode()
        connection = http.client.HTTPConnection(host, int(port), timeout=10)
        callers: dict[str, Callable[[], None]] = {
            "gRPC": lambda: stub.GetMatch(request) and None,
            "web (Connect, proto)": web_caller(connection, request.SerializeToString(), "application/proto"),
            "web (Connect, JSON)": web_caller(connection, as_json, "application/json"),
        }
        samples: dict[str, list[float]] = {name: [] for name in callers}
        for call in callers.values():
            timed(call, args.warmup)
        for _ in range(args.rounds):
            for name, call in callers.items():
                samples[name] += timed(call, args.calls)
        connection.close()
        channel.close()

    summaries = {name: Summary.of(values) for name, values in samples.items()}
    base = summaries["gRPC"]
    print(f"GetMatch of a waiting Pylos match, one kept-alive connection each; {load_average()}")
    print_table(
        ["transport", "calls", "p50 ms", "p90 ms", "p99 ms", "max ms", "p50 / gRPC", "p99 / gRPC"],
        [
            [name, s.n, s.p50, s.p90, s.p99, s.max, s.p50 / base.p50, s.p99 / base.p99]
            for name, s in summaries.items()
        ],
    )
    web = summaries["web (Connect, proto)"]
    met = web.p50 <= GOAL_RATIO * base.p50 and web.p99 <= GOAL_RATIO * base.p99
    print(f"goal: web (proto) p50 and p99 within {GOAL_RATIO:g}x of gRPC's: {verdict(met)}")


if __name__ == "__main__":
    main()
