"""Points, forfeits and withdrawals computed from stored results (pure functions)."""

from __future__ import annotations

from typing import Any

from ziggurat.tournament.results import game_points, standings, unplayed, withdrawals


def game(index: int, seats: list[str], ranks: list[int], verdicts: list[str], rnd: int = 1) -> dict[str, Any]:
    return {
        "index": index,
        "round": rnd,
        "seats": seats,
        "ranks": ranks,
        "verdicts": verdicts,
        "termination": "resignation" if "disqualified" in verdicts else "pyramid_complete",
        "pair": None,
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
    both = game(0, ["x", "y"], [1, 2], ["disqualified", "disqualified"])
    assert game_points(both) == [0.0, 0.0]
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
