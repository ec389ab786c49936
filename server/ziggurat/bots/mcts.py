"""UCT Monte-Carlo tree search with the engines' fast random playouts, for both games.

Pylos is fully public, so the tree is plain UCT on exact states. Kabaleo hides
the other seats' objectives, so the bot runs *information-set* MCTS: one tree
over public move sequences (objectives never change which moves are legal),
and before every iteration a fresh determinisation of the hidden objectives is
drawn from the seat's own view (:class:`~ziggurat.bots.positions.KabaleoDeterminiser`).
The playout is scored under that sample, so the search averages over every
assignment the seat cannot rule out and never reads the referee's secrets.

Each node keeps the summed reward of the seat that moved into it, where a
reward is the normalised rank (:func:`~ziggurat.bots.common.rank_reward`),
so the same code handles 2 to 4 seats and shared places.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from ziggurat.bots import pylos_eval
from ziggurat.bots.common import Deadline, make_rng, rank_reward
from ziggurat.bots.greedy import GreedyBot
from ziggurat.bots.positions import KabaleoDeterminiser, kabaleo_determiniser, pylos_state_for_turn
from ziggurat.rules.core import Outcome
from ziggurat.rules.registry import get_rules
from ziggurat_client.bot import Turn

ROOT_CANDIDATES = {"kabaleo": 3, "pylos": 8}
"""Default root width per game, tuned on the ladder (Kabaleo vs greedy, 60 games at 0.05 s:
all moves 0.47, 4 moves 0.62, 3 moves 0.76)."""


class _Node:
    """One tree node: the state reached, who moved into it, and its statistics."""

    __slots__ = ("children", "mover", "state", "to_move", "total", "untried", "visits")

    def __init__(self, state: Any, mover: int, to_move: int | None, moves: list[str]) -> None:
        self.state = state
        self.mover = mover
        self.to_move = to_move
        self.untried = moves
        self.children: dict[str, _Node] = {}
        self.visits = 0
        self.total = 0.0


class MctsBot:
    """UCT search bounded by the turn's time budget and an iteration cap."""

    name = "mcts"

    def __init__(
        self,
        seed: int | None = None,
        iterations: int = 200_000,
        exploration: float = 0.7,
        max_seconds: float = 1.0,
        root_candidates: int | None = None,
    ) -> None:
        self.rng = make_rng(seed)
        self.root_candidates = root_candidates
        self._prior = GreedyBot(seed=seed)
        pylos_eval.warm_up()  # first timed move must not pay for table building
        self.iterations = iterations
        self.exploration = exploration
        self.max_seconds = max_seconds
        self.last_iterations = 0  # for benchmarks and tests

    def choose(self, turn: Turn) -> str:
        """Search until the budget or the cap is reached; play the most visited move."""
        if len(turn.legal_moves) == 1:
            return turn.legal_moves[0]
        return self._search(turn, Deadline(turn, self.max_seconds))

    def _search(self, turn: Turn, deadline: Deadline) -> str:
        rules = get_rules(turn.game)
        determiniser: KabaleoDeterminiser | None = None
        if turn.game == "kabaleo":
            determiniser = kabaleo_determiniser(turn)
            root_state: Any = determiniser.base
        else:
            root_state = pylos_state_for_turn(turn)
        root = _Node(root_state, -1, rules.to_move(root_state), self._root_moves(turn, root_state))
        done = 0
        while done < self.iterations and not deadline.expired():
            self._iterate(rules, root, determiniser)
            done += 1
        self.last_iterations = done
        if not root.children:
            return turn.legal_moves[self.rng.randrange(len(turn.legal_moves))]
        return max(root.children.items(), key=lambda item: (item[1].visits, item[1].total))[0]

    def _root_moves(self, turn: Turn, state: Any) -> list[str]:
        """The root's candidates: the ``root_candidates`` best by the greedy score (ties kept).

        A small budget spread over every legal move (up to ~90 in Kabaleo) leaves
        each one a handful of noisy playouts; the one-ply heuristic is a cheap,
        reliable filter, and the search then spends its playouts telling the good
        candidates apart. ``root_candidates=0`` searches every move; None takes the
        game's default from :data:`ROOT_CANDIDATES`.
        """
        moves = list(turn.legal_moves)
        keep = self.root_candidates if self.root_candidates is not None else ROOT_CANDIDATES[turn.game]
        if keep > 0 and len(moves) > keep:
            scored = sorted(self._prior.score_moves(turn, state), reverse=True)
            cut = scored[keep - 1][0]
            moves = [move for score, move in scored if score >= cut]
        return self._shuffled(moves)

    def _shuffled(self, moves: list[str]) -> list[str]:
        self.rng.shuffle(moves)
        return moves

    def _iterate(self, rules: Any, root: _Node, determiniser: KabaleoDeterminiser | None) -> None:
        """Select, expand one node, play out (under a fresh sample of the hidden objectives), back up."""
        node = root
        path = [root]
        while not node.untried and node.children:
            node = self._select(node)
            path.append(node)
        if node.untried and node.to_move is not None:
            move = node.untried.pop()
            state = rules.apply(node.state, move)
            child = _Node(state, node.to_move, rules.to_move(state), self._shuffled(rules.legal_moves(state)))
            node.children[move] = child
            node = child
            path.append(node)
        outcome = self._playout(rules, node.state, determiniser)
        for visited in path:
            visited.visits += 1
            if visited.mover >= 0:
                visited.total += rank_reward(outcome, visited.mover)

    def _playout(self, rules: Any, state: Any, determiniser: KabaleoDeterminiser | None) -> Outcome:
        if determiniser is not None:
            objectives, unheld = determiniser.sample(self.rng)
            state = replace(state, objectives=objectives, unheld=unheld)
        outcome: Outcome = rules.random_playout(state, self.rng)
        return outcome

    def _select(self, node: _Node) -> _Node:
        """UCB1 over the children (every child has been visited once when this is called)."""
        log_n = math.log(node.visits)
        c = self.exploration
        best: _Node | None = None
        best_value = -math.inf
        for child in node.children.values():
            value = child.total / child.visits + c * math.sqrt(log_n / child.visits)
            if value > best_value:
                best, best_value = child, value
        assert best is not None
        return best
