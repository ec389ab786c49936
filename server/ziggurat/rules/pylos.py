"""Pylos: the rules engine (``../shared/rules/pylos.md`` is the specification).

A state is two 30-bit masks (light balls, dark balls; see
:mod:`ziggurat.rules.pylos_geometry` for the numbering), the side to move,
the ply count, the keys of every position seen so far (for the repetition
draw), the outcome and the configuration. States are immutable values.

Decisions the rules page leaves to the implementation, documented once here:

* **Order of the endings after a move.** The top ball wins first (the move
  that places it ends the game whatever else holds). Then the printed rule: the
  player now to move loses if they have no legal move. Then the server rules:
  third occurrence of the position (board and side to move) is a draw, and
  finally reaching the match's move limit is a draw. Printed rules come before
  server rules because the latter only exist to stop endless games.
* **Error precedence in apply.** Text that is not in the notation raises
  :class:`MalformedMoveError` whatever the state (a syntax fault is a client
  bug worth seeing as such); then a finished game raises
  :class:`GameOverError`; then :class:`IllegalMoveError`.
* **Positions and ``-``.** ``-`` as the side to move is read only when the top
  ball is on the board: then the game is decidably over and its owner won. Any
  other finished game (stuck player, repetition, move limit) prints ``-`` but
  its result cannot be read back from the board alone, so such text is
  refused. A position with ``L`` or ``D`` whose side to move has no legal move
  is accepted and is immediately over (that side loses), exactly as if the
  last move had led there. A parsed position carries no history: it counts as
  the first occurrence of itself and its ply count is 0.
"""

from __future__ import annotations

import enum
import functools
import random
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from ziggurat.rules.core import (
    GameOption,
    GameOverError,
    GameRules,
    IllegalMoveError,
    InvalidConfigError,
    InvalidPositionError,
    MalformedMoveError,
    Outcome,
    Termination,
    View,
)
from ziggurat.rules.pylos_geometry import (
    BALLS_PER_COLOUR,
    BELOW,
    INDEX_OF_NAME,
    LEVEL_BASE,
    LEVEL_OF,
    LEVEL_SIZE,
    LINES,
    NAMES,
    PLACES,
    RAISE_TARGETS,
    SQUARES,
    TOP,
    bits,
    completion_tables,
    covered,
    shapes_at,
    supported,
)
from ziggurat.rules.pylos_playout import (
    END_LIMIT,
    END_REPETITION,
    END_STUCK,
    END_TOP,
    CompletionTables,
    playout,
    recovery_options,
)
from ziggurat.rules.seeding import check_seed

SEATS: Final = 2
LIGHT: Final = 0
DARK: Final = 1
_NO_LIMIT: Final = 1 << 62


class Variant(enum.Enum):
    """Match variants: which completed shapes of the mover's colour give a recovery."""

    STANDARD = "standard"
    BEGINNER = "beginner"
    ADVANCED = "advanced"


@dataclass(frozen=True, slots=True)
class PylosConfig:
    """A match configuration; ``max_moves`` (plies) turns an over-long game into a draw."""

    variant: Variant = Variant.STANDARD
    max_moves: int | None = None


@dataclass(frozen=True, slots=True)
class PylosState:
    """An immutable game state; ``seen`` holds the key of every position so far, current included."""

    light: int
    dark: int
    side: int
    ply: int
    seen: tuple[int, ...]
    outcome: Outcome | None
    config: PylosConfig = field(default_factory=PylosConfig)


@dataclass(frozen=True, slots=True)
class PylosMove:
    """A parsed move; places are notation strings so the value is meaningful on its own."""

    source: str | None
    target: str
    recoveries: tuple[str, ...] = ()

    @property
    def notation(self) -> str:
        """The move written in the rules' notation (recoveries in the order held)."""
        head = f"{self.source}-{self.target}" if self.source else self.target
        return head + "".join("x" + r for r in self.recoveries)

    def __str__(self) -> str:
        return self.notation


@dataclass(frozen=True, slots=True)
class PylosView(View):
    """A view of a Pylos game; everything is public, but clients still only ever see views."""

    levels: tuple[str, str, str, str]
    reserves: tuple[int, int]


# ---------------------------------------------------------------------------
# Variant data: which shapes trigger a recovery.

_SHAPES: Final[dict[Variant, tuple[int, ...]]] = {
    Variant.STANDARD: SQUARES,
    Variant.BEGINNER: (),
    Variant.ADVANCED: SQUARES + LINES,
}
_SHAPES_AT: Final = {variant: shapes_at(shapes) for variant, shapes in _SHAPES.items()}
_COMPLETION: dict[Variant, CompletionTables] = {}


def _completion(variant: Variant) -> CompletionTables:
    """Completion tables of a variant, built on first use (they take a moment to build)."""
    tables = _COMPLETION.get(variant)
    if tables is None:
        tables = _COMPLETION[variant] = completion_tables(_SHAPES[variant])
    return tables


# Canonical order of two recoveries: higher level first, then plain string order.
_RECOVERY_RANK: Final = {
    index: rank for rank, index in enumerate(sorted(range(PLACES), key=lambda i: (-LEVEL_OF[i], NAMES[i])))
}

_Move = tuple[int, int, tuple[int, ...]]  # (source or -1, target, recoveries in canonical order)


def _key(light: int, dark: int, side: int) -> int:
    """Pack board and side to move into one int: the repetition rule compares these keys."""
    return light | dark << 30 | side << 60


def _canonical_pair(a: int, b: int) -> tuple[int, int]:
    """Two recoveries in the order the notation prescribes (always a playable order)."""
    return (a, b) if _RECOVERY_RANK[a] < _RECOVERY_RANK[b] else (b, a)


def _triggers(own_after: int, target: int, variant: Variant) -> bool:
    """Whether the ball just played completes a shape of the mover's colour (recovery due)."""
    return any(own_after & shape == shape for shape in _SHAPES_AT[variant][target])


def _base_moves(light: int, dark: int, side: int) -> list[tuple[int, int]]:
    """Every place (source -1) and raise (source, target) before recoveries are chosen."""
    occ = light | dark
    own = dark if side else light
    empty = supported(occ) & ~occ
    out: list[tuple[int, int]] = []
    if own.bit_count() < BALLS_PER_COLOUR:
        out.extend((-1, t) for t in bits(empty))
    free = own & ~covered(occ)
    for s in bits(free):
        for t in bits(empty & RAISE_TARGETS[s]):
            out.append((s, t))
    return out


def _generate(light: int, dark: int, side: int, variant: Variant) -> list[_Move]:
    """Every legal move as index tuples, one per recovery choice."""
    out: list[_Move] = []
    own = dark if side else light
    occ = light | dark
    for src, t in _base_moves(light, dark, side):
        lift = 1 << src if src >= 0 else 0
        own2, occ2 = own & ~lift | 1 << t, occ & ~lift | 1 << t
        if not _triggers(own2, t, variant):
            out.append((src, t, ()))
            continue
        for option in recovery_options(own2, occ2):
            recs = option if len(option) == 1 else _canonical_pair(option[0], option[1])
            out.append((src, t, recs))
    return out


def _play(light: int, dark: int, side: int, move: _Move) -> tuple[int, int]:
    """Return the two colour masks after a move already known to be legal."""
    src, t, recs = move
    change = 1 << t
    if src >= 0:
        change |= 1 << src
    removed = 0
    for r in recs:  # the ball just played may be among them, so remove after placing
        removed |= 1 << r
    return (light, (dark ^ change) & ~removed) if side else ((light ^ change) & ~removed, dark)


def _has_move(light: int, dark: int, side: int) -> bool:
    """Whether the side to move can move: a reserve ball always has an empty supported place."""
    own = dark if side else light
    if own.bit_count() < BALLS_PER_COLOUR:
        return not (light | dark) >> TOP & 1
    return bool(_base_moves(light, dark, side))


@functools.lru_cache(maxsize=4096)
def _sorted_moves(light: int, dark: int, side: int, variant: Variant) -> tuple[str, ...]:
    """Sorted canonical notations of a board's moves, memoised: a server asks for the same
    position's moves several times per ply (validation, the mover's view, its turn event)."""
    return tuple(sorted(_notation(m) for m in _generate(light, dark, side, variant)))


def _notation(move: _Move) -> str:
    """Canonical text of an index move."""
    src, t, recs = move
    head = f"{NAMES[src]}-{NAMES[t]}" if src >= 0 else NAMES[t]
    return head + "".join("x" + NAMES[r] for r in recs)


def _conclude(
    light: int, dark: int, side: int, *, target: int, ply: int, seen: tuple[int, ...], config: PylosConfig
) -> Outcome | None:
    """Decide the outcome after a move (``side`` is now to move), in the documented order."""
    if target == TOP:
        return Outcome.win_for(SEATS, side ^ 1, Termination.PYRAMID_COMPLETE)
    if not _has_move(light, dark, side):
        return Outcome.loss_for(SEATS, side, Termination.NO_LEGAL_MOVE)
    if seen.count(seen[-1]) >= 3:
        return Outcome.draw(SEATS, Termination.REPETITION)
    if config.max_moves is not None and ply >= config.max_moves:
        return Outcome.draw(SEATS, Termination.MOVE_LIMIT)
    return None


# ---------------------------------------------------------------------------
# Move notation.

_PLACE = r"([1-4])([a-d])([1-4])"
_MOVE_RE: Final = re.compile(rf"(?:{_PLACE}-)?{_PLACE}(?:x{_PLACE})?(?:x{_PLACE})?")


def _place_from_groups(groups: tuple[str | None, ...], text: str) -> str | None:
    """Validate one (level, column, row) group against the level's size; None when absent."""
    level, column, row = groups
    if level is None or column is None or row is None:
        return None
    size = LEVEL_SIZE[int(level) - 1]
    if "abcd".index(column) >= size or int(row) > size:
        raise MalformedMoveError(f"{text!r}: level {level} has only {size}x{size} places")
    return f"{level}{column}{row}"


def parse_move(text: str) -> PylosMove:
    """Read ``[FROM-]TO[xA[xB]]``; raise MalformedMoveError for anything else.

    Only the syntax and the pyramid's shape are checked here, so that an
    unreadable move and an unplayable one give different, stable error reasons.
    """
    if not isinstance(text, str):
        raise MalformedMoveError("a move must be text")
    match = _MOVE_RE.fullmatch(text)
    if match is None:
        raise MalformedMoveError(
            f"{text!r} is not a Pylos move (expected [FROM-]TO[xA[xB]], e.g. 1a1-2b2x1c1)"
        )
    groups = match.groups()
    places = [_place_from_groups(groups[i : i + 3], text) for i in range(0, 12, 3)]
    source, target, first, second = places
    assert target is not None
    if first is None and second is not None:  # pragma: no cover - the regex forbids it
        raise MalformedMoveError(f"{text!r} is not a Pylos move")
    recoveries = tuple(r for r in (first, second) if r is not None)
    return PylosMove(source, target, recoveries)


# ---------------------------------------------------------------------------
# Legality with public explanations.


def _check_recoveries(own: int, occ: int, recs: tuple[int, ...]) -> str | None:
    """Why recovering ``recs`` in this order is impossible, or None when it is playable."""
    for r in recs:
        bit = 1 << r
        if not occ & bit:
            return f"{NAMES[r]} is empty" if recs.count(r) == 1 else f"{NAMES[r]} cannot be recovered twice"
        if not own & bit:
            return f"{NAMES[r]} is not your ball"
        if covered(occ) & bit:
            return f"{NAMES[r]} is not free"
        own ^= bit
        occ ^= bit
    return None


def _check_base(state: PylosState, src: int, t: int) -> None:
    """Raise IllegalMoveError when the place or raise itself (before recoveries) is not legal."""
    occ = state.light | state.dark
    own = state.dark if state.side else state.light
    if occ >> t & 1:
        raise IllegalMoveError(f"{NAMES[t]} is occupied")
    if src < 0:
        if own.bit_count() >= BALLS_PER_COLOUR:
            raise IllegalMoveError("you have no ball in reserve: you can only raise a ball")
        if BELOW[t] & occ != BELOW[t]:
            raise IllegalMoveError(f"{NAMES[t]} is not supported")
        return
    if not own >> src & 1:
        raise IllegalMoveError(
            f"{NAMES[src]} is not your ball" if occ >> src & 1 else f"{NAMES[src]} is empty"
        )
    if covered(occ) >> src & 1:
        raise IllegalMoveError(f"{NAMES[src]} is not free")
    if LEVEL_OF[t] <= LEVEL_OF[src]:
        raise IllegalMoveError(f"a ball can only be raised to a higher level ({NAMES[src]} to {NAMES[t]})")
    if BELOW[t] >> src & 1:
        raise IllegalMoveError(f"{NAMES[src]} cannot be raised onto a square it is part of")
    if BELOW[t] & occ != BELOW[t]:
        raise IllegalMoveError(f"{NAMES[t]} is not supported")


def _resolve(state: PylosState, move: PylosMove) -> _Move:
    """Return the canonical index move for a parsed move, or raise IllegalMoveError saying why not."""
    src = INDEX_OF_NAME[move.source] if move.source else -1
    t = INDEX_OF_NAME[move.target]
    recs = tuple(INDEX_OF_NAME[r] for r in move.recoveries)
    _check_base(state, src, t)
    own = state.dark if state.side else state.light
    occ = state.light | state.dark
    lift = 1 << src if src >= 0 else 0
    own2, occ2 = own & ~lift | 1 << t, occ & ~lift | 1 << t
    variant = state.config.variant
    if not _triggers(own2, t, variant):
        if recs:
            if variant is Variant.BEGINNER:
                raise IllegalMoveError("there is no recovery in the beginner variant")
            raise IllegalMoveError(
                f"no {_shape_words(variant)} of your colour was completed: no ball may be recovered"
            )
        return (src, t, ())
    if not recs:
        raise IllegalMoveError(
            f"a {_shape_words(variant)} of your colour was completed: you must recover at least one ball"
        )
    # The canonical order is always playable, so checking the order as written accepts it and
    # accepts the other order exactly when that order is playable too, as the rules page says.
    why = _check_recoveries(own2, occ2, recs)
    if why is not None:
        raise IllegalMoveError(why)
    return (src, t, recs if len(recs) == 1 else _canonical_pair(recs[0], recs[1]))


def _shape_words(variant: Variant) -> str:
    """How the error messages name the shapes that count in a variant."""
    return "square or line" if variant is Variant.ADVANCED else "square"


# ---------------------------------------------------------------------------
# Positions.


@functools.lru_cache(maxsize=4096)
def _levels(light: int, dark: int) -> tuple[str, str, str, str]:
    """Each level's places as ``L``/``D``/``.`` in notation order (memoised: every view of a
    position, one per seat and spectator, writes the same board)."""
    chars = ["L" if light >> i & 1 else "D" if dark >> i & 1 else "." for i in range(PLACES)]
    parts = ["".join(chars[LEVEL_BASE[lv] : LEVEL_BASE[lv] + LEVEL_SIZE[lv] ** 2]) for lv in range(4)]
    return (parts[0], parts[1], parts[2], parts[3])


def _format(state: PylosState) -> str:
    """Write the position string of a state."""
    side = "-" if state.outcome is not None else "LD"[state.side]
    return "/".join(_levels(state.light, state.dark)) + " " + side


def _parse_board(text: str) -> tuple[int, int, str]:
    """Read the board and side fields; raise InvalidPositionError on any inconsistency."""
    fields = text.split(" ")
    if len(fields) != 2 or fields[1] not in ("L", "D", "-"):
        raise InvalidPositionError(f"{text!r}: expected 'L1/L2/L3/L4 SIDE' with SIDE one of L, D, -")
    levels = fields[0].split("/")
    if len(levels) != 4:
        raise InvalidPositionError(f"{text!r}: expected four levels separated by '/'")
    light = dark = 0
    for lv, row_text in enumerate(levels):
        if len(row_text) != LEVEL_SIZE[lv] ** 2:
            raise InvalidPositionError(f"{text!r}: level {lv + 1} must have {LEVEL_SIZE[lv] ** 2} places")
        for k, char in enumerate(row_text):
            bit = 1 << (LEVEL_BASE[lv] + k)
            if char == "L":
                light |= bit
            elif char == "D":
                dark |= bit
            elif char != ".":
                raise InvalidPositionError(f"{text!r}: {char!r} is not L, D or '.'")
    occ = light | dark
    floating = occ & ~supported(occ)
    if floating:
        raise InvalidPositionError(
            f"{text!r}: the ball on {NAMES[floating.bit_length() - 1]} is not supported"
        )
    for name, mask in (("light", light), ("dark", dark)):
        if mask.bit_count() > BALLS_PER_COLOUR:
            raise InvalidPositionError(f"{text!r}: {name} has more than {BALLS_PER_COLOUR} balls")
    return light, dark, fields[1]


# ---------------------------------------------------------------------------
# The rules object.


class PylosRules:
    """Pylos behind the shared :class:`~ziggurat.rules.core.GameRules` contract."""

    name = "pylos"
    title = "Pylos"
    min_seats = SEATS
    max_seats = SEATS
    options: tuple[GameOption, ...] = (
        GameOption(
            "variant",
            "rule variant (rules/pylos.md, Variants)",
            ("standard", "beginner", "advanced"),
            "standard",
        ),
        GameOption(
            "max_moves", "a positive number: the game is drawn after this many moves; empty: no limit"
        ),
    )
    hidden_information = False  # perfect information: no seat ever has a twin
    private_moves = False  # every move is public
    duplicate_deals = False  # nothing is dealt: the seed plays no part in the set-up
    openings = True  # one empty board for every seed, every move public: a book of openings fits
    perft_ignores = frozenset({Termination.REPETITION})  # perft reads the board, not the history

    def option_examples(self, seats: int) -> list[dict[str, str]]:
        """Defaults, each other variant, and a move limit short enough to be reached."""
        return [{}, {"variant": "beginner"}, {"variant": "advanced", "max_moves": "40"}, {"max_moves": "12"}]

    def parse_config(self, options: Mapping[str, str], seats: int) -> PylosConfig:
        """Options ``variant`` and ``max_moves`` only, so a typo never silently changes a match."""
        if seats != SEATS:
            raise InvalidConfigError(f"pylos is played by exactly 2 seats, not {seats}")
        unknown = sorted(set(options) - {"variant", "max_moves"})
        if unknown:
            raise InvalidConfigError(
                f"unknown pylos option(s): {', '.join(unknown)} (known: variant, max_moves)"
            )
        variant = Variant.STANDARD
        if "variant" in options:
            try:
                variant = Variant(options["variant"])
            except ValueError:
                known = ", ".join(v.value for v in Variant)
                raise InvalidConfigError(
                    f"unknown pylos variant {options['variant']!r} (known: {known})"
                ) from None
        max_moves = None
        if "max_moves" in options:
            text = options["max_moves"]
            if not (text.isascii() and text.isdigit()) or int(text) <= 0:
                raise InvalidConfigError(f"max_moves must be a positive whole number, not {text!r}")
            max_moves = int(text)
        return PylosConfig(variant, max_moves)

    def config_options(self, config: PylosConfig) -> dict[str, str]:
        """Invert :meth:`parse_config`; defaults are omitted to keep records short."""
        out: dict[str, str] = {}
        if config.variant is not Variant.STANDARD:
            out["variant"] = config.variant.value
        if config.max_moves is not None:
            out["max_moves"] = str(config.max_moves)
        return out

    def new_game(self, config: PylosConfig, seed: bytes) -> PylosState:
        """Start on the empty board, light to move; no hidden set-up, so the seed is only checked."""
        check_seed(seed)
        return PylosState(0, 0, LIGHT, 0, (_key(0, 0, LIGHT),), None, config)

    def legal_moves(self, state: PylosState) -> list[str]:
        """Canonical notations of every legal move, each recovery choice separately, sorted."""
        if state.outcome is not None:
            return []
        return list(_sorted_moves(state.light, state.dark, state.side, state.config.variant))

    def _resolve_text(self, state: PylosState, move: str) -> _Move:
        """Parse and check a move text with the documented error precedence."""
        parsed = parse_move(move)
        if state.outcome is not None:
            raise GameOverError("the game is over")
        return _resolve(state, parsed)

    def apply(self, state: PylosState, move: str) -> PylosState:
        """Return the state after ``move`` (any playable recovery order is accepted)."""
        return self._apply_resolved(state, self._resolve_text(state, move))

    def _apply_resolved(self, state: PylosState, move: _Move) -> PylosState:
        """Build the next state from a checked move and decide whether the game ended."""
        light, dark = _play(state.light, state.dark, state.side, move)
        side = state.side ^ 1
        ply = state.ply + 1
        seen = (*state.seen, _key(light, dark, side))
        outcome = _conclude(light, dark, side, target=move[1], ply=ply, seen=seen, config=state.config)
        return PylosState(light, dark, side, ply, seen, outcome, state.config)

    def apply_canonical(self, state: PylosState, move: str) -> tuple[PylosState, str]:
        """The state after ``move`` and its canonical notation, the text resolved once."""
        resolved = self._resolve_text(state, move)
        return self._apply_resolved(state, resolved), _notation(resolved)

    def canonical_move(self, state: PylosState, move: str) -> str:
        """Return the canonical notation of a legal move, as records store it."""
        return _notation(self._resolve_text(state, move))

    def parse_move(self, text: str) -> PylosMove:
        """Read the notation alone (see :func:`parse_move`)."""
        return parse_move(text)

    def format_move(self, move: PylosMove) -> str:
        """Print a parsed move, recoveries in the order held."""
        return move.notation

    def to_move(self, state: PylosState) -> int | None:
        """Seat 0 is light, seat 1 dark; None once the game is over."""
        return None if state.outcome is not None else state.side

    def outcome(self, state: PylosState) -> Outcome | None:
        """Return the outcome when the game is over."""
        return state.outcome

    def seats(self, state: PylosState) -> int:
        """Return 2: Pylos is a two-player game."""
        return SEATS

    def parse_position(self, text: str, config: PylosConfig) -> PylosState:
        """Read ``L1/L2/L3/L4 SIDE`` (see the module notes for ``-`` and stuck positions)."""
        light, dark, side_char = _parse_board(text)
        top = (light | dark) >> TOP & 1
        if side_char == "-":
            if not top:
                raise InvalidPositionError(
                    f"{text!r}: '-' (game over) can only be read with the top ball placed; "
                    "otherwise the result cannot be known from the board"
                )
            winner = LIGHT if light >> TOP & 1 else DARK
            outcome: Outcome | None = Outcome.win_for(SEATS, winner, Termination.PYRAMID_COMPLETE)
            return PylosState(light, dark, winner ^ 1, 0, (_key(light, dark, winner ^ 1),), outcome, config)
        if top:
            raise InvalidPositionError(f"{text!r}: the top ball is placed, so the game is over (side '-')")
        side = LIGHT if side_char == "L" else DARK
        outcome = None
        if not _has_move(light, dark, side):
            outcome = Outcome.loss_for(SEATS, side, Termination.NO_LEGAL_MOVE)
        return PylosState(light, dark, side, 0, (_key(light, dark, side),), outcome, config)

    def format_position(self, state: PylosState) -> str:
        """Write the position string; ``-`` for the side once the game is over."""
        return _format(state)

    def random_move(self, state: PylosState, rng: random.Random) -> str:
        """Draw a legal move uniformly from :meth:`legal_moves` (time-out substitution)."""
        moves = self.legal_moves(state)
        if not moves:
            raise GameOverError("the game is over")
        return moves[rng.randrange(len(moves))]

    def forfeit(self, state: PylosState, seat: int, termination: Termination) -> PylosState:
        """End the game with ``seat`` losing (resignation, time-out)."""
        if state.outcome is not None:
            raise GameOverError("the game is over")
        if seat not in (LIGHT, DARK):
            raise ValueError(f"pylos has seats 0 and 1, not {seat}")
        outcome = Outcome.loss_for(SEATS, seat, termination)
        return PylosState(state.light, state.dark, state.side, state.ply, state.seen, outcome, state.config)

    def view(self, state: PylosState, seat: int | None, *, released: bool = False) -> PylosView:
        """Everything in Pylos is public, but the view is still built field by field; the
        outcome is the match's to release, as in every game (GameRules.view)."""
        return self._view(state, seat, referee=False, released=released)

    def referee_view(self, state: PylosState) -> PylosView:
        """Show the same facts as any view, flagged as the referee's."""
        return self._view(state, None, referee=True, released=True)

    def _view(self, state: PylosState, seat: int | None, *, referee: bool, released: bool) -> PylosView:
        """Build a view from public facts only."""
        state_to_move = self.to_move(state)
        return PylosView(
            game=self.name,
            viewer=seat,
            referee=referee,
            seats=SEATS,
            to_move=state_to_move,
            ply=state.ply,
            position=_format(state),
            # Legal moves are told to the seat to move (and the referee) only, as in Kabaleo.
            legal_moves=tuple(self.legal_moves(state)) if referee or seat == state_to_move else (),
            outcome=state.outcome if released else None,
            levels=_levels(state.light, state.dark),
            reserves=(
                BALLS_PER_COLOUR - state.light.bit_count(),
                BALLS_PER_COLOUR - state.dark.bit_count(),
            ),
        )

    def twin(self, state: PylosState, seat: int | None, rng: random.Random) -> None:
        """None: Pylos hides nothing from anybody, so no two states look alike to a seat."""
        return None

    def perft(self, state: PylosState, depth: int) -> int:
        """Distinct move sequences of exactly ``depth`` moves; repetition never ends a game here."""
        if depth == 0:
            return 1
        if state.outcome is not None:
            return 0
        limit = state.config.max_moves if state.config.max_moves is not None else _NO_LIMIT
        return _perft(
            state.light,
            state.dark,
            state.side,
            depth=depth,
            ply=state.ply,
            limit=limit,
            variant=state.config.variant,
        )

    def random_playout(self, state: PylosState, rng: random.Random) -> Outcome:
        """Play uniformly random legal moves to the end under the full rules; the MCTS workhorse."""
        return random_playout(state, rng)


def _perft(light: int, dark: int, side: int, *, depth: int, ply: int, limit: int, variant: Variant) -> int:
    """Recursive perft on masks (``depth`` >= 1, game not over at entry)."""
    moves = _generate(light, dark, side, variant)
    if depth == 1:
        return len(moves)
    total = 0
    for move in moves:
        if move[1] == TOP or ply + 1 >= limit:
            continue
        nl, nd = _play(light, dark, side, move)
        total += _perft(nl, nd, side ^ 1, depth=depth - 1, ply=ply + 1, limit=limit, variant=variant)
    return total


_END_TERMINATION: Final = {
    END_TOP: Termination.PYRAMID_COMPLETE,
    END_STUCK: Termination.NO_LEGAL_MOVE,
    END_REPETITION: Termination.REPETITION,
    END_LIMIT: Termination.MOVE_LIMIT,
}


def random_playout(state: PylosState, rng: random.Random) -> Outcome:
    """Finish the game with uniformly random moves (each recovery choice a move); return the outcome.

    Uses the specialised mask loop of :mod:`ziggurat.rules.pylos_playout`
    rather than :meth:`PylosRules.apply`, which is what makes it fast enough
    for tree search; the repetition history of ``state`` is honoured.
    """
    if state.outcome is not None:
        return state.outcome
    limit = state.config.max_moves if state.config.max_moves is not None else _NO_LIMIT
    seen = dict(Counter(state.seen))
    code, seat, _ = playout(
        state.light,
        state.dark,
        state.side,
        ply=state.ply,
        seen=seen,
        move_limit=limit,
        completion=_completion(state.config.variant),
        rng=rng,
    )
    termination = _END_TERMINATION[code]
    if code == END_TOP:
        return Outcome.win_for(SEATS, seat, termination)
    if code == END_STUCK:
        return Outcome.loss_for(SEATS, seat, termination)
    return Outcome.draw(SEATS, termination)


PYLOS: Final = PylosRules()

if TYPE_CHECKING:
    _CONTRACT: GameRules[PylosConfig, PylosState, PylosMove] = PYLOS
