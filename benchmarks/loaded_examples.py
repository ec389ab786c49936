"""The shipped example tournaments on a machine loaded to twice its cores: does a built-in bot lose on time?

Runs each ``examples/tournaments/*.toml`` as ``ziggurat tournament run`` does (its own server,
the built-in bots launched as remote-bot hosts, the stdio example sandboxed), twice in the same
run: first beside nothing (the baseline), then beside ``--load`` busy-loop processes per core
(``while True: pass``, nice 0, started before the tournament and killed after it). For each it
prints the games, the wall time, the seats that did not finish normally (by verdict), the
built-in bots' ``timeout`` verdicts, and the moves a built-in host had to answer itself because
its search worker had not answered by half the turn's time (``fallbacks``, from the hosts'
logs; see ``ziggurat.bots.workers``). Before search bots had worker processes of their own, the
Pylos example lost 2 games on time at a load of about 20.

The configurations are used as shipped except, with ``--openings K``, the Pylos example plays
only the first K lines of its openings file (18 lines x 10 pairings x 2 colours = 360 games
otherwise, hours on a small machine); everything else — concurrency, clocks, bot options — is
as in the file.

Measured on a 2-core machine shared with other jobs (load average 6 before the spinners, about
20 with them), ``--openings 1`` (12 Kabaleo games, 20 Pylos games) and ``--openings 3 --no-baseline``
(60 Pylos games): 0 built-in timeouts in every run; fallback moves 0, 0, 0, 0 and 1 (of 60 Pylos
games) — every other move of mcts and alphabeta came from its search.

    .venv/bin/python benchmarks/loaded_examples.py --openings 1
    .venv/bin/python benchmarks/loaded_examples.py --openings 2 --load 2 --no-baseline
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "server"), str(ROOT / "clients" / "python")]

from ziggurat.tournament.config import load_config  # noqa: E402
from ziggurat.tournament.runner import TournamentRunner  # noqa: E402
from ziggurat.tournament.store import TournamentStore  # noqa: E402

EXAMPLES = ROOT / "examples" / "tournaments"
FALLBACK = re.compile(r"no move from its search worker")


@dataclass
class Figures:
    example: str
    load: str
    games: int = 0
    wall: float = 0.0
    verdicts: Counter[str] = field(default_factory=Counter)
    builtin_timeouts: Counter[str] = field(default_factory=Counter)
    fallbacks: int = 0

    def row(self) -> str:
        odd = ", ".join(f"{v} {n}" for v, n in sorted(self.verdicts.items()) if v != "finished") or "-"
        late = ", ".join(f"{b} {n}" for b, n in sorted(self.builtin_timeouts.items())) or "0"
        return (
            f"{self.example:<26} {self.load:<14} {self.games:>5} {self.wall:>8.1f} "
            f"{late:>18} {self.fallbacks:>9}   {odd}"
        )


HEADER = (
    f"{'example':<26} {'load':<14} {'games':>5} {'wall s':>8} {'built-in timeouts':>18} {'fallbacks':>9}   "
    "seats not finished"
)


def prepare(example: Path, directory: Path, openings: int | None) -> str:
    """The example's text (with ``--openings K``, pointing at a file of its first K openings)."""
    text = example.read_text()
    if openings is not None and "openings" in text:
        lines = (EXAMPLES / "pylos-openings.txt").read_text().splitlines()
        kept = [line for line in lines if line.strip() and not line.startswith("#")][:openings]
        subset = directory / f"openings-{openings}.txt"
        subset.write_text("\n".join(kept) + "\n")
        text = re.sub(r'^openings = ".*"$', f'openings = "{subset}"', text, flags=re.MULTILINE)
    return text


async def run(example: Path, load: str, openings: int | None, directory: Path) -> Figures:
    text = prepare(example, directory, openings)
    db = directory / f"{example.stem}-{load.split(maxsplit=1)[0]}.db"
    # The example's own path: its relative paths (the stdio program) resolve as shipped.
    runner = TournamentRunner(db, config_text=text, config_path=example, show_progress=False)
    builtins = {p.name for p in load_config(example).participants if p.kind == "builtin"}
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        reason = await runner.run()
    figures = Figures(example.stem, load, wall=time.perf_counter() - started)
    if reason != "completed":
        raise RuntimeError(f"{example.stem}: {reason}")
    store = TournamentStore(db)
    results = [g.result for g in store.games(runner.tournament_id) if g.result is not None]
    store.close()
    figures.games = len(results)
    for result in results:
        for name, verdict in zip(result["seats"], result["verdicts"], strict=True):
            figures.verdicts[verdict] += 1
            if verdict == "timeout" and name in builtins:
                figures.builtin_timeouts[name] += 1
    for log in runner.log_dir.glob("*.log"):
        figures.fallbacks += len(FALLBACK.findall(log.read_text(errors="replace")))
    return figures


def busy_loops(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


async def main(args: argparse.Namespace) -> None:
    logging.basicConfig(level="ERROR")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    examples = sorted(EXAMPLES.glob("*.toml"))
    load_now = os.getloadavg()[0]
    print(f"{cores} cores; Pylos openings: {args.openings or 'all'}; load average now {load_now:.1f}")
    print(HEADER)
    with tempfile.TemporaryDirectory(prefix="ziggurat-loaded-") as scratch:
        tmp = args.keep or scratch
        for example in [e for e in examples if args.only in e.stem]:
            if args.baseline:
                print((await run(example, "baseline", args.openings, Path(tmp))).row(), flush=True)
            spinners = busy_loops(args.load * cores)
            try:
                label = f"+{len(spinners)} spinners"
                print((await run(example, label, args.openings, Path(tmp))).row(), flush=True)
            finally:
                for spinner in spinners:
                    spinner.kill()
                    spinner.wait()
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--load", type=int, default=2, help="busy-loop processes per core (default 2)")
    parser.add_argument("--openings", type=int, default=None, help="Pylos: first K openings only")
    parser.add_argument("--no-baseline", dest="baseline", action="store_false", help="loaded runs only")
    parser.add_argument("--only", default="", help="only the examples whose name contains this")
    parser.add_argument("--keep", default="", help="keep databases and logs in this directory")
    asyncio.run(main(parser.parse_args()))
