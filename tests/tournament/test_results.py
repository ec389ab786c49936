"""Points, forfeits and withdrawals computed from stored results (pure functions)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ziggurat.tournament.results import (
    crosstable,
    export_jsonl,
    format_standings,
    game_line,
    game_points,
    pairwise_elo,
    rated_seats,
    standings,
    unplayed,
    withdrawals,
)


def game(index: int, seats: list[str], ranks: list[int], verdicts: list[str], rnd: int = 1) -> dict[str, Any]:
    return {
        "index": index,
        "round": rnd,
        "seats": seats,
        "ranks": ranks,
        "verdicts": verdicts,
        "termination": "resignation" if "disqualified" in verdicts else "pyramid_complete",
        "pair": None,
        "moves": [],
    }


def test_a_forfeit_counts_for_points_but_not_for_ratings() -> None:
    played = game(0, ["a", "b"], [1, 2], ["finished", "finished"])
    forfeit = game(1, ["a", "c"], [2, 1], ["finished", "disqualified"])  # c forfeited: a wins
    assert not unplayed(played) and unplayed(forfeit)
    assert game_points(forfeit) == [1.0, 0.0]  # whatever the ranks say, the one who came wins
    rows = {row.name: row for row in standings(["a", "b", "c"], [played, forfeit], {"c"})}
    assert rows["a"].points == 2.0 and rows["a"].forfeits == 1 and rows["a"].games == 2
    assert rows["c"].points == 0.0 and rows["c"].forfeits == 1
    # the rating of a saw one game (the forfeit is not rated): the same as without the forfeit
    alone = {row.name: row for row in standings(["a", "b", "c"], [played])}
    assert (rows["a"].mu, rows["a"].sigma) == (alone["a"].mu, alone["a"].sigma)
    assert (rows["c"].mu, rows["c"].sigma) == (25.0, 25.0 / 3)  # never rated: the prior


def test_a_double_forfeit_gives_nobody_a_win() -> None:
    both = game(0, ["x", "y"], [2, 2], ["disqualified", "disqualified"])  # as the runner records it
    assert game_points(both) == [0.0, 0.0]
    assert game_line(both).startswith("Finished game 0 (x vs y): 0-0 {resignation} ")
    rows = {row.name: row for row in standings(["x", "y"], [both], {"x", "y"})}
    assert rows["x"].points == rows["y"].points == 0.0 and rows["x"].forfeits == 1
    table = game(1, ["a", "x", "b"], [2, 3, 1], ["finished", "disqualified", "finished"])
    # a and b played each other (b ranked better); both beat the forfeiting x
    assert game_points(table) == [(0.0 + 1.0) / 2, 0.0, (1.0 + 1.0) / 2]


def test_withdrawals_name_the_round_after_the_last_allowed_failure() -> None:
    results = [
        game(0, ["a", "b"], [1, 2], ["finished", "crashed"], rnd=1),
        game(1, ["b", "a"], [2, 1], ["timeout", "finished"], rnd=1),
        game(2, ["a", "c"], [2, 1], ["illegal", "finished"], rnd=2),
    ]
    assert withdrawals(results, 2) == {"b": 2}
    assert withdrawals(results, 1) == {"b": 2, "a": 3}
    assert withdrawals(results, 0) == {}


def test_the_game_line_numbers_games_by_their_index_and_scores_by_points() -> None:
    forfeit = game(7, ["a", "c"], [2, 1], ["finished", "disqualified"])
    assert game_line(forfeit) == "Finished game 7 (a vs c): 1-0 {resignation} 0 plies [c disqualified]"
    drawn = dict(game(0, ["a", "b"], [1, 1], ["finished", "finished"]), termination="move_limit")
    assert game_line(drawn) == "Finished game 0 (a vs b): 1/2-1/2 {move_limit} 0 plies"


def test_a_kabaleo_forfeit_leaves_the_seats_that_played_rated() -> None:
    """x forfeited a table of three: a and b played the whole game against each other, so their
    comparison is rated as in a game of their own; comparisons with x count for points only."""
    table = game(0, ["a", "x", "b"], [2, 3, 1], ["finished", "disqualified", "finished"])
    assert rated_seats(table) == [0, 2] and not unplayed(table)
    assert game_points(table) == [0.5, 0.0, 1.0]
    alone = game(0, ["a", "b"], [2, 1], ["finished", "finished"])
    with_x = {row.name: row for row in standings(["a", "b", "x"], [table], {"x"})}
    without = {row.name: row for row in standings(["a", "b", "x"], [alone])}
    for name in ("a", "b"):  # the same rating as the game of a and b alone
        assert (with_x[name].mu, with_x[name].sigma) == (without[name].mu, without[name].sigma)
        assert with_x[name].forfeits == 1
    assert (with_x["x"].mu, with_x["x"].sigma) == (25.0, 25.0 / 3)  # x is not rated
    cells = crosstable(["a", "b", "x"], [table])
    assert cells["b"] == {"a": (1.0, 1)} and cells["x"] == {}
    elo = pairwise_elo(["a", "b", "x"], [table])
    assert set(elo["a"]) == {"b"} and elo["x"] == {}
    # one seat left playing: nothing to compare, nothing rated
    lone = game(1, ["a", "x", "y"], [1, 3, 3], ["finished", "disqualified", "disqualified"])
    assert rated_seats(lone) == [] and game_points(lone) == [1.0, 0.0, 0.0]


def test_standings_recomputed_from_the_exported_file_are_the_same(tmp_path: Path) -> None:
    results = [
        game(0, ["a", "b"], [1, 2], ["finished", "crashed"]),
        game(1, ["b", "c"], [1, 2], ["finished", "crashed"]),
        game(2, ["b", "c"], [2, 2], ["disqualified", "disqualified"]),
        game(3, ["c", "a"], [2, 1], ["disqualified", "finished"]),
        game(4, ["a", "b", "c"], [2, 3, 1], ["finished", "disqualified", "finished"]),
    ]
    names, banned = ["a", "b", "c"], {"b", "c"}
    path = tmp_path / "games.jsonl"
    assert export_jsonl(results, path) == 5
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["points"] for r in records] == [game_points(r) for r in results]
    assert records[2]["points"] == [0.0, 0.0]  # the double forfeit: no winner on record
    assert format_standings(standings(names, records, banned)) == format_standings(
        standings(names, results, banned)
    )
    # a reader who only adds up the exported points gets the standings' points
    totals = dict.fromkeys(names, 0.0)
    for record in records:
        for name, points in zip(record["seats"], record["points"], strict=True):
            totals[name] += points
    assert totals == {row.name: row.points for row in standings(names, results, banned)}
