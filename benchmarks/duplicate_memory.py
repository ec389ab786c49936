"""Duplicate Kabaleo deals and memory: what a remembering cheat gains, sandboxed and not.

Issue 21: the rotations of a duplicate deal share their secret objectives, so a participant
that remembers one rotation in the next knows its rivals' objectives. A duplicate tournament
therefore admits only participants that cannot remember (built-in bots in a fresh process
per game, per-game ``command``/``stdio`` programs in the sandbox). This measures whether
that holds against a program that tries.

The cheat (``benchmarks/duplicate_memory/player.py``, a per-game gRPC program) plays one
ply deep with ziggurat's rules for its own objective and, once it knows both rivals'
objectives, against them. With ``MEMORY=1`` in its participant ``env`` it writes its
objective, keyed by the deal's seed commitment, to every place it can write ($HOME,
$TMPDIR, /tmp, /var/tmp, /dev/shm, its cwd = the configuration's directory, its program
directory), reads them all back before each move, and asks the server for its sister
rotations (ListMatches, ListTournaments/GetTournament, GetMatch and WatchMatch of every other
match id, with and without its seat token). With ``MEMORY=0`` it is the honest twin: the
same code, remembering nothing.

Paired design with common random numbers: the same configuration (Kabaleo, 3 seats,
``duplicate = true``, untimed; participants ``cheat``, built-in ``greedy``, and ``plain`` =
a second copy of the player with ``MEMORY=0``) is run twice with the same ``--seed`` (the
same schedule, deals and bot seeds): once with the cheat's memory on, once off. Every player
is deterministic given its view, so the two runs differ only where the cheat remembered
something. Per deal, gain = the cheat's points in its games minus the twin's points in the
same games, per game; the mean over deals has a 95 % interval (normal, over deals).

* **sandboxed**: ``[sandbox]`` as shipped (the configuration ``ziggurat tournament run``
  accepts). The goal of issue 21: the gain within +-0.03 points/game over >= 300 deals.
* **control** (the baseline showing the cheat's memory helps when it works): the same pair
  with ``[sandbox] enabled = false``. The configuration check refuses that with
  ``duplicate = true``, so this benchmark builds that configuration object itself (the
  sandboxed one with ``sandbox.enabled`` replaced), bypassing the check, and says so.
  Unconfined, the cheat's files in /tmp carry across the rotations of a deal.

A program that crashes is not disqualified (``[disqualify] max_failures = 1000``): its deal
stays in the figures, and the gain is also printed over the deals where every seat of every
rotation finished normally in both runs. ``--minutes`` bounds each pair's time: no deal
starts after it, the deals under way finish, and only deals whole in both runs count.

For each run it also reads the cheat's per-game logs (``DB-logs/ID/MATCH-seatN.log``): how
many of its moves were made knowing one or both rivals' objectives, where it could write,
where it found a rival's objective, and how many of its server calls were answered.

    .venv/bin/python benchmarks/duplicate_memory.py --deals 300 --control-deals 100
    .venv/bin/python benchmarks/duplicate_memory.py --only control --control-deals 30
    .venv/bin/python benchmarks/duplicate_memory.py --only sandboxed --concurrency 12 --minutes 20

Needs what the sandbox needs (root or a delegated cgroup v2 group, bubblewrap >= 0.7).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import io
import logging
import math
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "server"), str(ROOT / "clients" / "python")]

from ziggurat.tournament.results import game_points  # noqa: E402
from ziggurat.tournament.runner import TournamentRunner  # noqa: E402
from ziggurat.tournament.store import TournamentStore  # noqa: E402

PLAYER = ROOT / "benchmarks" / "duplicate_memory" / "player.py"
CHEAT = "cheat"
PREFIX = "zdm-"  # the player's files (player.PREFIX)
HOST_SPOTS = (Path("/tmp"), Path("/var/tmp"), Path("/dev/shm"))  # where an unconfined cheat writes too
MOVE_LINE = re.compile(r"^move ply=\d+ knew=(\d+)$", re.M)
SUMMARY_LINE = re.compile(r"^CHEAT (.*)$", re.M)


def config_text(name: str, seed: str, deals: int, concurrency: int, memory: bool, home: Path) -> str:
    """The tournament: ``deals`` duplicate deals of cheat (memory on or off), greedy and plain."""
    player = f"['{sys.executable}', '{PLAYER.name}']"
    return f"""
name = "{name}"
seed = "{seed}"
game = "kabaleo"
seats = 3
format = "round_robin"
rounds = {deals}
concurrency = {concurrency}
duplicate = true

[disqualify]
max_failures = 1000  # a crash under load must not end the comparison: its deal is reported apart

[[participants]]
name = "{CHEAT}"
command = {player}
env = {{ MEMORY = "{int(memory)}", HOME = "{home}" }}

[[participants]]
name = "greedy"
builtin = "greedy"

[[participants]]
name = "plain"
command = {player}
env = {{ MEMORY = "0", HOME = "{home}" }}
"""


@dataclass
class Run:
    """One tournament of the benchmark and what its results and the cheat's logs say."""

    label: str
    seconds: float = 0.0
    games: dict[int, dict[str, Any]] = field(default_factory=dict)  # index -> result
    moves: int = 0
    knowing: int = 0  # moves made knowing at least one rival's objective
    knowing_all: int = 0  # ... knowing both
    written: Counter[str] = field(default_factory=Counter)  # spot -> games that could write there
    refused: Counter[str] = field(default_factory=Counter)  # spot(reason) -> games refused there
    found_in: Counter[str] = field(default_factory=Counter)  # spot -> rival objectives read there
    server_calls: int = 0
    server_answered: int = 0
    server_objectives: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)

    def cheat_points(self, index: int) -> float:
        result = self.games[index]
        return float(game_points(result)[result["seats"].index(CHEAT)])


def clean_host_spots() -> None:
    """Remove the player's files an unconfined run left in the host's shared directories."""
    for spot in HOST_SPOTS:
        with contextlib.suppress(OSError):
            for path in spot.glob(f"{PREFIX}*-*"):
                if path.is_file() and not path.is_symlink():
                    path.unlink(missing_ok=True)


async def play(
    work: Path, label: str, args: argparse.Namespace, deals: int, *, memory: bool, sandboxed: bool
) -> Run:
    """Run one tournament in ``work/label`` and read its results and the cheat's logs."""
    directory = work / label
    program = directory / "program"
    home = directory / "home"  # HOME of an unconfined run (a sandbox sets its own)
    for path in (directory, program, home):
        path.mkdir()
        path.chmod(0o777 if path == home else 0o755)  # the sandboxes' users read the program
    shutil.copy(PLAYER, program / PLAYER.name)
    (program / PLAYER.name).chmod(0o644)
    path = directory / "tournament.toml"
    # the program's cwd is the config's directory: "a file next to the config" is one in its cwd
    text = config_text("duplicate-memory", args.seed, deals, args.concurrency, memory, home)
    text = text.replace(f"'{PLAYER.name}'", f"'program/{PLAYER.name}'")
    path.write_text(text)
    db = work / "dbs" / f"{label}.db"
    done = 0

    def progress(result: dict[str, Any]) -> None:
        nonlocal done
        done += 1
        if done % 60 == 0:
            print(f"  {label}: {done}/{3 * deals} games", file=sys.stderr, flush=True)

    runner = TournamentRunner(
        db, config_text=text, config_path=path, show_progress=False, seed_text=args.seed, on_result=progress
    )
    if not sandboxed:
        # Refused by the configuration check with duplicate = true: replaced here on purpose.
        runner.config = dataclasses.replace(
            runner.config, sandbox=dataclasses.replace(runner.config.sandbox, enabled=False)
        )
        runner.config_text = text + "\n[sandbox]\nenabled = false\n"
    started = time.perf_counter()
    if args.minutes:
        # A time budget: no new deal is started once it is spent (the runner's own stop between
        # games, as an SPRT stop); the deals under way finish, so every recorded deal is whole.
        deadline = time.monotonic() + 60 * args.minutes
        sprt_stop = runner._sprt_stop

        def stop(by_pair: dict[tuple[str, str], list[dict[str, Any]]]) -> str | None:
            return sprt_stop(by_pair) or ("time budget" if time.monotonic() > deadline else None)

        runner._sprt_stop = stop  # type: ignore[method-assign]
    reason = await runner.run()
    run = Run(label, seconds=time.perf_counter() - started)
    if reason not in ("completed", "time budget"):
        raise RuntimeError(f"{label}: the tournament stopped: {reason}")
    store = TournamentStore(db)
    try:
        for row in store.games(runner.tournament_id):
            if row.result is not None:
                run.games[row.index] = row.result
    finally:
        store.close()
    for result in run.games.values():
        seat = result["seats"].index(CHEAT)
        run.verdicts[result["verdicts"][seat]] += 1
        log = runner.log_dir / f"{result['match_id']}-seat{seat + 1}.log"
        read_log(run, log.read_text(errors="replace") if log.exists() else "")
    return run


def read_log(run: Run, text: str) -> None:
    """Add what one game's cheat log says (its per-move lines and its summary line)."""
    for knew in MOVE_LINE.findall(text):
        run.moves += 1
        run.knowing += int(knew) >= 1
        run.knowing_all += int(knew) >= 2
    for line in SUMMARY_LINE.findall(text)[-1:]:
        fields = dict(part.split("=", 1) for part in line.split(" ") if "=" in part)
        for spot in filter(None, fields.get("written", "-").strip("-").split(",")):
            run.written[spot] += 1
        for spot in filter(None, fields.get("refused", "-").strip("-").split(",")):
            run.refused[spot] += 1
        for entry in filter(None, fields.get("found_in", "-").strip("-").split(",")):
            spot, _, count = entry.rpartition(":")
            run.found_in[spot] += int(count)
        run.server_calls += int(fields.get("server_calls", 0))
        run.server_answered += int(fields.get("server_answered", 0))
        run.server_objectives += int(fields.get("server_objectives", 0))


def whole_deals(run: Run, clean: bool = False) -> set[int]:
    """The deals of ``run`` whose every rotation (3) was played (``clean``: with every seat
    finishing normally, no crash, timeout or forfeit)."""
    count = Counter(
        result["deal"]
        for result in run.games.values()
        if not clean or all(v == "finished" for v in result["verdicts"])
    )
    return {deal for deal, games in count.items() if games == 3}


@dataclass(frozen=True)
class Gain:
    """The cheat's gain per game over its honest twin, by deal."""

    deals: int
    mean: float
    low: float
    high: float
    identical: int  # games whose moves were the same in both runs
    games: int

    @classmethod
    def of(cls, cheat: Run, twin: Run, clean: bool = False) -> Gain:
        by_deal: dict[int, list[float]] = {}
        identical = 0
        # a time budget may stop one run sooner; ``clean``: only deals every seat finished in both
        whole = whole_deals(cheat, clean) & whole_deals(twin, clean)
        games = [(i, r) for i, r in cheat.games.items() if r["deal"] in whole]
        for index, result in games:
            gain = cheat.cheat_points(index) - twin.cheat_points(index)
            by_deal.setdefault(result["deal"], []).append(gain)
            moves = [m["move"] for m in result["moves"]]
            identical += moves == [m["move"] for m in twin.games[index]["moves"]]
        per_deal = [sum(g) / len(g) for g in by_deal.values()]
        mean = statistics.fmean(per_deal)
        half = 1.96 * statistics.stdev(per_deal) / math.sqrt(len(per_deal)) if len(per_deal) > 1 else math.inf
        return cls(len(per_deal), mean, mean - half, mean + half, identical, len(games))


def report(title: str, cheat: Run, twin: Run, goal: str) -> None:
    gain = Gain.of(cheat, twin)
    points = sum(cheat.cheat_points(i) for i in cheat.games) / len(cheat.games)
    twin_points = sum(twin.cheat_points(i) for i in twin.games) / len(twin.games)
    print(f"\n== {title}")
    print(
        f"deals {gain.deals} whole in both runs ({gain.games} games); "
        f"wall {cheat.seconds:.0f} s with memory, "
        f"{twin.seconds:.0f} s without"
    )
    print(
        f"cheat {points:.4f} points/game, honest twin {twin_points:.4f}; gain {gain.mean:+.4f} "
        f"points/game, 95 % interval [{gain.low:+.4f}, {gain.high:+.4f}]  ({goal})"
    )
    print(f"games move for move identical in both runs: {gain.identical}/{gain.games}")
    clean = Gain.of(cheat, twin, clean=True)
    if clean.deals != gain.deals:
        print(
            f"over the {clean.deals} deals where every seat finished normally in both runs: gain "
            f"{clean.mean:+.4f}, 95 % interval [{clean.low:+.4f}, {clean.high:+.4f}]; identical games "
            f"{clean.identical}/{clean.games}"
        )
    print(
        f"cheat's moves knowing a rival's objective: {cheat.knowing}/{cheat.moves} "
        f"(both rivals: {cheat.knowing_all}); the twin: {twin.knowing}/{twin.moves}"
    )
    print(f"cheat's verdicts: {dict(cheat.verdicts)}; twin's: {dict(twin.verdicts)}")
    others = Counter(
        verdict
        for result in cheat.games.values()
        for verdict, name in zip(result["verdicts"], result["seats"], strict=True)
        if name != CHEAT
    )
    print(f"the other seats' verdicts beside the cheat: {dict(others)}")
    games = len(cheat.games)
    print(
        "where the cheat could write (games): "
        + (", ".join(f"{s} {n}/{games}" for s, n in sorted(cheat.written.items())) or "nowhere")
    )
    print("where it could not: " + (", ".join(f"{s} {n}" for s, n in sorted(cheat.refused.items())) or "-"))
    print(
        "rival objectives it read back: "
        + (", ".join(f"{s} {n}" for s, n in sorted(cheat.found_in.items())) or "none")
    )
    print(
        f"server: {cheat.server_calls} calls, {cheat.server_answered} answered, "
        f"{cheat.server_objectives} rival objectives of a sister rotation shown"
    )


async def main(args: argparse.Namespace) -> None:
    logging.basicConfig(level=args.log_level)
    print(
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start; seed {args.seed!r}, "
        f"concurrency {args.concurrency}, Kabaleo 3 seats, duplicate deals, untimed"
    )
    print(
        "participants: cheat (player.py, MEMORY=1, or its honest twin MEMORY=0), greedy (built-in), "
        "plain (player.py, MEMORY=0)"
    )
    with tempfile.TemporaryDirectory(prefix="ziggurat-dupmem-") as temp:
        work = Path(temp)
        work.chmod(0o755)
        (work / "dbs").mkdir()
        if args.only in (None, "sandboxed"):
            with contextlib.redirect_stdout(io.StringIO()):  # a line per game and the standings
                cheat, twin = await asyncio.gather(
                    play(work, "sandboxed-memory", args, args.deals, memory=True, sandboxed=True),
                    play(work, "sandboxed-twin", args, args.deals, memory=False, sandboxed=True),
                )
            report("sandboxed ([sandbox] as shipped)", cheat, twin, "goal: within +-0.03")
        if args.only in (None, "control"):
            print(
                "\ncontrol: [sandbox] enabled = false, which the configuration check refuses with "
                "duplicate = true; this benchmark builds that configuration object itself, "
                "bypassing the check"
            )
            clean_host_spots()  # what an earlier run with the same --seed may have left
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    cheat, twin = await asyncio.gather(
                        play(work, "control-memory", args, args.control_deals, memory=True, sandboxed=False),
                        play(work, "control-twin", args, args.control_deals, memory=False, sandboxed=False),
                    )
            finally:
                clean_host_spots()
            report("control (no sandbox)", cheat, twin, "expected: clearly positive")
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--deals", type=int, default=300, help="deals of the sandboxed pair (300; 3 games each)"
    )
    parser.add_argument(
        "--control-deals", type=int, default=100, help="deals of the unsandboxed control pair (100)"
    )
    parser.add_argument(
        "--seed", default="duplicate-memory", help="--seed TEXT of both runs of a pair (the set-ups)"
    )
    parser.add_argument("--concurrency", type=int, default=6, help="games at a time (6: two deals)")
    parser.add_argument(
        "--minutes",
        type=float,
        default=0.0,
        help="time budget of each pair: no deal starts after it (0: none); only whole deals count",
    )
    parser.add_argument("--log-level", default="ERROR", help="the tournaments' log level (ERROR)")
    parser.add_argument("--only", choices=("sandboxed", "control"), help="run one of the two pairs")
    asyncio.run(main(parser.parse_args()))
