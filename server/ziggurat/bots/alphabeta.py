"""Pylos alpha-beta: iterative-deepening negamax with a transposition table.

Pylos is public and deterministic, so classic game-tree search applies. Each
iteration searches one ply deeper; the move of the last *completed* depth is
played, so the clock can cut a search short at any node without risk. The
transposition table is keyed on the engine's board ints (``light | dark << 30
| side << 60``, the same key the repetition rule uses) and keeps the best
move of each position to order the next, deeper search.

Repetitions: a position already on the current search path, or seen twice in
the game (third occurrence = draw), scores as a draw.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Final

from ziggurat.bots import pylos_eval
from ziggurat.bots.common import Deadline, make_rng
from ziggurat.bots.positions import pylos_state_for_turn
from ziggurat.bots.pylos_eval import WIN, Move, evaluate, generate, notation, order_key, play
from ziggurat.rules.pylos import PylosState, Variant
from ziggurat_client.bot import Turn

EXACT: Final = 0
LOWER: Final = 1
UPPER: Final = 2
_CHECK_EVERY: Final = 128
_TT_LIMIT: Final = 1_000_000


class _Timeout(Exception):
    """Raised inside the search when the deadline passes; the depth in progress is discarded."""


class AlphaBetaBot:
    """Iterative deepening negamax with alpha-beta, TT and move ordering, for Pylos only."""

    name = "alphabeta"

    def __init__(self, seed: int | None = None, max_depth: int = 64, max_seconds: float = 1.0) -> None:
        self.rng = make_rng(seed)
        self.max_depth = max_depth
        self.max_seconds = max_seconds
        self.table: dict[int, tuple[int, int, int, Move | None]] = {}
        self.last_depth = 0  # deepest completed search of the last move (benchmarks, tests)
        self.nodes = 0
        self._end = 0.0
        self._variant = Variant.STANDARD
        self._seen: Counter[int] = Counter()
        self._path: set[int] = set()
        pylos_eval.warm_up()  # first timed move must not pay for table building

    def choose(self, turn: Turn) -> str:
        """Deepen until the budget runs out; return the best move of the deepest finished depth."""
        if turn.game != "pylos":
            raise ValueError("alphabeta plays Pylos only")
        if len(turn.legal_moves) == 1:
            return turn.legal_moves[0]
        state = pylos_state_for_turn(turn)
        return self.search(state, Deadline(turn, self.max_seconds))

    def search(self, state: PylosState, deadline: Deadline) -> str:
        """Iterative deepening from ``state`` within ``deadline``."""
        if len(self.table) > _TT_LIMIT:
            self.table.clear()
        self._end = deadline.end
        self._variant = state.config.variant
        self._seen = Counter(state.seen)
        self._path = set()
        self.nodes = 0
        moves = generate(state.light, state.dark, state.side, self._variant)
        self.rng.shuffle(moves)  # random among equals, so games vary
        moves.sort(key=order_key, reverse=True)
        best = moves[0]
        self.last_depth = 0
        for depth in range(1, self.max_depth + 1):
            try:
                value, move = self._root(state, moves, depth)
            except _Timeout:
                break
            best = move
            self.last_depth = depth
            if abs(value) >= WIN - 1000:
                break  # a forced result is known: deeper search cannot change it
            moves.remove(move)
            moves.insert(0, move)
        return notation(best)

    def _root(self, state: PylosState, moves: list[Move], depth: int) -> tuple[int, Move]:
        alpha, beta = -WIN - 1, WIN + 1
        best_move = moves[0]
        key = _key(state.light, state.dark, state.side)
        self._path.add(key)
        try:
            for move in moves:
                if move[1] == pylos_eval.TOP:
                    return WIN - 1, move
                light, dark = play(state.light, state.dark, state.side, move)
                value = -self._negamax(light, dark, state.side ^ 1, depth - 1, -beta, -alpha, 1)
                if value > alpha:
                    alpha, best_move = value, move
        finally:
            self._path.discard(key)
        return alpha, best_move

    def _negamax(  # noqa: PLR0917 - hot path: positional arguments are cheapest in CPython
        self, light: int, dark: int, side: int, depth: int, alpha: int, beta: int, ply: int
    ) -> int:
        self.nodes += 1
        if self.nodes % _CHECK_EVERY == 0 and time.monotonic() >= self._end:
            raise _Timeout
        key = _key(light, dark, side)
        if key in self._path or self._seen.get(key, 0) >= 2:
            return 0
        variant: Variant = self._variant
        if depth <= 0:
            own = dark if side else light
            if own.bit_count() < 15:  # a reserve ball always has a place: not stuck
                return _at_ply(evaluate(light, dark, side, variant), ply)
        entry = self.table.get(key) if depth > 0 else None
        tt_move: Move | None = None
        if entry is not None:
            # Probe before generating moves: a cut here saves the generator, the costliest step.
            e_depth, e_value, e_flag, tt_move = entry
            if e_depth >= depth:
                if e_flag == EXACT:
                    return e_value
                if e_flag == LOWER and e_value >= beta:
                    return e_value
                if e_flag == UPPER and e_value <= alpha:
                    return e_value
        moves = generate(light, dark, side, variant)
        if not moves:
            return -(WIN - ply)  # stuck: the side to move loses
        if depth <= 0:
            return _at_ply(evaluate(light, dark, side, variant), ply)
        moves.sort(key=order_key, reverse=True)
        if tt_move is not None and tt_move in moves:
            moves.remove(tt_move)
            moves.insert(0, tt_move)
        original_alpha = alpha
        best = -WIN - 1
        best_move: Move | None = None
        self._path.add(key)
        try:
            for move in moves:
                if move[1] == pylos_eval.TOP:
                    best, best_move = WIN - ply - 1, move
                    break
                nl, nd = play(light, dark, side, move)
                value = -self._negamax(nl, nd, side ^ 1, depth - 1, -beta, -alpha, ply + 1)
                if value > best:
                    best, best_move = value, move
                alpha = max(alpha, value)
                if alpha >= beta:
                    break
        finally:
            self._path.discard(key)
        flag = UPPER if best <= original_alpha else LOWER if best >= beta else EXACT
        self.table[key] = (depth, best, flag, best_move)
        return best


def _key(light: int, dark: int, side: int) -> int:
    """The engine's repetition key, reused as the transposition key."""
    return light | dark << 30 | side << 60


def _at_ply(value: int, ply: int) -> int:
    """Turn the evaluation's "top is ours" win into a distance-aware score, so the search prefers
    the fastest win and the slowest loss.
    """
    return WIN - ply - 1 if value >= WIN - 1 else value
