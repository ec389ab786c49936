"""The ladder: deterministic ratings, the displayed scale, and a rebuild equal to the stored
ratings (the check a restart relies on)."""

from __future__ import annotations

from pathlib import Path

from ziggurat.arena.config import parse_arena_config
from ziggurat.arena.ladder import Ladder, displayed
from ziggurat.arena.runner import check_ratings, rebuild_ladders
from ziggurat.arena.store import ArenaStore

CONFIG = {"name": "t", "ladder": [{"game": "pylos"}, {"game": "kabaleo", "tables": [3]}]}


def test_the_displayed_rating_of_a_new_line_is_1000_and_a_win_moves_both() -> None:
    assert displayed(25.0, 25.0 / 3.0) == 1000.0
    ladder = Ladder("pylos")
    after = ladder.preview({"a": 1, "b": 2})
    assert after == ladder.preview({"b": 2, "a": 1})  # listing order does not matter
    ladder.apply(("a", "b"), (1, 2), after, 5)
    assert ladder.line("a").rating > 1000 > ladder.line("b").rating
    assert (ladder.line("a").wins, ladder.line("b").wins) == (1, 0)
    assert ladder.line("a").first_seats == 1 and ladder.line("a").last_game_ms == 5


def _rate(
    store: ArenaStore, ladders: dict[str, Ladder], game: str, seats: list[str], ranks: list[int]
) -> None:
    ladder = ladders[game]
    number = store.add_game(game, seats, [0] * len(seats))
    after = ladder.preview(dict(zip(seats, ranks, strict=True)))
    ratings = [{"before": [ladder.line(n).mu, ladder.line(n).sigma], "after": list(after[n])} for n in seats]
    assert store.rate(number, {"ranks": ranks, "termination": "normal"}, ratings, 10 + number) is not None
    assert store.rate(number, {"ranks": ranks}, ratings, 0) is None  # once only
    ladder.apply(seats, ranks, after, 10 + number)


def test_rebuild_from_the_database_equals_the_ladder_that_rated_the_games(tmp_path: Path) -> None:
    config = parse_arena_config(dict(CONFIG), tmp_path)
    store = ArenaStore(tmp_path / "a.db")
    ladders = {"pylos": Ladder("pylos"), "kabaleo": Ladder("kabaleo")}
    _rate(store, ladders, "pylos", ["a", "b"], [1, 2])
    _rate(store, ladders, "kabaleo", ["a", "b", "c"], [2, 1, 3])
    _rate(store, ladders, "pylos", ["b", "a@2"], [2, 1])
    voided = store.add_game("pylos", ["a", "b"], [0, 0])
    store.void(voided, "cut off")
    rebuilt, rated = rebuild_ladders(config, store)
    assert rated == 3
    for game, ladder in ladders.items():
        assert {n: (x.mu, x.sigma, x.games) for n, x in rebuilt[game].lines.items()} == {
            n: (x.mu, x.sigma, x.games) for n, x in ladder.lines.items()
        }
    assert check_ratings(config, store) == []
    assert [g.status for g in store.games()] == ["void", "rated", "rated", "rated"]
    # a stored rating that the games do not give is found
    store._db.execute(
        "UPDATE arena_games SET ratings_json = ? WHERE number = 1",
        (
            '[{"before": [25.0, 8.333333333333334], "after": [30.0, 8.0]}, '
            '{"before": [25.0, 8.333333333333334], "after": [20.0, 8.0]}]',
        ),
    )
    assert check_ratings(config, store) != []
    store.close()
