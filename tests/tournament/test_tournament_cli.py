"""``ziggurat tournament`` as a real subprocess: kill -9 mid-way and resume; CLI errors."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests import processes
from tests.tournament.fixtures.harness import (
    FIXTURES,
    PYTHON,
    REPO,
    cli,
    comparable,
    done_count,
    run_tournament,
    stored_games,
    toml_list,
    verify_matches,
    write_config,
)
from ziggurat.core.manager import MatchManager
from ziggurat.store.sqlite import Store
from ziggurat.tournament.results import disqualified, format_standings, game_line, standings
from ziggurat.tournament.store import GameRow, TournamentStore

RESUMABLE = """
name = "resumable"
seed = "e2e-resume"
game = "pylos"
rounds = 3
concurrency = 2

[[participants]]
name = "r1"
builtin = "random"

[[participants]]
name = "r2"
builtin = "random"

[[participants]]
name = "g1"
builtin = "greedy"

[[participants]]
name = "r3"
builtin = "random"
"""
RUN = [PYTHON, "-m", "ziggurat.cli.main", "tournament", "run"]
GAMES = 36  # 6 pairings x 2 colours x 3 cycles


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux /proc), so the test can clean up what it started."""
    out: list[int] = []
    stack = [pid]
    while stack:
        current = stack.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                out.append(child)
                stack.append(child)
    return out


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
async def test_kill_9_mid_tournament_then_resume_matches_uninterrupted_run(tmp_path: Path) -> None:
    config = write_config(tmp_path, RESUMABLE)
    db = tmp_path / "killed.db"
    stderr_path = tmp_path / "run.stderr"
    orphans: list[int] = []
    with stderr_path.open("w") as stderr:
        process = processes.popen(
            [*RUN, str(config), "--db", str(db), "--quiet", "--seed", "private-rerun"],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        try:
            deadline = time.monotonic() + 60
            while done_count(db) < 5:
                assert process.poll() is None, stderr_path.read_text()
                assert time.monotonic() < deadline, "no game finished in time"
                time.sleep(0.01)
            orphans = descendants(process.pid)
            process.kill()  # kill -9: no cleanup at all
            process.wait(10)
        finally:
            processes.stop(process)
            # the launched bots were in their own sessions: they outlive a kill -9 of the runner
            kill_all(orphans)
    tournament_id = next(
        line.split()[2] for line in stderr_path.read_text().splitlines() if line.startswith("tournament id ")
    )
    before = stored_games(db, tournament_id)
    done_before = {g.index for g in before if g.status == "done"}
    assert len(before) == GAMES
    assert 5 <= len(done_before) < GAMES, "the kill came too late to test anything"
    cut_off = [g.match_id for g in before if g.status == "running"]

    listed = cli("tournament", "list", "--db", str(db), cwd=tmp_path)
    assert tournament_id in listed.stdout and "running" in listed.stdout

    resumed = cli("tournament", "resume", tournament_id, "--db", str(db), "--quiet", cwd=tmp_path, timeout=90)
    assert resumed.returncode == 0, resumed.stderr
    assert f"tournament {tournament_id}: completed" in resumed.stdout
    after = stored_games(db, tournament_id)
    assert [g.index for g in after] == list(range(GAMES))
    assert all(g.status == "done" and g.result is not None for g in after)
    results = [g.result for g in after if g.result is not None]
    assert [r["index"] for r in results] == list(range(GAMES))  # each game once, none lost
    # games finished before the kill kept their results; cut-off games were replayed in new matches
    for game in before:
        if game.status == "done":
            assert after[game.index].result == game.result
    match_ids = [r["match_id"] for r in results]
    assert len(set(match_ids)) == GAMES
    assert not set(cut_off) & set(match_ids)
    store = Store(db)
    try:
        statuses = {m: store.load(m) for m in cut_off if m}
        for match_id, stored in statuses.items():
            assert stored is not None, match_id
    finally:
        store.close()
    verify_matches(db, [m for m in cut_off if m])  # the aborted matches verify too (no result)

    # the same --seed replays the same set-ups: every game not cut off is the uninterrupted run's;
    # a game cut off was replayed as a new attempt with a fresh seed (its old one was published)
    reference = await run_tournament(config, tmp_path / "reference.db", timeout=90, seed_text="private-rerun")
    assert reference.reason == "completed"
    expected = reference.results()
    replayed = {g.index for g in before if g.status == "running"}
    assert replayed and {r["index"] for r in results if r["attempt"] == 1} == replayed
    for result, uninterrupted in zip(results, expected, strict=True):
        if result["index"] in replayed:
            assert result["revealed_seed"] != uninterrupted["revealed_seed"]
            assert [a["match_id"] for a in result["replaced"]] == [before[result["index"]].match_id]
        else:
            assert comparable(result) == comparable(uninterrupted)
    verify_matches(db, match_ids)


def test_cli_errors(tmp_path: Path) -> None:
    bad = write_config(tmp_path, 'name = "x"\nseed = "s"\ngame = "pylos"\nconcurency = 2\n', "bad.toml")
    run = cli("tournament", "run", str(bad), "--db", str(tmp_path / "t.db"), cwd=tmp_path)
    assert run.returncode == 2
    assert "error:" in run.stderr
    missing = cli(
        "tournament", "run", str(tmp_path / "nope.toml"), "--db", str(tmp_path / "t.db"), cwd=tmp_path
    )
    assert missing.returncode == 2 and "nope.toml" in missing.stderr
    for action in ("resume", "standings"):
        absent = cli("tournament", action, "deadbeef", "--db", str(tmp_path / "absent.db"), cwd=tmp_path)
        assert absent.returncode == 2 and "no database file" in absent.stderr, action
        assert not (tmp_path / "absent.db").exists()  # a mistyped --db creates nothing
    TournamentStore(tmp_path / "t.db").close()
    for action in ("resume", "standings"):
        unknown = cli("tournament", action, "deadbeef", "--db", str(tmp_path / "t.db"), cwd=tmp_path)
        assert unknown.returncode == 2, action
        assert "no tournament" in unknown.stderr
    no_target = cli("tournament", "export", "deadbeef", "--db", str(tmp_path / "t.db"), cwd=tmp_path)
    assert no_target.returncode == 2
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    nothing = cli("replay", str(empty), cwd=tmp_path)
    assert nothing.returncode == 1 and nothing.stderr == f"error: {empty} holds no games\n"
    assert cli("replay", str(tmp_path / "absent.jsonl"), cwd=tmp_path).returncode == 2


KABALEO_RESUMABLE = """
name = "kabaleo-resumable"
seed = "public-schedule-seed"
game = "kabaleo"
seats = 3
rounds = 2
concurrency = 3
duplicate = true

[time_control]
per_move_ms = 5000
on_timeout = "random_move"

[[participants]]
name = "r1"
builtin = "random"

[[participants]]
name = "r2"
builtin = "random"

[[participants]]
name = "g1"
builtin = "greedy"

[[participants]]
name = "r3"
builtin = "random"
"""
KABALEO_GAMES = 24  # 4 tables x 3 rotations x 2 cycles


def running_count(db: Path) -> int:
    """Games marked running, read with sqlite3 (the tournament process is writing)."""
    with sqlite3.connect(db, timeout=5) as conn:
        try:
            return int(
                conn.execute("SELECT COUNT(*) FROM tournament_games WHERE status='running'").fetchone()[0]
            )
        except sqlite3.OperationalError:
            return 0


def revealed_seeds(db: Path) -> dict[str, str]:
    """Every match's revealed seed (finished or aborted matches only), by match id."""
    store = Store(db)
    try:
        manager = MatchManager(store)
        out = {}
        for match_id in store.list_ids(status=None, game=None, limit=1_000_000):
            match = manager.get(match_id)
            if match.revealed_seed is not None:
                out[match_id] = match.revealed_seed.hex()
        manager.close()
        return out
    finally:
        store.close()


def _killed_mid_game(tmp_path: Path, config: Path) -> tuple[Path, str, list[GameRow]] | None:
    """Run the tournament and kill -9 it while a game is running: (db, tournament id, the games
    as stored), or None when the kill landed between games after all (a game can end between
    the check and the kill: random bots finish a Kabaleo game in milliseconds)."""
    db = tmp_path / "killed.db"
    stderr_path = tmp_path / "run.stderr"
    with stderr_path.open("w") as stderr:
        process = processes.popen(
            [PYTHON, "-m", "ziggurat.cli.main", "tournament", "run", str(config), "--db", str(db), "--quiet"],
            cwd=tmp_path,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        orphans: list[int] = []
        try:
            deadline = time.monotonic() + 180  # duplicate deals: a game per process, and a deal ends whole
            while done_count(db) < 2 or not running_count(db):  # mid-game: some game is running
                assert process.poll() is None, stderr_path.read_text()
                assert time.monotonic() < deadline, "no game finished in time"
                time.sleep(0.01)
            orphans = descendants(process.pid)
            process.kill()
            process.wait(10)
        finally:
            processes.stop(process)
            kill_all(orphans)
    tournament_id = next(
        line.split()[2] for line in stderr_path.read_text().splitlines() if line.startswith("tournament id ")
    )
    before = stored_games(db, tournament_id)
    return (db, tournament_id, before) if any(g.status == "running" for g in before) else None


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
async def test_kill_9_mid_kabaleo_game_then_resume_replays_with_a_seed_never_revealed(tmp_path: Path) -> None:
    config = write_config(tmp_path, KABALEO_RESUMABLE)
    killed = None
    for attempt in range(3):  # a fresh run when the kill landed between games
        run_dir = tmp_path / f"run{attempt}"
        run_dir.mkdir()
        killed = _killed_mid_game(run_dir, config)
        if killed is not None:
            break
    assert killed is not None, "three kills in a row came between games: nothing to test"
    db, tournament_id, before = killed
    cut_off = {g.index: g for g in before if g.status == "running"}
    # what anyone could have learnt before the resume: every seed revealed so far, plus the seeds
    # of the cut-off matches, which the resume publishes when it aborts them
    known = set(revealed_seeds(db).values())
    store = Store(db)
    try:
        known |= {store.load(g.match_id).seed.hex() for g in cut_off.values() if g.match_id}  # type: ignore[union-attr]
    finally:
        store.close()

    resumed = cli(
        "tournament", "resume", tournament_id, "--db", str(db), "--quiet", cwd=tmp_path, timeout=120
    )
    assert resumed.returncode == 0, resumed.stderr
    after = stored_games(db, tournament_id)
    assert all(g.status == "done" for g in after) and len(after) == KABALEO_GAMES
    replayed = [g for g in after if g.attempt > 0]
    cut_deals = {g.spec["deal"] for g in cut_off.values()}
    # a cut-off rotation takes its whole deal with it: every rotation is replayed on the fresh deal
    assert {g.index for g in replayed} == {g.index for g in after if g.spec["deal"] in cut_deals}
    for game in replayed:
        assert game.result is not None
        assert game.result["revealed_seed"] not in known, "a replay was played on a seed already public"
        assert game.spec["seed"] == game.result["revealed_seed"]
        assert game.result["attempt"] == game.attempt == 1
    by_deal: dict[int, set[str]] = {}
    for game in after:
        assert game.result is not None
        by_deal.setdefault(game.spec["deal"], set()).add(game.result["revealed_seed"])
    assert all(len(seeds) == 1 for seeds in by_deal.values()), "the rotations of a deal share one deal"
    # both attempts are on record: the aborted match and the replay
    for index, game in cut_off.items():
        assert after[index].result is not None
        assert game.match_id in [a["match_id"] for a in after[index].result["replaced"]]  # type: ignore[index]
    verify_matches(db, [g.result["match_id"] for g in after if g.result])
    verify_matches(db, [g.match_id for g in cut_off.values() if g.match_id])


FORFEITS = """
name = "forfeits"
seed = "e2e-forfeits"
game = "pylos"
rounds = 2
concurrency = 1

[options]
max_moves = 40

[time_control]
base_ms = 60000

[disqualify]
max_failures = 1

[[participants]]
name = "house"
builtin = "random"
"""


def test_one_numbering_double_forfeits_and_standings_from_the_export(tmp_path: Path) -> None:
    """A run as its organiser sees it: two crashers are disqualified in the first cycle, so they
    forfeit their games of the second against each other (double forfeits). The lines, the export,
    the replay and the standings agree, and the standings recomputed from the file are the run's."""
    crasher = [PYTHON, str(FIXTURES / "grpc_bot.py"), "crash:1"]
    body = FORFEITS + entrant("c1", "command", crasher) + entrant("c2", "command", crasher)
    config = write_config(tmp_path, body)
    db = tmp_path / "t.db"
    run = cli(*RUN[3:], str(config), "--db", str(db), "--quiet", cwd=tmp_path, timeout=120)
    assert run.returncode == 0, run.stderr
    tournament_id = next(
        line.split()[2] for line in run.stderr.splitlines() if line.startswith("tournament id ")
    )
    jsonl, summary_json = tmp_path / "games.jsonl", tmp_path / "summary.json"
    exported = cli(
        "tournament", "export", tournament_id, "--db", str(db), "--jsonl", str(jsonl), "--json",
        str(summary_json), cwd=tmp_path,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert [r["index"] for r in records] == list(range(12))

    # one numbering: `Finished game N` is the exported index N, and `replay --game N` shows it
    lines = [line for line in run.stdout.splitlines() if line.startswith("Finished game ")]
    assert sorted(lines) == sorted(game_line(r) for r in records)
    one = cli("replay", str(jsonl), "--game", "3", "--final", cwd=tmp_path)
    assert one.returncode == 0 and one.stdout.startswith("== game 3 "), one.stderr
    missing = cli("replay", str(jsonl), "--game", "12", cwd=tmp_path)
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.splitlines() == [
        f"error: no game 12 in {jsonl} (it holds games 0 to 11; games are numbered from 0)"
    ]

    # the double forfeits: no match, no winner, 0 points each, printed 0-0
    double = [r for r in records if r["verdicts"] == ["disqualified", "disqualified"]]
    assert len(double) == 2 and all(set(r["seats"]) == {"c1", "c2"} for r in double)
    for record in double:
        assert record["ranks"] == [2, 2] and record["points"] == [0.0, 0.0]
        assert record["match_id"] is None and record["moves"] == []
        assert f"Finished game {record['index']} ({' vs '.join(record['seats'])}): 0-0 " in run.stdout
    replayed = cli("replay", str(jsonl), "--final", cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.count("== game ") == 12 and replayed.stdout.count("-- not played") == 2

    # the standings recomputed from the exported file alone are the ones the run printed
    names = ["house", "c1", "c2"]
    recomputed = format_standings(standings(names, records, disqualified(records, 1)))
    assert recomputed in run.stdout
    summary = json.loads(summary_json.read_text())
    order = [row.name for row in standings(names, records, {"c1", "c2"})]
    assert [row["name"] for row in summary["standings"]] == order
    totals = dict.fromkeys(names, 0.0)
    for record in records:
        for name, points in zip(record["seats"], record["points"], strict=True):
            totals[name] += points
    assert {row["name"]: row["points"] for row in summary["standings"]} == totals

    # times: the game's start and end, each move's server time, time spent and clock after it
    for record in records:
        if record["match_id"] is None:
            assert record["start_ms"] is None and record["end_ms"] is None
            continue
        start, end = record["start_ms"], record["end_ms"]
        assert start <= end
        times = [move["time_ms"] for move in record["moves"]]
        assert times == sorted(times) and all(start <= t <= end for t in times)
        for move in record["moves"]:
            assert move["spent_ms"] is not None and 0 <= move["spent_ms"] <= move["time_ms"] - start
            assert 0 < move["clock_ms"] <= 60000


def entrant(name: str, kind: str, argv: list[str], extra: str = "") -> str:
    """A ``[[participants]]`` table of a configuration."""
    return f"\n[[participants]]\nname = '{name}'\n{kind} = {toml_list(argv)}\n{extra}\n"


@pytest.mark.slow
def test_a_run_ends_without_traceback_text(tmp_path: Path) -> None:
    """Every kind of participant, one that never answers among them (its bridge is cut off at the
    end of each game and its program killed): the run's stderr has its own lines only — no
    ``Exception ignored … Event loop is closed`` from a transport finalized after the loop closed,
    no traceback of any kind."""
    body = """
name = "clean-end"
seed = "e2e-clean-end"
game = "pylos"
concurrency = 2

[options]
max_moves = 30

[time_control]
per_move_ms = 1000
on_timeout = "forfeit"

[[participants]]
name = "house"
builtin = "random"
"""
    body += entrant("sh", "stdio", ["sh", str(REPO / "examples/stdio/random_bot.sh")])
    body += entrant("grpc", "command", [PYTHON, str(FIXTURES / "grpc_bot.py"), "random"])
    body += entrant(
        "kept", "command", [PYTHON, str(FIXTURES / "remote_bot.py"), "random"], "keep_alive = true"
    )
    body += entrant("spinner", "stdio", [PYTHON, str(FIXTURES / "stdio_rogue.py"), "spin"])
    config = write_config(tmp_path, body)
    run = cli(*RUN[3:], str(config), "--db", str(tmp_path / "t.db"), "--quiet", cwd=tmp_path, timeout=240)
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("Finished game ") == 20 and "completed" in run.stdout
    for text in ("Traceback", "Exception ignored", "Event loop is closed", "RuntimeError"):
        assert text not in run.stderr, run.stderr
