"""Summarise a py-spy ``--format raw`` profile of the server: own and cumulative share by function.

py-spy (pinned in the dev extra) samples a running process, native frames included, so
unlike cProfile it shows how the time splits between our Python code, gRPC's core (C and
Cython) and the system calls. Record the server of a benchmark while it runs, e.g.::

    .venv/bin/python benchmarks/ply_latency.py --plies 20000 &
    .venv/bin/py-spy record --pid SERVER_PID --native --duration 8 --rate 250 \
        --format raw --output /tmp/server.raw
    .venv/bin/python benchmarks/spy_summary.py /tmp/server.raw

Two views of the same samples: by layer (the leaf-most layer: whose code the CPU was
in) and by activity (which part of the server it worked for: the Play writer, the Play
reader, the group commit, unary calls, ...). Only the event loop's thread is counted
(stacks through ``_serve``), and its idle time (waiting in ``epoll_wait``) is left out:
the shares are of the time the loop was busy.
Shared-library frames without symbols are grouped by library.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

_FILE = re.compile(r" \((?:.*/)?(?:site-packages|server|lib/python3\.\d+)/")
_LINE = re.compile(r":\d+\)$")
_ADDRESS = re.compile(r"^0x[0-9a-f]+ \((.*)\)$")


def frame_name(frame: str) -> str:
    """A frame without its line number and install prefix; bare addresses become their library."""
    frame = _LINE.sub(")", _FILE.sub(" (", frame))
    address = _ADDRESS.match(frame)
    return f"[{address.group(1)}]" if address else frame


# Where a sample's time goes: the first layer found walking from the leaf to the root.
LAYERS = (
    ("game rules (ziggurat.rules)", ("(ziggurat/rules/",)),
    ("SQLite store", ("libsqlite3", "pysqlite", "(ziggurat/store/", "cursor.c", "connection.c")),
    ("logging", ("(logging/",)),
    ("rendering (core.render, wire.codec)", ("(ziggurat/core/render", "(ziggurat/wire/")),
    ("match, decide, evolve, servicer, guards", ("(ziggurat/",)),
    ("protobuf (upb)", ("_message.abi3",)),
    ("gRPC core and sockets", ("cygrpc", "sendmsg", "recv", "libgrpc")),
)


# Which part of the server a sample works for: the first of these found in its stack (any
# depth). The Play and WatchMatch handlers write with context.write, so gRPC's send path
# (and its sendmsg) runs inside their frames and counts for them.
ACTIVITIES = (
    ("group commit (commit, adopt, wake)", ("GroupCommit.",)),
    ("Play reader (read, decide)", ("MatchServicer._play_reader",)),
    ("Play writer (render, write)", ("MatchServicer.Play ",)),
    ("WatchMatch writer (render, write)", ("MatchServicer.WatchMatch ", "MatchServicer.watch_written")),
    ("unary calls (create, join, get ...)", ("Guard._awaited",)),
)


def activity(frames: list[str]) -> str:
    for name, marks in ACTIVITIES:
        if any(mark in frame for frame in frames for mark in marks):
            return name
    if any("task_step" in frame for frame in frames):
        return "other tasks (gRPC's own coroutines, timers)"
    if any("cygrpc" in frame for frame in frames):
        return "gRPC completion callbacks"
    return "event loop and the rest"


def layer(frames: list[str]) -> str:
    for frame in reversed(frames):
        for name, marks in LAYERS:
            if any(mark in frame for mark in marks):
                return name
    return "asyncio and the rest"


def summarise(path: Path, top: int) -> str:
    layers: Counter[str] = Counter()
    own: Counter[str] = Counter()
    cumulative: Counter[str] = Counter()
    activities: Counter[str] = Counter()
    split: Counter[tuple[str, str]] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if "_serve" not in stack:
            continue  # not the event loop's thread
        frames = [frame_name(f) for f in stack.split(";")]
        if frames[-1].startswith("epoll_wait"):
            continue  # idle
        samples = int(count)
        total += samples
        own[frames[-1]] += samples
        layers[layer(frames)] += samples
        activities[activity(frames)] += samples
        split[activity(frames), layer(frames)] += samples
        for name in set(frames):
            cumulative[name] += samples
    lines = [
        f"{total} busy samples of the event loop thread",
        "",
        "--- by layer (leaf-most layer of each sample) ---",
    ]
    lines += [f"{100 * n / total:6.1f}%  {name}" for name, n in layers.most_common()]
    lines += ["", "--- by activity (what the sample works for), with its layers above 1 % ---"]
    for name, n in activities.most_common():
        lines.append(f"{100 * n / total:6.1f}%  {name}")
        parts = sorted(((k[1], m) for k, m in split.items() if k[0] == name), key=lambda x: -x[1])
        lines += [f"          {100 * m / total:6.1f}%  {part}" for part, m in parts if m / total >= 0.01]
    lines += ["", f"--- top {top} by own time ---"]
    lines += [f"{100 * n / total:6.1f}%  {name}" for name, n in own.most_common(top)]
    lines += ["", f"--- top {top} by cumulative time ---"]
    lines += [f"{100 * n / total:6.1f}%  {name}" for name, n in cumulative.most_common(top)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("raw", type=Path, help="py-spy record --format raw output")
    parser.add_argument("--top", type=int, default=40, help="functions per table (40)")
    args = parser.parse_args()
    print(summarise(args.raw, args.top))


if __name__ == "__main__":
    main()
