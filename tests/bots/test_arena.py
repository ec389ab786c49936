from __future__ import annotations

import pytest

from ziggurat.bots import make_bot
from ziggurat.bots.arena import play_game, play_match, time_left_for_budget
from ziggurat_client.bot import Turn


class Spy:
    """Records every Turn it gets, to check the arena shows each seat only its own view."""

    name = "spy"

    def __init__(self) -> None:
        self.turns: list[Turn] = []

    def choose(self, turn: Turn) -> str:
        self.turns.append(turn)
        return turn.legal_moves[0]


@pytest.mark.parametrize(("game", "seats"), [("pylos", 2), ("kabaleo", 2), ("kabaleo", 3), ("kabaleo", 4)])
def test_games_finish(game: str, seats: int) -> None:
    bots = [make_bot("random", seed=s) for s in range(seats)]
    outcome = play_game(game, {}, seats, bots, seed=1)
    assert len(outcome.ranks) == seats


def test_arena_shows_only_the_seat_view() -> None:
    spies = [Spy() for _ in range(3)]
    play_game("kabaleo", {}, 3, spies, seed=2)
    for index, spy in enumerate(spies):
        assert spy.turns
        for turn in spy.turns:
            assert turn.seat == index + 1
            held = turn.position.split(" ")[4]
            assert held.count("?") == 4  # two other seats + two unheld colours
            assert held[index] != "?"


def test_coroutine_bots_are_awaited() -> None:
    class Async:
        name = "async"

        async def choose(self, turn: Turn) -> str:
            return turn.legal_moves[-1]

    outcome = play_game("pylos", {}, 2, [Async(), make_bot("random", seed=1)], seed=3)
    assert outcome is not None


def test_illegal_moves_are_reported() -> None:
    class Cheat:
        name = "cheat"

        def choose(self, turn: Turn) -> str:
            return "R99"

    with pytest.raises(ValueError, match="illegal move"):
        play_game("kabaleo", {}, 2, [Cheat(), Cheat()], seed=4)


def test_match_alternates_seats_and_scores() -> None:
    result = play_match(
        "kabaleo",
        {},
        2,
        lambda s: make_bot("greedy", seed=s),
        lambda s: make_bot("random", seed=s),
        games=6,
        seed=1,
        time_left_ms=time_left_for_budget(0.01),
    )
    assert result.games == 6
    assert 0.0 <= result.rate <= 1.0
    assert result.rate > 0.5
