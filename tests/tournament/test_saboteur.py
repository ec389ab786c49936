"""A tournament with a saboteur: a ``command`` participant that, at every one of its turns, tries
to create, cancel, join and fill matches, invite and list the rivals' bots, list and read other
games and the tournament, and take a rival's bot name — on the Unix socket from inside its
sandbox, and on the gRPC port and the web port when it runs unconfined (the sandbox has no
network, which the confined run checks too). Every attempt must be refused, and every game and
verdict must be the same as in a run where the same program plays the same moves without
attacking (``--seed`` and deterministic built-in bots make the runs comparable).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.tournament.fixtures.harness import (
    FIXTURES,
    PYTHON,
    make_runner,
    stored_games,
    toml_list,
    write_config,
)
from ziggurat.store.sqlite import Store
from ziggurat.tournament.runner import TournamentRunner

REFUSED = "NOT_ALLOWED_IN_COMPETITION"
SEED = "saboteur-seed"
CONFIG = """
name = "saboteur"
seed = "saboteur"
game = "pylos"
concurrency = 2

[options]
max_moves = 12

[time_control]
per_move_ms = 30000

[server]
http_port = 0

[sandbox]
enabled = {sandboxed}

[[participants]]
name = "saboteur"
command = {command}
read_only = ['{intel_dir}']
env = {{ SABOTEUR_INTEL = '{intel}' }}

[[participants]]
name = "greedy"
builtin = "greedy"

[[participants]]
name = "random"
builtin = "random"
"""
# What the saboteur must have tried on every listener it reached.
TRIED = {
    "CreateMatch",
    "CancelMatch",
    "JoinMatch",
    "AddBot",
    "InviteBot",
    "ListBots",
    "ListMatches",
    "GetMatch",
    "WatchMatch",
    "GetMatchRecord",
    "ListTournaments",
    "GetTournament",
    "ConnectBot",
}


async def _keep_intel(runner: TournamentRunner, intel: Path) -> None:
    """What any spectator of the tournament knows, kept where the saboteur reads it: the ports,
    the tournament's id, its bots' names, the matches being played."""
    while True:
        server = runner.server
        if server is not None and runner.address is not None:
            known = {
                "tcp": runner.address,
                "web": f"http://127.0.0.1:{server.http_port}",
                "tournament": runner.tournament_id,
                "bots": [runner.bot_name(p) for p in runner.config.participants if p.kind == "builtin"],
                "matches": sorted(server.manager.live),
            }
            fresh = intel.with_suffix(".new")
            fresh.write_text(json.dumps(known))
            fresh.replace(intel)
        await asyncio.sleep(0.02)


async def _run(tmp_path: Path, name: str, *, mode: str, sandboxed: bool) -> tuple[list[dict[str, Any]], Path]:
    """One tournament; its results and its log directory."""
    where = tmp_path / name
    where.mkdir(mode=0o755)
    intel_dir = where / "intel"
    intel_dir.mkdir(mode=0o755)
    intel = intel_dir / "intel.json"
    intel.write_text("{}")
    intel.chmod(0o644)
    body = CONFIG.format(
        sandboxed="true" if sandboxed else "false",
        command=toml_list([PYTHON, str(FIXTURES / "saboteur.py"), mode]),
        intel_dir=intel_dir,
        intel=intel,
    )
    config = write_config(where, body)
    db = where / "t.db"
    runner = make_runner(config, db, seed_text=SEED, page_linger=0)
    keeper = asyncio.create_task(_keep_intel(runner, intel))
    try:
        reason = await asyncio.wait_for(runner.run(), 150)
    finally:
        keeper.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await keeper
    assert reason == "completed"
    store = Store(db)
    try:
        created = len(store.match_ids())
    finally:
        store.close()
    games = [row.result for row in stored_games(db, runner.tournament_id) if row.result is not None]
    assert len(games) == 6
    # Only the organiser's matches exist: not one was created, over any listener, by anyone else.
    assert created == len(games)
    return games, runner.log_dir


def _played(results: list[dict[str, Any]]) -> dict[int, tuple[Any, ...]]:
    """Each game as it was played and judged (match ids and seeds aside, which differ by run)."""
    return {
        r["index"]: (
            tuple(r["seats"]),
            tuple(m["move"] for m in r["moves"]),
            r["termination"],
            tuple(r["ranks"]),
            tuple(r["verdicts"]),
        )
        for r in results
    }


def _attempts(log_dir: Path) -> list[dict[str, Any]]:
    found = []
    for log in sorted(log_dir.glob("*-seat*.log")):
        for line in log.read_text().splitlines():
            if line.startswith("ATTEMPT "):
                found.append(json.loads(line.removeprefix("ATTEMPT ")))
    return found


def _expected(attempt: dict[str, Any]) -> str:
    if attempt["call"] == "ConnectBotAsRival":
        return "BAD_TOKEN"  # the tournament's own name: the token decides, and it is not the rival's
    if attempt["listener"] == "web" and attempt["call"] == "ConnectBot":
        return "UNIMPLEMENTED"  # a bot's own stream is not served to browsers at all
    return REFUSED


@pytest.mark.slow
async def test_a_saboteur_changes_nothing_on_any_listener(tmp_path: Path) -> None:
    honest, _ = await _run(tmp_path, "honest", mode="honest", sandboxed=True)
    inside, inside_logs = await _run(tmp_path, "inside", mode="attack", sandboxed=True)
    outside, outside_logs = await _run(tmp_path, "outside", mode="attack", sandboxed=False)

    for run, logs, listeners in (
        ("sandboxed", inside_logs, {"socket", "grpc"}),
        ("unconfined", outside_logs, {"grpc", "web"}),
    ):
        attempts = _attempts(logs)
        assert {a["listener"] for a in attempts} == listeners, run
        for listener in listeners:
            tried = {a["call"] for a in attempts if a["listener"] == listener}
            assert tried >= TRIED, (run, listener, TRIED - tried)
        answers = Counter(
            (a["listener"], a["call"], a["answer"]) for a in attempts if a["answer"] != _expected(a)
        )
        if run == "sandboxed":
            # the ports are out of a sandbox's reach altogether: no network
            assert {key[0] for key in answers} <= {"grpc"} and {key[2] for key in answers} == {"unreachable"}
        else:
            assert not answers, answers
        # at every turn, with the intel a spectator has (the rivals' names, the other games)
        assert sum(1 for a in attempts if a["call"] == "InviteBot") >= 2 * 10, run

    # The saboteur changed nothing: every game, move by move, and every verdict is the honest run's.
    assert _played(inside) == _played(honest)
    assert _played(outside) == _played(honest)
    assert all(verdict == "finished" for r in honest for verdict in r["verdicts"])
