"""The fast playout: exactly uniform over the full legal move set, full rules, same scoring as the engine."""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from fractions import Fraction

import pytest

from ziggurat.rules.core import Termination
from ziggurat.rules.kabaleo import (
    KABALEO,
    KabaleoConfig,
    KabaleoState,
    apply,
    forfeit,
    legal_moves,
    new_game,
    outcome_of,
    parse_position,
    random_playout,
)
from ziggurat.rules.kabaleo_playout import playout_stacks

from .kabaleo_reference import ref_from_position, ref_legal_moves, ref_play, ref_ranks


def exact_distribution(state: KabaleoState) -> dict[tuple[str, ...], Fraction]:
    """Probability of each final board when every move is uniform over the legal moves (by enumeration)."""
    if state.to_move is None:
        return {state.stacks: Fraction(1)}
    moves = legal_moves(state)
    result: dict[tuple[str, ...], Fraction] = {}
    for move in moves:
        for board, p in exact_distribution(apply(state, move)).items():
            result[board] = result.get(board, Fraction(0)) + p / len(moves)
    return result


def late_state(players: int, last_stack: bool, plies_left: int, seed: str) -> KabaleoState:
    config = KabaleoConfig(players, last_stack=last_stack)
    state = new_game(config, hashlib.sha256(seed.encode()).digest())
    rng = random.Random(seed)
    while config.total_plies - state.ply > plies_left:
        moves = legal_moves(state)
        cancelling = [m for m in moves if len(s := state.stacks[int(m[1:]) - 1]) > 1 and s[-1] == m[0]]
        state = apply(state, rng.choice(cancelling if cancelling and rng.random() < 0.6 else moves))
    return state


@pytest.mark.parametrize(("players", "last_stack"), [(2, True), (3, False), (4, True)])
def test_playout_is_uniform_over_legal_moves(players: int, last_stack: bool) -> None:
    """Chi-square of sampled final boards against the exact distribution (deterministic RNG, 2 plies)."""
    state = late_state(players, last_stack, 2, f"uniform-{players}-{last_stack}")
    exact = exact_distribution(state)
    samples = 60 * len(exact)
    rng = random.Random(99)
    seen = Counter(tuple(playout_stacks(state, rng)) for _ in range(samples))
    assert set(seen) <= set(exact)  # never an illegal or mis-applied move
    chi2 = sum(float((seen[b] - samples * p) ** 2 / (samples * p)) for b, p in exact.items())
    dof = len(exact) - 1
    assert chi2 < dof + 6 * (2 * dof) ** 0.5, (chi2, dof)


def uneven_hand_states() -> list[KabaleoState]:
    """Positions whose mover holds several colours in unequal numbers: where a biased draw would show."""
    states = [
        new_game(KabaleoConfig(p, last_stack=ls == 1), bytes([p, ls]) * 16)
        for p in (2, 3, 4)
        for ls in (0, 1)
    ]
    states += [late_state(p, bool(p % 2), 2 * p + 3, f"mid-{p}") for p in (2, 3, 4)]
    chosen = []
    for state in states:
        assert state.to_move is not None
        counts = [n for n in state.hands[state.to_move] if n]
        assert len(counts) >= 2
        if len(set(counts)) >= 2:
            chosen.append(state)
    assert len(chosen) >= 5
    return chosen


@pytest.mark.parametrize("index", range(5))
def test_first_move_is_uniform_over_legal_moves(index: int) -> None:
    """One ply at a time the board identifies the move: chi-square against exact uniformity."""
    state = uneven_hand_states()[index]
    boards = {apply(state, move).stacks: move for move in legal_moves(state)}
    samples = 200 * len(boards)
    rng = random.Random(index)
    seen = Counter(boards[tuple(playout_stacks(state, rng, plies=1))] for _ in range(samples))
    assert set(seen) == set(boards.values())
    chi2 = sum((seen[m] - 200) ** 2 / 200 for m in boards.values())
    dof = len(boards) - 1
    assert chi2 < dof + 6 * (2 * dof) ** 0.5, (chi2, dof)


def test_playout_one_ply_left_hits_every_legal_move() -> None:
    state = late_state(4, True, 1, "one-left")
    finals = {tuple(playout_stacks(state, random.Random(i))) for i in range(2000)}
    assert finals == {apply(state, move).stacks for move in legal_moves(state)}


@pytest.mark.parametrize("players", [2, 3, 4])
@pytest.mark.parametrize("last_stack", [False, True])
def test_playout_outcome_agrees_with_reference_scoring(players: int, last_stack: bool) -> None:
    state = new_game(KabaleoConfig(players, last_stack=last_stack), bytes([players]) * 32)
    rng = random.Random(1)
    for _ in range(200):
        stacks = playout_stacks(state, rng)
        final = (
            "/".join(stacks)
            + " "
            + "/".join(["-"] * players)
            + " - 1 "
            + "".join(state.objectives)
            + "+"
            + "".join(state.unheld)
        )
        parsed = parse_position(final, state.config)  # the final board is a valid position
        outcome = outcome_of(parsed)
        assert outcome is not None
        assert outcome.ranks == ref_ranks(ref_from_position(final, last_stack))
    outcome = random_playout(state, rng)
    assert outcome.termination is Termination.NORMAL and len(outcome.ranks) == players


def test_playout_ranks_forfeited_seats_last_and_leaves_state_alone() -> None:
    state = forfeit(new_game(KabaleoConfig(4), bytes(32)), 2, Termination.RESIGNATION)
    before = KABALEO.format_position(state)
    rng = random.Random(4)
    for _ in range(100):
        outcome = random_playout(state, rng)
        assert outcome.ranks[2] == 4 and sorted(outcome.ranks)[:3] != [4, 4, 4]
    assert KABALEO.format_position(state) == before


def test_playout_of_a_finished_game_is_its_outcome() -> None:
    state = late_state(2, False, 0, "done")
    assert random_playout(state, random.Random(0)) == outcome_of(state)
    ended = forfeit(new_game(KabaleoConfig(2), bytes(32)), 1, Termination.TIMEOUT)
    assert random_playout(ended, random.Random(0)) == outcome_of(ended)


def test_reference_agrees_on_late_positions_played_out() -> None:
    state = late_state(3, True, 4, "ref-late")
    ref = ref_from_position(KABALEO.format_position(state), True)
    assert ref_legal_moves(ref) == legal_moves(state)
    ref = ref_play(ref, legal_moves(state)[0])
    assert ref_legal_moves(ref) == legal_moves(apply(state, legal_moves(state)[0]))
