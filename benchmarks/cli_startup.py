"""How long ``ziggurat --version``, ``--help`` and a server's start take, beside ``python -c pass``.

Why: ``--version`` took 2.4-3.4 s when the entry point imported every command module (grpc,
textual, the server, the rules); now it imports only the table of commands. The baseline is
the interpreter starting and doing nothing, measured in the same run on the same machine, so
the figures can be compared on a loaded machine too. ``serve`` is timed from its start to its
"listening" line, with and without the web port: without it, the web stack (uvicorn, Connect)
is not imported at all. Each is run ``--runs`` times (default 9),
alternating, and the median is printed.

Usage: ``python benchmarks/cli_startup.py [--runs 9]`` (uses the ``ziggurat`` next to this
Python, else ``python -m ziggurat.cli.main``).
"""

from __future__ import annotations

import argparse
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _ziggurat() -> list[str]:
    beside = Path(sys.executable).with_name("ziggurat")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("ziggurat")
    return [found] if found else [sys.executable, "-m", "ziggurat.cli.main"]


def _seconds(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def _serve_seconds(argv: list[str]) -> float:
    """Seconds from starting ``argv`` (a ``serve``) to its "listening" line; then it is stopped."""
    with tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        server = subprocess.Popen(
            [*argv, "--db", f"{scratch}/z.db"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert server.stdout is not None
        line = server.stdout.readline()
        took = time.perf_counter() - started
        server.send_signal(signal.SIGTERM)
        server.wait(30)
    if not line.startswith("ziggurat listening on "):
        raise SystemExit(f"{' '.join(argv)} did not start: {line!r}")
    return took


def main() -> None:
    """Time each command ``--runs`` times, interleaved, and print the medians."""
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    options.add_argument("--runs", type=int, default=9)
    runs = options.parse_args().runs
    ziggurat = _ziggurat()
    cases = {
        "python -c pass (baseline)": [sys.executable, "-c", "pass"],
        "ziggurat --version": [*ziggurat, "--version"],
        "ziggurat --help": [*ziggurat, "--help"],
    }
    serve = [*ziggurat, "serve", "--no-mdns", "--host", "127.0.0.1", "--port", "0"]
    servers = {
        "serve --no-web (to listening)": [*serve, "--no-web"],
        "serve (to listening)": serve,
    }
    times: dict[str, list[float]] = {name: [] for name in [*cases, *servers]}
    for _ in range(runs):
        for name, argv in cases.items():
            times[name].append(_seconds(argv))
        for name, argv in servers.items():
            times[name].append(_serve_seconds(argv))
    print(f"{runs} runs each, median (min-max), {' '.join(ziggurat)}")
    for name, measured in times.items():
        print(
            f"  {name:<30} {statistics.median(measured) * 1000:7.1f} ms"
            f"  ({min(measured) * 1000:.1f}-{max(measured) * 1000:.1f})"
        )


if __name__ == "__main__":
    main()
