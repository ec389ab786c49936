from __future__ import annotations

import time
from dataclasses import replace

import pytest

from ziggurat.bots import BOTS, GAMES_OF, AlphaBetaBot, MctsBot, make_bot
from ziggurat.bots.arena import turn_for
from ziggurat.bots.common import rank_reward
from ziggurat.rules.core import Outcome, Termination
from ziggurat.rules.kabaleo import COLOURS
from ziggurat.rules.pylos import PYLOS
from ziggurat_client.bot import Bot, Turn

from .bot_helpers import random_turns

SMALL = 140  # time_left_ms: budget_seconds() = (140 - 100) / 1000 / 4 = 10 ms

CASES = [("pylos", 2), ("kabaleo", 2), ("kabaleo", 3), ("kabaleo", 4)]


@pytest.mark.parametrize(("game", "seats"), CASES)
@pytest.mark.parametrize("name", sorted(BOTS))
def test_every_bot_plays_legal_moves(name: str, game: str, seats: int) -> None:
    if game not in GAMES_OF[name]:
        pytest.skip(f"{name} does not play {game}")
    bot = make_bot(name, seed=1)
    for _, turn in random_turns(game, seats, 8, seed=hash((name, game, seats)) & 0xFFFF):
        turn = replace(turn, time_left_ms=SMALL)
        assert bot.choose(turn) in turn.legal_moves


def test_kabaleo_equal_deal_and_last_stack() -> None:
    options = {"deal": "equal", "last_stack": "true"}
    bot = make_bot("mcts", seed=2)
    for _, turn in random_turns("kabaleo", 3, 5, seed=3, options=options):
        turn = replace(turn, time_left_ms=SMALL)
        assert bot.choose(turn) in turn.legal_moves


@pytest.mark.parametrize(
    ("name", "game"), [("mcts", "pylos"), ("mcts", "kabaleo"), ("alphabeta", "pylos"), ("greedy", "pylos")]
)
def test_bots_honour_a_small_budget(name: str, game: str) -> None:
    bot: Bot = make_bot(name, seed=3)
    for _, turn in random_turns(game, 2, 6, seed=5):
        turn = replace(turn, time_left_ms=300)  # budget_seconds() = 50 ms
        started = time.perf_counter()
        bot.choose(turn)
        # The budget is 50 ms; the bound leaves room for a loaded, shared CI machine while
        # still catching a bot that ignores its clock (the default cap is 1 s per move).
        assert time.perf_counter() - started < 0.6


def test_mcts_does_search() -> None:
    # Untimed turn, generous wall-clock cap: the iteration cap is what stops the search,
    # so the count does not depend on how busy the machine is.
    bot = MctsBot(seed=1, iterations=200, max_seconds=60.0)
    _, turn = random_turns("kabaleo", 2, 1, seed=6)[0]
    move = bot.choose(replace(turn, time_left_ms=0))
    assert bot.last_iterations == 200
    assert move in turn.legal_moves


def test_kabaleo_mcts_ignores_the_hidden_objectives() -> None:
    """Two referee states that differ only in what the seat cannot see give the same Turn and move."""
    for referee, turn in random_turns("kabaleo", 3, 4, seed=8):
        seat = turn.seat - 1
        hidden = [s for s in range(3) if s != seat]
        objectives = list(referee.objectives)
        # Rotate the other seats' objectives with the unheld colours: a different secret set-up.
        pool = [objectives[s] for s in hidden] + list(referee.unheld)
        pool = pool[1:] + pool[:1]
        for s, colour in zip(hidden, pool, strict=False):
            objectives[s] = colour
        unheld = "".join(sorted(pool[len(hidden) :], key=COLOURS.index))
        twin = replace(referee, objectives=tuple(objectives), unheld=(unheld[0], unheld[1]))
        assert twin.objectives != referee.objectives
        twin_turn = turn_for("kabaleo", {}, twin, turn.history)
        assert twin_turn == turn
        assert MctsBot(seed=11, iterations=300, max_seconds=10.0).choose(turn) == MctsBot(
            seed=11, iterations=300, max_seconds=10.0
        ).choose(twin_turn)


def test_rank_reward_shares_ties() -> None:
    assert rank_reward(Outcome(Termination.NORMAL, (1, 2)), 0) == 1.0
    assert rank_reward(Outcome(Termination.NORMAL, (1, 2)), 1) == 0.0
    assert rank_reward(Outcome(Termination.NORMAL, (1, 1)), 0) == 0.5
    four = Outcome(Termination.NORMAL, (1, 2, 2, 4))
    assert [rank_reward(four, s) for s in range(4)] == [1.0, 0.5, 0.5, 0.0]


def _pylos_turn(position: str) -> Turn:
    state = PYLOS.parse_position(position, PYLOS.parse_config({}, 2))
    return turn_for("pylos", {}, state, time_left_ms=2100)  # ~0.5 s budget


def test_alphabeta_places_the_top_ball() -> None:
    turn = _pylos_turn("LLLLLLDDDDDDDDDD/LLLLDDDDL/LLLD/. L")
    assert AlphaBetaBot(seed=1).choose(turn) == "4a1"


def test_alphabeta_finds_a_win_in_one_among_many_moves() -> None:
    # Light completes a level-3 square; after the recovery dark has no reserve and no raise: stuck.
    position = "DLDDDDLLLDLDLDDD/DDLLLDDLD/LLL./. L"
    turn = _pylos_turn(position)
    state = PYLOS.parse_position(position, PYLOS.parse_config({}, 2))
    move = AlphaBetaBot(seed=1).choose(turn)
    after = PYLOS.apply(state, move)
    assert after.outcome is not None and after.outcome.winners == (0,)
    assert len(turn.legal_moves) > 5


def test_alphabeta_avoids_an_immediate_blunder() -> None:
    # Dark to move: placing on 3b1 or 3b2 fills level 3 and light places the top; only the raise is safe.
    turn = _pylos_turn("DDLDLLDDDLLLLDLD/DDDDDLLLL/D.L./. D")
    assert set(turn.legal_moves) == {"3b1", "3b2", "2c1-3b2"}
    for seed in range(3):
        assert AlphaBetaBot(seed=seed).choose(turn) == "2c1-3b2"
    assert make_bot("greedy", seed=0).choose(turn) == "2c1-3b2"


def test_make_bot_rejects_unknown_names() -> None:
    with pytest.raises(ValueError, match="unknown bot"):
        make_bot("oracle")
