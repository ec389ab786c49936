"""CPU share of an honest sandbox beside a greedy one, with and without the sandboxes' control groups.

Issue 21: an 8-process spinner took CPU from its rival (its share fell from 0.39 to 0.32),
because per-process limits do not bound a sandbox as a whole. Here two sandboxes run at once
for ``--seconds``: the *honest* one spins one process, the *greedy* one ``--processes``
(8). Each process reports the CPU time it got; the table shows each sandbox's total and the
honest one's share of both. The baseline is the same pair run in the same way with
``[sandbox] cgroups = false`` (per-process limits only); the capped run gives each sandbox
``cpus`` (1.0: one core's worth). A last column runs the greedy sandbox alone: what it takes
of an otherwise idle machine (at most ``cpus`` cores when capped). On a kernel with
autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled`` = 1) each sandbox, a
session of its own, already gets a fair share beside another; the cap bounds it on every
kernel, and absolutely. Needs root (or a delegated cgroup v2 group) and bubblewrap.

    python benchmarks/sandbox_cpu.py [--seconds 5] [--processes 8] [--cpus 1.0]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "server"), str(ROOT / "clients" / "python")]

from ziggurat.tournament.sandbox import Sandbox, SandboxPolicy  # noqa: E402

SPINNER = """
import os, sys, time
processes, seconds = int(sys.argv[1]), float(sys.argv[2])
read, write = os.pipe()
for _ in range(processes):
    if os.fork() == 0:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pass
        os.write(write, f"{time.process_time()}\\n".encode())
        os._exit(0)
os.close(write)
with os.fdopen(read) as lines:
    print(sum(float(line) for line in lines))
"""


def run(policy: SandboxPolicy, script: Path, counts: list[int], seconds: float) -> list[float]:
    """CPU seconds got by sandboxes spinning ``counts`` processes each, run at once."""
    sandbox = Sandbox(policy)
    sandbox.check()
    launched = []
    for label, count in enumerate(counts):
        confined = sandbox.confine(
            [sys.executable, str(script), str(count), str(seconds)], cwd=None, env={}, label=f"spin{label}"
        )
        process = subprocess.Popen(confined.argv, env=confined.env, stdout=subprocess.PIPE, text=True)
        launched.append((confined, process))
    got = []
    for confined, process in launched:
        out, _ = process.communicate(timeout=seconds + 60)
        got.append(float(out.strip() or "nan"))
        confined.close_now()
    sandbox.close()
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--cpus", type=float, default=1.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        os.chmod(directory, 0o755)  # the sandboxes' users read the script
        script = Path(directory) / "spinner.py"
        script.write_text(SPINNER)
        rows = [
            ("baseline: per-process limits only", SandboxPolicy(cgroups=False)),
            (f"capped: cpus = {args.cpus:g} per sandbox", SandboxPolicy(cpus=args.cpus)),
        ]
        autogroup = Path("/proc/sys/kernel/sched_autogroup_enabled")
        print(
            f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start, autogroup "
            f"{autogroup.read_text().strip() if autogroup.exists() else 'n/a'}, {args.seconds:g} s per run"
        )
        print(
            f"{'run':<36} {'honest CPU s':>12} {'greedy CPU s':>12} {'honest share':>12} {'greedy alone':>12}"
        )
        for title, policy in rows:
            honest, greedy = run(policy, script, [1, args.processes], args.seconds)
            (alone,) = run(policy, script, [args.processes], args.seconds)
            share = honest / (honest + greedy)
            print(f"{title:<36} {honest:>12.2f} {greedy:>12.2f} {share:>12.2f} {alone:>12.2f}")


if __name__ == "__main__":
    main()
