"""End-to-end tournaments of built-in bots: real server, real bot processes, a real database file."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from tests.tournament.fixtures.harness import cli, run_tournament, verify_matches, write_config
from ziggurat.tournament.config import load_config
from ziggurat.tournament.results import seat_points, standings
from ziggurat.tournament.runner import spec_from_dict
from ziggurat.tournament.schedule import plan, swiss_byes

ROUND_ROBIN = """
name = "builtin-rr"
seed = "e2e-builtin"
game = "pylos"
rounds = 2
concurrency = 2

[[participants]]
name = "random"
builtin = "random"

[[participants]]
name = "greedy"
builtin = "greedy"
"""


async def test_builtin_round_robin_standings_records_exports_replay(tmp_path: Path) -> None:
    config = write_config(tmp_path, ROUND_ROBIN)
    db = tmp_path / "t.db"
    done = await run_tournament(config, db)
    assert done.reason == "completed"
    games = done.games()
    assert [g.index for g in games] == [0, 1, 2, 3]
    assert all(g.status == "done" for g in games)
    results = done.results()
    # every game is a colour-swapped pair member; each bot sat both colours of each pair
    pairs: dict[int, list[tuple[str, ...]]] = defaultdict(list)
    for result in results:
        assert result["verdicts"] == ["finished", "finished"]
        assert result["termination"] != "aborted"
        pairs[result["pair"]].append(tuple(result["seats"]))
    assert sorted(pairs) == [0, 2]
    for seatings in pairs.values():
        assert sorted(seatings) == [("greedy", "random"), ("random", "greedy")]

    table = standings(["random", "greedy"], results)
    assert {row.name: row.games for row in table} == {"random": 4, "greedy": 4}
    points: dict[str, float] = defaultdict(float)
    for result in results:
        for name, p in zip(result["seats"], seat_points(result["ranks"]), strict=True):
            points[name] += p
    assert {row.name: row.points for row in table} == dict(points)
    assert sum(points.values()) == 4.0
    assert [row.rank for row in table] == [1, 2]
    assert table[0].score >= table[1].score
    assert not any(row.failures or row.disqualified for row in table)

    verify_matches(db, [r["match_id"] for r in results])

    tid = done.tournament_id
    listing = cli("tournament", "list", "--db", str(db), cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    assert tid in listing.stdout and "finished" in listing.stdout and "4/4" in listing.stdout
    shown = cli("tournament", "standings", tid[:6], "--db", str(db), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "builtin-rr" in shown.stdout and "completed" in shown.stdout
    assert "random vs greedy" in shown.stdout  # head-to-head line of a 2-participant tournament

    jsonl, summary_json, csv = tmp_path / "games.jsonl", tmp_path / "summary.json", tmp_path / "s.csv"
    exported = cli(
        "tournament", "export", tid, "--db", str(db), "--jsonl", str(jsonl), "--json", str(summary_json),
        "--csv", str(csv), cwd=tmp_path,
    )  # fmt: skip
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert [line["index"] for line in lines] == [0, 1, 2, 3]
    assert lines == results
    summary = json.loads(summary_json.read_text())
    assert summary["games"] == 4
    assert summary["verdicts"] == {"finished": 8}
    assert {row["name"]: row["points"] for row in summary["standings"]} == dict(points)
    assert summary["crosstable"]["random"]["greedy"]["games"] == 4
    assert summary["crosstable"]["random"]["greedy"]["points"] == points["random"]
    rows = csv.read_text().splitlines()
    assert rows[0].startswith("rank,bot,games,points")
    assert len(rows) == 3
    assert rows[1].split(",")[1] == table[0].name

    replayed = cli("replay", str(jsonl), "--final", cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.count("== game") == 4
    one = cli("replay", str(jsonl), "--game", "2", cwd=tmp_path)
    assert one.returncode == 0 and one.stdout.count("== game") == 1

    # a tampered export does not replay
    bad = dict(lines[0], revealed_seed="00" * 32)
    (tmp_path / "bad.jsonl").write_text(json.dumps(bad) + "\n")
    assert cli("replay", str(tmp_path / "bad.jsonl"), "--final", cwd=tmp_path).returncode == 1


KABALEO = """
name = "kabaleo-dup"
seed = "e2e-kabaleo"
game = "kabaleo"
seats = 3
rounds = 2
concurrency = 2
duplicate = true

[[participants]]
name = "random"
builtin = "random"

[[participants]]
name = "greedy"
builtin = "greedy"

[[participants]]
name = "random2"
builtin = "random"
"""


async def test_kabaleo_duplicate_deals(tmp_path: Path) -> None:
    config = write_config(tmp_path, KABALEO)
    db = tmp_path / "t.db"
    done = await run_tournament(config, db)
    assert done.reason == "completed"
    results = done.results()
    assert len(results) == 6  # 1 table per cycle, 3 rotations, 2 cycles
    deals: dict[int, list[dict[str, object]]] = defaultdict(list)
    for result in results:
        assert result["deal"] is not None
        assert all(v == "finished" for v in result["verdicts"])
        deals[result["deal"]].append(result)
    assert len(deals) == 2
    for games in deals.values():
        assert len(games) == 3
        # the same deal: same seed, so the same commitment and revealed seed
        assert len({g["commitment"] for g in games}) == 1
        assert len({g["revealed_seed"] for g in games}) == 1
        # every participant plays every seat of the deal
        for seat in range(3):
            assert sorted(g["seats"][seat] for g in games) == ["greedy", "random", "random2"]  # type: ignore[index]
    commitments = {games[0]["commitment"] for games in deals.values()}
    assert len(commitments) == 2  # different deals for different cycles
    table = standings(["random", "greedy", "random2"], results)
    assert all(row.games == 6 for row in table)
    assert sum(row.points for row in table) == pytest.approx(6 * 1.5)  # T/2 points per game of T seats
    verify_matches(db, [str(r["match_id"]) for r in results])


SPRT = """
name = "sprt"
seed = "e2e-sprt"
game = "pylos"
rounds = 60
concurrency = 2

[sprt]
elo0 = 0.0
elo1 = 100.0
model = "logistic"

[[participants]]
name = "greedy"
builtin = "greedy"

[[participants]]
name = "random"
builtin = "random"
"""


async def test_sprt_stops_early_accepting_h1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, SPRT)
    db = tmp_path / "t.db"
    done = await run_tournament(config, db)
    assert done.reason.startswith("sprt: accept H1"), done.reason
    games = done.games()
    assert len(games) == 120
    played = [g for g in games if g.status == "done"]
    assert 2 <= len(played) < 40
    # as cutechess: a line per finished game, each followed by the running Elo, LOS and SPRT
    out = capsys.readouterr().out.splitlines()
    finished = [line for line in out if line.startswith("Finished game ")]
    running = [line for line in out if line.startswith("greedy vs random: ")]
    assert len(finished) == len(running) == len(played)
    by_number = {r["index"]: r for r in done.results()}  # one numbering: the index
    for line in finished:
        result = by_number[int(line.split()[2])]
        ranks = result["ranks"]
        score = "1-0" if ranks == [1, 2] else "0-1" if ranks == [2, 1] else "1/2-1/2"
        players = " vs ".join(result["seats"])
        assert line.startswith(f"Finished game {result['index']} ({players}): {score} "), line
        assert f"{{{result['termination']}}} {len(result['moves'])} plies" in line
    assert "SPRT LLR" in running[-1] and "accept H1" in running[-1]
    summary_json = tmp_path / "summary.json"
    exported = cli(
        "tournament", "export", done.tournament_id, "--db", str(db), "--json", str(summary_json), cwd=tmp_path
    )
    assert exported.returncode == 0, exported.stderr
    summary = json.loads(summary_json.read_text())
    assert summary["status"] == "finished" and summary["stop_reason"] == done.reason
    (h2h,) = summary["head_to_head"]
    assert (h2h["first"], h2h["second"]) == ("greedy", "random")
    assert h2h["sprt"]["decision"] == "accept H1" and h2h["sprt"]["llr"] >= h2h["sprt"]["upper"]
    assert h2h["wins"] + h2h["draws"] + h2h["losses"] == len(played)
    assert summary["secret"] is not None and len(bytes.fromhex(summary["secret"])) == 32  # over: shown
    assert all(g.status == "pending" for g in games if g.status != "done")  # nothing left running
    shown = cli("tournament", "standings", done.tournament_id, "--db", str(db), cwd=tmp_path)
    assert "sprt: accept H1" in shown.stdout
    assert "SPRT LLR" in shown.stdout and "accept H1" in shown.stdout
    # resuming a finished tournament plays nothing more
    again = cli("tournament", "resume", done.tournament_id, "--db", str(db), cwd=tmp_path)
    assert again.returncode == 0 and "already finished" in again.stderr


SWISS = """
name = "swiss"
seed = "e2e-swiss"
game = "pylos"
format = "swiss"
rounds = 3
concurrency = 2

[options]
max_moves = 60

[[participants]]
name = "a"
builtin = "random"

[[participants]]
name = "b"
builtin = "greedy"

[[participants]]
name = "c"
builtin = "random"

[[participants]]
name = "d"
builtin = "greedy"

[[participants]]
name = "e"
builtin = "random"
"""


GAUNTLET = """
name = "gauntlet"
seed = "e2e-gauntlet"
game = "pylos"
format = "gauntlet"
rounds = 2
concurrency = 2

[options]
max_moves = 60

[gauntlet]
champion = "greedy"

[sprt]
elo0 = 0.0
elo1 = 200.0
model = "logistic"

[[participants]]
name = "greedy"
builtin = "greedy"

[[participants]]
name = "r1"
builtin = "random"

[[participants]]
name = "r2"
builtin = "random"
"""


async def test_gauntlet_follows_the_champion_against_each_opponent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "t.db"
    done = await run_tournament(write_config(tmp_path, GAUNTLET), db)
    results = done.results()
    out = capsys.readouterr().out
    assert out.count("Finished game ") == len(results)
    for opponent in ("r1", "r2"):
        games = sum(opponent in r["seats"] for r in results)
        assert out.count(f"greedy vs {opponent}: ") == games  # running Elo/LOS/SPRT after each
    assert "Elo (pairwise, row vs column" in out  # more than two participants: the pairwise table
    summary_json = tmp_path / "summary.json"
    assert (
        cli(
            "tournament",
            "export",
            done.tournament_id,
            "--db",
            str(db),
            "--json",
            str(summary_json),
            cwd=tmp_path,
        ).returncode
        == 0
    )
    summary = json.loads(summary_json.read_text())
    assert [(h["first"], h["second"]) for h in summary["head_to_head"]] == [
        ("greedy", "r1"),
        ("greedy", "r2"),
    ]
    assert all(h["sprt"] is not None for h in summary["head_to_head"])
    assert summary["stop_reason"] == done.reason
    cell = summary["elo_table"]["greedy"]["r1"]
    h2h = summary["head_to_head"][0]
    assert cell["games"] == h2h["wins"] + h2h["draws"] + h2h["losses"]
    assert "r1" not in summary["elo_table"]["r2"]  # they never met
    shown = cli("tournament", "standings", done.tournament_id, "--db", str(db), cwd=tmp_path)
    assert "greedy vs r1: " in shown.stdout and "greedy vs r2: " in shown.stdout


async def test_swiss_five_players_with_byes(tmp_path: Path) -> None:
    config_path = write_config(tmp_path, SWISS)
    db = tmp_path / "t.db"
    done = await run_tournament(config_path, db)
    assert done.reason == "completed"
    games = done.games()
    assert [g.index for g in games] == list(range(12))  # 2 pairings x 2 games x 3 rounds
    assert all(g.status == "done" for g in games)
    config = load_config(config_path)
    assert [spec_from_dict(g.spec) for g in games[:4]] == plan(config, secret=done.runner.secret)
    names = set(config.names)
    results = done.results()
    byes = swiss_byes(config, [(spec_from_dict(g.spec), g.result["ranks"]) for g in games if g.result])
    assert sorted(byes) == [1, 2, 3]
    assert len(set(byes.values())) == 3  # byes rotate
    for rnd in (1, 2, 3):
        in_round = [r for r in results if r["round"] == rnd]
        assert len(in_round) == 4
        seated = Counter(name for r in in_round for name in r["seats"])
        assert set(seated) == names - {byes[rnd]}
        assert all(count == 2 for count in seated.values())
    table = standings(list(config.names), results)
    assert {row.name: row.games for row in table} == {
        n: 6 - 2 * list(byes.values()).count(n) for n in config.names
    }
    verify_matches(db, [r["match_id"] for r in results])
