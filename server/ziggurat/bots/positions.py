"""Rebuild a rules state from a :class:`~ziggurat_client.bot.Turn`, and nothing else.

Search bots need a state they can hand to the engines (``legal_moves``,
``apply``, ``random_playout``), but a seat only ever receives its own view. This
module is the single place that turns a view back into a state, so the rule
"a bot never peeks" is enforced by construction: every function here takes the
turn (or values derived from it) and never a referee state.

* **Pylos** is fully public. The position text does not carry the repetition
  history, so when ``turn.history`` replays from the empty board to exactly the
  position shown, the replayed state is used (it knows every position seen so
  far and the real ply, so the repetition draw and ``max_moves`` are searched
  correctly). Otherwise the position is parsed alone: repetitions before it are
  unknown to the search (a documented, accepted approximation), and the ply is
  taken from the turn so a move limit is still honoured.
* **Kabaleo** hides the other seats' objectives and the two unheld colours
  (``?`` in the text). :class:`KabaleoDeterminiser` fills them with a uniformly
  random assignment of the colours in play (the base colours on the board) that
  are not already visible: one *determinisation* of the information set.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any

from ziggurat.rules.kabaleo import KABALEO, KabaleoState
from ziggurat.rules.kabaleo_model import canonical_colours
from ziggurat.rules.pylos import PYLOS, PylosState
from ziggurat_client.bot import Turn


def pylos_state_for_turn(turn: Turn) -> PylosState:
    """The Pylos state the seat sees, with history when the turn's move list reproduces it."""
    config = PYLOS.parse_config(turn.options, turn.seats)
    parsed = PYLOS.parse_position(turn.view.position, config)
    if turn.history and len(turn.history) == turn.ply:
        try:
            state = PYLOS.new_game(config, bytes(32))
            for move in turn.history:
                state = PYLOS.apply(state, move)
        except ValueError:
            state = parsed
        else:
            if PYLOS.format_position(state) == turn.view.position and state.outcome is None:
                return state
    return replace(parsed, ply=turn.ply)


@dataclass(frozen=True, slots=True)
class KabaleoDeterminiser:
    """The public part of a Kabaleo turn, able to draw complete states consistent with it.

    ``base`` is a full state whose hidden objectives are placeholders (never
    scored); :meth:`sample` swaps in a fresh uniformly random assignment. The
    tree of a search can be built on ``base`` because objectives never change
    which moves are legal, only who wins.
    """

    base: KabaleoState
    held: tuple[str | None, ...]  # per seat: the visible objective, None when hidden
    unheld: tuple[str | None, str | None]
    free_colours: str  # colours in play not visible anywhere, RYGBOP order

    def sample(self, rng: random.Random) -> tuple[tuple[str, ...], tuple[str, str]]:
        """A uniformly random (objectives, unheld) pair consistent with what the seat sees."""
        pool = list(self.free_colours)
        rng.shuffle(pool)
        objectives = []
        for letter in self.held:
            objectives.append(letter if letter is not None else pool.pop())
        # Unheld colours are a set: whatever is left (plus any visible ones), printed in RYGBOP order.
        rest = [c for c in self.unheld if c is not None] + pool
        ordered = canonical_colours(rest)
        return tuple(objectives), (ordered[0], ordered[1])

    def state(self, rng: random.Random) -> KabaleoState:
        """A complete state: the public facts plus one sampled determinisation."""
        objectives, unheld = self.sample(rng)
        return replace(self.base, objectives=objectives, unheld=unheld)


def kabaleo_determiniser(turn: Turn) -> KabaleoDeterminiser:
    """Read the seat's view text; hidden letters become placeholders until sampled."""
    config = KABALEO.parse_config(turn.options, turn.seats)
    fields = turn.view.position.split(" ")
    if len(fields) != 5:
        raise ValueError(f"a Kabaleo position has 5 fields, got {len(fields)}")
    in_play = canonical_colours({stack[0] for stack in fields[0].split("/")})
    held_text, _, unheld_text = fields[4].partition("+")
    held = tuple(None if c == "?" else c for c in held_text)
    unheld_visible = tuple(None if c == "?" else c for c in unheld_text)
    if len(unheld_visible) != 2:
        raise ValueError(f"bad OBJECTIVES field {fields[4]!r}")
    visible = {c for c in (*held, *unheld_visible) if c is not None}
    free = canonical_colours(set(in_play) - visible)
    determiniser = KabaleoDeterminiser(
        base=KABALEO.parse_position(turn.view.position, config)
        if "?" not in fields[4]
        else _parse_with_placeholders(fields, config, held, unheld_visible, free),
        held=held,
        unheld=(unheld_visible[0], unheld_visible[1]),
        free_colours=free,
    )
    forfeited = frozenset(seat - 1 for seat in turn.view.kabaleo.forfeited_seats)
    if forfeited:
        determiniser = replace(determiniser, base=replace(determiniser.base, forfeited=forfeited))
    return determiniser


def _parse_with_placeholders(
    fields: list[str],
    config: Any,
    held: tuple[str | None, ...],
    unheld: tuple[str | None, ...],
    free: str,
) -> KabaleoState:
    """Parse the view with the hidden letters filled deterministically (RYGBOP order): a valid
    full position the engine accepts, whose objectives are placeholders (see :meth:`sample`).
    """
    pool = list(free)
    objectives = "".join(c if c is not None else pool.pop(0) for c in held)
    rest = canonical_colours([c for c in unheld if c is not None] + pool)
    text = " ".join([*fields[:4], f"{objectives}+{rest}"])
    return KABALEO.parse_position(text, config)


def state_for_turn(turn: Turn, rng: random.Random) -> Any:
    """A full rules state for ``turn``: exact for Pylos, one random determinisation for Kabaleo."""
    if turn.game == "pylos":
        return pylos_state_for_turn(turn)
    if turn.game == "kabaleo":
        return kabaleo_determiniser(turn).state(rng)
    raise ValueError(f"unknown game {turn.game!r}")
