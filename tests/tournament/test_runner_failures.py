"""Misbehaving participants: crashes, hangs, illegal moves, dropped connections, disqualification.

Every tournament here must end (``run_tournament`` bounds it), every seat gets the verdict its
participant earned, and the games still verify.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from pathlib import Path

import pytest

from tests.tournament.fixtures.harness import (
    FIXTURES,
    PYTHON,
    cli,
    run_tournament,
    toml_list,
    verify_matches,
    write_config,
)
from ziggurat.tournament.config import load_config
from ziggurat.tournament.results import crosstable, game_points, standings, withdrawals
from ziggurat.tournament.runner import spec_from_dict
from ziggurat.tournament.schedule import swiss_byes

GRPC_BOT = str(FIXTURES / "grpc_bot.py")
REMOTE_BOT = str(FIXTURES / "remote_bot.py")


def participant(name: str, kind: str, argv: list[str], extra: str = "") -> str:
    return f"\n[[participants]]\nname = '{name}'\n{kind} = {toml_list(argv)}\n{extra}"


def verdicts_by_name(results: list[dict[str, object]]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for result in results:
        for name, verdict in zip(result["seats"], result["verdicts"], strict=True):  # type: ignore[call-overload]
            out[name].append(verdict)
    return out


@pytest.mark.slow
async def test_verdicts_of_misbehaving_participants(tmp_path: Path) -> None:
    body = """
name = "misbehaving"
seed = "e2e-misbehaving"
game = "pylos"
format = "gauntlet"
concurrency = 2

[gauntlet]
champion = "house"

[options]
max_moves = 40

[time_control]
per_move_ms = 3000  # room for a per-game program to start: its first clock runs meanwhile
on_timeout = "forfeit"
max_illegal_moves = 2
disconnect_grace_ms = 200

[disqualify]
max_failures = 0

[[participants]]
name = "house"
builtin = "random"
"""
    body += participant("crasher", "command", [PYTHON, GRPC_BOT, "crash:2"])
    body += participant("hanger", "command", [PYTHON, GRPC_BOT, "hang"])
    body += participant("cheat-grpc", "command", [PYTHON, GRPC_BOT, "illegal"])
    body += participant("cheat-sh", "stdio", ["sh", str(FIXTURES / "stdio_illegal.sh")])
    body += participant("quitter-sh", "stdio", ["sh", str(FIXTURES / "stdio_crash.sh")])
    body += participant("dropper", "command", [PYTHON, REMOTE_BOT, "drop"], "keep_alive = true")
    body += participant("phoenix", "command", [PYTHON, REMOTE_BOT, "crash-once"], "keep_alive = true")
    config = write_config(tmp_path, body)
    db = tmp_path / "t.db"
    done = await run_tournament(config, db, timeout=80)
    assert done.reason == "completed"
    results = done.results()
    assert len(results) == 14  # 7 challengers x a colour-swapped pair
    verdicts = verdicts_by_name(results)
    assert set(verdicts["house"]) == {"finished"}
    assert verdicts["crasher"] == ["crashed"] * 2
    assert verdicts["hanger"] == ["timeout"] * 2
    assert verdicts["cheat-grpc"] == ["illegal"] * 2
    assert verdicts["cheat-sh"] == ["illegal"] * 2
    assert verdicts["quitter-sh"] == ["crashed"] * 2
    assert verdicts["dropper"] == ["disconnected"] * 2
    # the keep-alive program crashed in its first game, was restarted and played the second
    assert verdicts["phoenix"] == ["crashed", "finished"]  # its process died: not a mere disconnect
    assert "crashing mid-game" in (done.runner.log_dir / "phoenix.log").read_text()
    for result in results:
        failed = [i for i, v in enumerate(result["verdicts"]) if v != "finished"]
        if failed and result["termination"] != "move_limit":
            # a Pylos seat that fails loses; the house wins
            assert result["ranks"][failed[0]] == 2, result
    table = standings(
        ["house", "crasher", "hanger", "cheat-grpc", "cheat-sh", "quitter-sh", "dropper", "phoenix"], results
    )
    rows = {row.name: row for row in table}
    assert rows["house"].rank == 1 and rows["house"].points >= 12
    assert rows["crasher"].failures == {"crashed": 2}
    assert rows["dropper"].failures == {"disconnected": 2}
    assert not any(row.disqualified for row in table)  # max_failures = 0: never
    verify_matches(db, [r["match_id"] for r in results])


async def test_kabaleo_game_goes_on_without_a_crashed_seat(tmp_path: Path) -> None:
    body = """
name = "kabaleo-crash"
seed = "e2e-kabaleo-crash"
game = "kabaleo"
seats = 3
duplicate = true
concurrency = 2

[time_control]
per_move_ms = 2000

[[participants]]
name = "r1"
builtin = "random"

[[participants]]
name = "r2"
builtin = "greedy"
"""
    body += participant("crasher", "command", [PYTHON, GRPC_BOT, "crash:1"])
    config = write_config(tmp_path, body)
    db = tmp_path / "t.db"
    done = await run_tournament(config, db, timeout=60)
    assert done.reason == "completed"
    results = done.results()
    assert len(results) == 3
    for result in results:
        seat = result["seats"].index("crasher")
        assert result["verdicts"][seat] == "crashed"
        assert result["ranks"][seat] == 3  # ranks last; the others played the game out
        assert [v for i, v in enumerate(result["verdicts"]) if i != seat] == ["finished", "finished"]
        assert result["termination"] != "aborted"
    verify_matches(db, [r["match_id"] for r in results])


async def test_disqualification_after_max_failures(tmp_path: Path) -> None:
    body = """
name = "dq"
seed = "e2e-dq"
game = "pylos"
rounds = 4
concurrency = 2

[options]
max_moves = 40

[disqualify]
max_failures = 2

[[participants]]
name = "house"
builtin = "random"
"""
    body += participant("crasher", "command", [PYTHON, GRPC_BOT, "crash:1"])
    config = write_config(tmp_path, body)
    db = tmp_path / "t.db"
    done = await run_tournament(config, db, timeout=60)
    assert done.reason == "completed"
    results = done.results()
    assert len(results) == 8
    verdicts = verdicts_by_name(results)["crasher"]
    crashed = verdicts.count("crashed")
    # disqualified once 2 games are crashed; a game already under way when it happened may crash too
    assert 2 <= crashed <= 3
    assert verdicts[:crashed] == ["crashed"] * crashed
    assert verdicts[crashed:] == ["disqualified"] * (8 - crashed)
    for result in results:
        seat = result["seats"].index("crasher")
        assert result["ranks"][seat] == 2
        if result["verdicts"][seat] == "disqualified":
            assert result["moves"] == []  # forfeited before it began
    table = standings(["house", "crasher"], results, done.runner.disqualified)
    assert done.runner.disqualified == {"crasher"}
    assert [row.name for row in table] == ["house", "crasher"]
    assert table[1].disqualified
    shown = cli("tournament", "standings", done.tournament_id, "--db", str(db), cwd=tmp_path)
    assert shown.returncode == 0
    line = next(line for line in shown.stdout.splitlines() if "crasher" in line and "DISQUALIFIED" in line)
    assert f"{crashed} crashed" in line
    csv = tmp_path / "s.csv"
    assert (
        cli(
            "tournament", "export", done.tournament_id, "--db", str(db), "--csv", str(csv), cwd=tmp_path
        ).returncode
        == 0
    )
    assert csv.read_text().splitlines()[2].endswith(",True")
    verify_matches(db, [r["match_id"] for r in results])


async def test_a_disqualified_participant_leaves_the_swiss_draw(tmp_path: Path) -> None:
    body = """
name = "swiss-dq"
seed = "e2e-swiss-dq"
game = "pylos"
format = "swiss"
rounds = 3
concurrency = 2

[options]
max_moves = 40

[disqualify]
max_failures = 1

[[participants]]
name = "a"
builtin = "greedy"

[[participants]]
name = "b"
builtin = "random"

[[participants]]
name = "c"
builtin = "random"
"""
    body += participant("x", "command", [PYTHON, GRPC_BOT, "crash:1"])
    done = await run_tournament(write_config(tmp_path, body), tmp_path / "t.db", timeout=90)
    assert done.reason == "completed"
    results = done.results()
    assert done.runner.disqualified == {"x"}
    out = withdrawals(results, 1)
    assert out == {"x": 2}  # it crashed in round 1
    assert all("x" not in r["seats"] for r in results if r["round"] >= 2)
    config = load_config(tmp_path / "tournament.toml")
    specs = [(spec_from_dict(g.spec), g.result["ranks"]) for g in done.games() if g.result]
    byes = swiss_byes(config, specs, out)
    assert set(byes) == {2, 3} and "x" not in byes.values()  # 3 players left: a bye each round
    rows = {row.name: row for row in standings(["a", "b", "c", "x"], results, done.runner.disqualified)}
    assert rows["x"].disqualified and rows["x"].rank == 4 and rows["x"].games == 2
    forfeited = [r for r in results if "disqualified" in r["verdicts"]]
    assert rows["x"].forfeits == len(forfeited) <= 1  # its second game, if it had not begun


@pytest.mark.slow
async def test_kabaleo_forfeits_in_duplicate_deals(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Two crashers are disqualified early: later tables hold one forfeiting seat (the two seats
    that played stay rated against each other) or two (the held rotation is decided at its start
    and the one seat left wins it; no ERROR is logged). The turn such a decided rotation used to
    leave its healthy seat is tested on the match itself in tests/core/test_decide_evolve.py."""
    body = """
name = "kabaleo-forfeits"
seed = "e2e-kabaleo-forfeits"
game = "kabaleo"
seats = 3
duplicate = true
concurrency = 1

[time_control]
per_move_ms = 3000

[disqualify]
max_failures = 1

[[participants]]
name = "r1"
builtin = "random"

[[participants]]
name = "r2"
builtin = "greedy"
"""
    body += participant("c1", "command", [PYTHON, GRPC_BOT, "crash:1"])
    body += participant("c2", "command", [PYTHON, GRPC_BOT, "crash:1"])
    caplog.set_level(logging.WARNING)
    done = await run_tournament(write_config(tmp_path, body), tmp_path / "t.db", timeout=120)
    assert done.reason == "completed" and done.runner.disqualified == {"c1", "c2"}
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    results = done.results()
    assert len(results) == 12  # 4 tables of 3, each deal in 3 rotations
    one = [r for r in results if r["verdicts"].count("disqualified") == 1]
    two = [r for r in results if r["verdicts"].count("disqualified") == 2]
    assert one and two
    for result in one + two:
        healthy = [i for i, name in enumerate(result["seats"]) if name in ("r1", "r2")]
        assert all(result["verdicts"][i] == "finished" for i in healthy)  # no strike, no refused move
        if result["verdicts"].count("disqualified") == 2:
            assert result["ranks"][healthy[0]] == 1  # decided at the start: the one seat left wins
        assert result["termination"] != "aborted" and result["points"] == game_points(result)
    # r1 and r2 always played: every game of theirs together is a rated comparison, forfeit
    # tables included (those used to be left out whole)
    together = [r for r in results if {"r1", "r2"} <= set(r["seats"])]
    assert any("disqualified" in r["verdicts"] for r in together)
    cells = crosstable(["r1", "r2", "c1", "c2"], results)
    assert cells["r1"]["r2"][1] == len(together)
    verify_matches(tmp_path / "t.db", [r["match_id"] for r in results if r["match_id"] is not None])
