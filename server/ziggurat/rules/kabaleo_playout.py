"""Fast Kabaleo search primitives: uniform random playouts and perft on mutable lists.

MCTS bots and the benchmark call :func:`random_playout` hundreds of thousands
of times, so it avoids the immutable state entirely: stacks stay strings in a
list (a one-letter stack equal to the piece is exactly "bare base of that
colour", the only forbidden placement besides ``last_stack``), and hands are
lists of the distinct colours held with their counts.

Uniformity: every move is drawn uniformly from the full legal move set. One
``getrandbits`` draw picks a pair (distinct colour in hand, stack) uniformly
from a power-of-two range; values outside the ``colours x stacks`` range and
illegal pairs are rejected and redrawn. Every legal pair has the same
probability on each attempt, so the accepted pair is exactly uniform over the
legal moves (no floating point, no modulo bias).
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from dataclasses import dataclass

from ziggurat.rules.core import Outcome, Termination, competition_ranks
from ziggurat.rules.kabaleo_model import COLOURS, KabaleoState, outcome_of, ranks_with_forfeits

_MAX_DISTINCT = len(COLOURS)


@dataclass(frozen=True, slots=True)
class _PairTable:
    """For each number k of distinct colours held: bit width and the (colour slot, stack) of each draw."""

    bits: tuple[int, ...]
    pairs: tuple[tuple[tuple[int, int] | None, ...], ...]


@functools.cache
def _pair_table(stack_count: int) -> _PairTable:
    """Precompute, per k, the smallest power-of-two range covering ``k * stack_count`` pairs."""
    bits = [0]
    pairs: list[tuple[tuple[int, int] | None, ...]] = [()]
    for k in range(1, _MAX_DISTINCT + 1):
        size = k * stack_count
        width = (size - 1).bit_length()
        bits.append(width)
        pairs.append(tuple(divmod(r, stack_count) if r < size else None for r in range(1 << width)))
    return _PairTable(tuple(bits), tuple(pairs))


@dataclass(frozen=True, slots=True)
class _Prepared:
    """The parts of a state a playout copies, converted once per state (cached)."""

    colours: tuple[tuple[str, ...], ...]  # distinct colours in each seat's hand
    counts: tuple[tuple[int, ...], ...]  # their counts, same order
    turns: tuple[int, ...]  # seat to move at each remaining ply


@functools.lru_cache(maxsize=256)
def _prepare(state: KabaleoState) -> _Prepared:
    """Convert hands and turn order once; MCTS repeats playouts from the same state many times."""
    colours = []
    counts = []
    for hand in state.hands:
        held = [(c, n) for c, n in zip(COLOURS, hand, strict=True) if n]
        colours.append(tuple(c for c, _ in held))
        counts.append(tuple(n for _, n in held))
    players = state.config.players
    remaining = sum(sum(hand) for hand in state.hands)
    start = state.to_move if state.to_move is not None else 0
    turns = tuple((start + i) % players for i in range(remaining))
    return _Prepared(tuple(colours), tuple(counts), turns)


def random_playout(state: KabaleoState, rng: random.Random) -> Outcome:
    """Play uniformly random legal moves to the end and return the outcome (state is not changed)."""
    if state.to_move is None:
        outcome = outcome_of(state)
        assert outcome is not None
        return outcome
    stacks = playout_stacks(state, rng)
    return Outcome(Termination.NORMAL, _ranks(stacks, state.objectives, state.forfeited))


def playout_stacks(state: KabaleoState, rng: random.Random, plies: int | None = None) -> list[str]:
    """Return the stacks after a uniformly random playout (to the end, or ``plies`` moves for tests).

    Separate from :func:`random_playout` so tests can check the move choice
    itself: after one ply the board identifies the move that was drawn.
    """
    prepared = _prepare(state)
    stacks = list(state.stacks)
    held = [list(c) for c in prepared.colours]
    counts = [list(n) for n in prepared.counts]
    table = _pair_table(len(stacks))
    bits = table.bits
    pairs = table.pairs
    getrandbits = rng.getrandbits
    last_stack = state.config.last_stack
    last = state.last if last_stack and state.last is not None else -1
    turns = prepared.turns if plies is None else prepared.turns[:plies]
    for seat in turns:
        colours = held[seat]
        k = len(colours)
        width = bits[k]
        options = pairs[k]
        while True:
            pair = options[getrandbits(width)]
            if pair is None:
                continue
            slot, s = pair
            c = colours[slot]
            stack = stacks[s]
            if stack == c or s == last:  # bare base of its own colour, or last_stack
                continue
            break
        stacks[s] = stack[:-1] if stack[-1] == c else stack + c
        if last_stack:
            last = s
        seat_counts = counts[seat]
        left = seat_counts[slot] - 1
        if left:
            seat_counts[slot] = left
        else:
            del colours[slot]
            del seat_counts[slot]
    return stacks


def _ranks(stacks: Sequence[str], objectives: Sequence[str], forfeited: frozenset[int]) -> tuple[int, ...]:
    """Ranks from the final stacks, same keys as ``score_key`` but one pass over the board."""
    tops = [stack[-1] for stack in stacks]
    covered = [(stack[-1], len(stack)) for stack in stacks if len(stack) > 1]
    keys = []
    for colour in objectives:
        heights = [h for top, h in covered if top == colour]
        keys.append((tops.count(colour), len(heights), max(heights, default=0)))
    if forfeited:
        return ranks_with_forfeits(keys, forfeited)
    return competition_ranks(keys)


def perft(state: KabaleoState, depth: int) -> int:
    """Count distinct legal move sequences of exactly ``depth`` moves (bulk-counted at the leaves)."""
    if depth < 0:
        raise ValueError("perft depth must be >= 0")
    if depth == 0:
        return 1
    if state.to_move is None:
        return 0
    hands = [list(hand) for hand in state.hands]
    last = state.last if state.config.last_stack and state.last is not None else -1
    search = _Perft(list(state.stacks), hands, state.config.players, state.config.last_stack)
    return search.count(state.to_move, last, depth)


class _Perft:
    """Depth-first move counter that mutates one board in place and undoes each move."""

    def __init__(self, stacks: list[str], hands: list[list[int]], players: int, last_stack: bool) -> None:
        self.stacks = stacks
        self.hands = hands
        self.players = players
        self.last_stack = last_stack

    def count(self, seat: int, last: int, depth: int) -> int:
        """Sequences of ``depth`` moves with ``seat`` to move; 0 if the game ends sooner."""
        hand = self.hands[seat]
        if not any(hand):
            return 0  # turns rotate through every seat, so an empty hand to move means the game is over
        stacks = self.stacks
        if depth == 1:
            total = 0
            for c, n in zip(COLOURS, hand, strict=True):
                if n:
                    total += len(stacks) - stacks.count(c) - (1 if last >= 0 and stacks[last] != c else 0)
            return total
        total = 0
        following = (seat + 1) % self.players
        for ci, c in enumerate(COLOURS):
            if not hand[ci]:
                continue
            hand[ci] -= 1
            for s, stack in enumerate(stacks):
                if stack == c or s == last:
                    continue
                stacks[s] = stack[:-1] if stack[-1] == c else stack + c
                total += self.count(following, s if self.last_stack else -1, depth - 1)
                stacks[s] = stack
            hand[ci] += 1
        return total
