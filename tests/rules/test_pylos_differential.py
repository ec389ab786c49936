"""The fast engine against the independent reference, and the playout loop against the engine."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from tests.rules import pylos_reference as ref
from ziggurat.rules.core import Termination
from ziggurat.rules.pylos import PYLOS, PylosConfig, PylosState, Variant, _completion, random_playout
from ziggurat.rules.pylos_playout import (
    END_LIMIT,
    END_REPETITION,
    END_STUCK,
    END_TOP,
    count_recoveries,
    playout,
    recovery_options,
)

VARIANTS = [Variant.STANDARD, Variant.ADVANCED, Variant.BEGINNER]


def _random_games(variant: Variant, games: int, seed: int) -> int:
    """Play random games in both implementations side by side; return the number of positions checked."""
    rng = random.Random(seed)
    checked = 0
    for _ in range(games):
        max_moves = rng.choice([None, None, 40])
        state = PYLOS.new_game(PylosConfig(variant, max_moves), bytes(32))
        game = ref.Game({}, "L", variant.value, max_moves)
        while state.outcome is None:
            moves = PYLOS.legal_moves(state)
            assert moves == game.moves(), PYLOS.format_position(state)
            checked += 1
            move = moves[rng.randrange(len(moves))]
            state = PYLOS.apply(state, move)
            game.play(move)
            assert state.outcome == game.outcome
            assert PYLOS.format_position(state).split(" ")[0] == ref.format_board(game.board)
        assert PYLOS.legal_moves(state) == game.moves() == []
    return checked


@pytest.mark.parametrize(
    ("variant", "games", "seed"),
    [(Variant.STANDARD, 60, 1), (Variant.ADVANCED, 30, 2), (Variant.BEGINNER, 80, 3)],
    ids=["standard", "advanced", "beginner"],
)
def test_random_games_agree_with_reference(variant: Variant, games: int, seed: int) -> None:
    assert _random_games(variant, games=games, seed=seed) > 2000


def test_many_positions_agree_with_reference_on_parsed_positions() -> None:
    """Positions re-read from their text (no history) give the same moves as the reference."""
    rng = random.Random(11)
    for _ in range(30):
        state = PYLOS.new_game(PylosConfig(Variant.ADVANCED), bytes(32))
        while state.outcome is None:
            text = PYLOS.format_position(state)
            board, side = ref.parse_board(text)
            parsed = PYLOS.parse_position(text, state.config)
            assert PYLOS.legal_moves(parsed) == ref.legal_moves(board, side, "advanced")
            state = PYLOS.apply(state, PYLOS.random_move(state, rng))


def _positions(count: int, seed: int, variant: Variant = Variant.STANDARD) -> list[PylosState]:
    rng = random.Random(seed)
    out: list[PylosState] = []
    while len(out) < count:
        state = PYLOS.new_game(PylosConfig(variant), bytes(32))
        while state.outcome is None and len(out) < count:
            out.append(state)
            state = PYLOS.apply(state, PYLOS.random_move(state, rng))
    return out


def test_recovery_count_matches_listing() -> None:
    for state in _positions(1500, seed=4):
        own = state.dark if state.side else state.light
        occ = state.light | state.dark
        assert count_recoveries(own, occ) == len(recovery_options(own, occ))
        assert len(set(recovery_options(own, occ))) == len(recovery_options(own, occ))


def _step(state: PylosState, seen: dict[int, int], rng: random.Random) -> tuple[int, int]:
    """Let the playout loop play exactly one move from ``state``; return its code and the new key."""
    before = dict(seen)
    code, _, _ = playout(
        state.light,
        state.dark,
        state.side,
        ply=state.ply,
        seen=seen,
        move_limit=state.ply + 1,
        completion=_completion(state.config.variant),
        rng=rng,
    )
    changed = [k for k in seen if seen[k] != before.get(k, 0)]
    assert len(changed) <= 1
    return code, changed[0] if changed else -1


@pytest.mark.parametrize("variant", VARIANTS, ids=[v.value for v in VARIANTS])
def test_playout_loop_plays_legal_moves_and_ends_like_the_engine(variant: Variant) -> None:
    """Drive the playout loop one move at a time; every move must be a legal successor."""
    rng = random.Random(7)
    for _ in range(20):
        state = PYLOS.new_game(PylosConfig(variant), bytes(32))
        seen = dict(Counter(state.seen))
        while True:
            successors = {}
            for move in PYLOS.legal_moves(state):
                after = PYLOS.apply(state, move)
                successors[after.seen[-1]] = after
            code, key = _step(state, seen, rng)
            if key == -1:  # the top ball was placed: the position key is not recorded
                assert code == END_TOP
                assert any(
                    s.outcome and s.outcome.termination is Termination.PYRAMID_COMPLETE
                    for s in successors.values()
                )
                break
            state = successors[key]
            if state.outcome is not None:
                expected = {
                    Termination.NO_LEGAL_MOVE: END_STUCK,
                    Termination.REPETITION: END_REPETITION,
                }[state.outcome.termination]
                # The loop reports the ending when it next looks at the position: one more call.
                code, _ = _step(state, seen, rng) if code == END_LIMIT else (code, key)
                assert code == expected
                break
            assert code == END_LIMIT


def _chi_square(observed: Counter[int], expected: dict[int, float]) -> float:
    return sum((observed.get(k, 0) - e) ** 2 / e for k, e in expected.items())


@pytest.mark.parametrize(
    "text",
    [
        "LLL.L.L.DDDD.D../........./..../. L",  # two squares at once: 21 recovery choices on one place
        "LDLDDLDLLDDLDLDL/LLDL.D.../..../. L",  # raises, recoveries, freed balls
    ],
)
def test_playout_draws_uniformly_from_full_move_set(text: str) -> None:
    state = PYLOS.parse_position(text, PylosConfig())
    by_key: Counter[int] = Counter()
    for move in PYLOS.legal_moves(state):
        by_key[PYLOS.apply(state, move).seen[-1]] += 1
    total_moves = sum(by_key.values())
    draws = 200 * total_moves
    rng = random.Random(2024)
    observed: Counter[int] = Counter()
    for _ in range(draws):
        seen = dict(Counter(state.seen))
        _, key = _step(state, seen, rng)
        observed[key] += 1
    assert set(observed) == set(by_key)
    expected = {k: draws * n / total_moves for k, n in by_key.items()}
    dof = len(by_key) - 1
    assert _chi_square(observed, expected) < dof + 6 * dof**0.5  # ~4 sigma; the seed is fixed


def test_random_playout_honours_history_and_ends() -> None:
    state = PYLOS.parse_position("LL..L......D..DD/........./..../. L", PylosConfig())
    for move in ("1b2x1b2", "1c3x1c3", "1b2x1b2"):
        state = PYLOS.apply(state, move)
    rng = random.Random(1)
    terminations = Counter(random_playout(state, rng).termination for _ in range(400))
    assert terminations[Termination.REPETITION] > 0
    limited = PYLOS.new_game(PylosConfig(max_moves=10), bytes(32))
    assert random_playout(limited, rng).termination is Termination.MOVE_LIMIT
