"""Types shared by every game: errors, outcomes, rankings and the game contract.

Every game module (``pylos``, ``kabaleo``, ``phantom_ttt``) provides one object that satisfies
:class:`GameRules`. The server, the CLI and the bots only ever talk to games
through that contract, so adding a game never touches them.

Errors are ``ValueError`` subclasses (as in python-chess) carrying a stable,
machine-readable ``reason`` string that the wire layer copies into the gRPC
status details. Messages must never contain hidden information: they may name
the move the caller sent and public facts only.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar


class RulesError(ValueError):
    """Base class of every error raised by the rules layer."""

    reason = "RULES_ERROR"


class MalformedMoveError(RulesError):
    """The move text is not in the game's notation at all (``"zz9"``)."""

    reason = "MALFORMED_MOVE"


class IllegalMoveError(RulesError):
    """The move is well formed but not legal in this position."""

    reason = "ILLEGAL_MOVE"


class GameOverError(RulesError):
    """A move was given for a game that has already ended."""

    reason = "GAME_OVER"


class InvalidPositionError(RulesError):
    """A position string could not be read or describes an impossible position."""

    reason = "INVALID_POSITION"


class InvalidConfigError(RulesError):
    """A match configuration is not allowed (e.g. Kabaleo ``equal`` deal with 4 players)."""

    reason = "INVALID_CONFIG"


class Termination(enum.Enum):
    """Why a game ended. Values are the stable lower-case names used on the wire and in records."""

    NORMAL = "normal"  # by the game's own rules: every Kabaleo piece placed; tic-tac-toe's line or full board
    PYRAMID_COMPLETE = "pyramid_complete"  # Pylos: the top ball was placed
    NO_LEGAL_MOVE = "no_legal_move"  # Pylos: the player to move is stuck
    REPETITION = "repetition"  # Pylos: third occurrence of a position
    MOVE_LIMIT = "move_limit"  # the match's maximum number of moves was reached
    RESIGNATION = "resignation"
    TIMEOUT = "timeout"  # a seat lost on time under the forfeit policy
    ABORTED = "aborted"  # the match was cancelled; nobody wins
    ILLEGAL_MOVE = "illegal_move"  # a seat exceeded the match's limit of illegal moves
    ABANDONED = "abandoned"  # a seat away for the match's claim time was claimed by another


def competition_ranks(keys: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    """Rank seats by key, greatest first; equal keys share a rank ("1224" ranking).

    >>> competition_ranks([(3,), (5,), (3,), (1,)])
    (2, 1, 2, 4)
    """
    return tuple(1 + sum(1 for other in keys if other > key) for key in keys)


@dataclass(frozen=True, slots=True)
class Outcome:
    """End of a game as a value: why it ended and the rank of every seat.

    ``ranks[i]`` is the rank of seat ``i`` (0-based seat index, rank 1 is best;
    tied seats share a rank). A draw is every seat at rank 1.
    """

    termination: Termination
    ranks: tuple[int, ...]

    @property
    def winners(self) -> tuple[int, ...]:
        """Seats (0-based) that share first place."""
        return tuple(i for i, rank in enumerate(self.ranks) if rank == 1)

    @property
    def is_draw(self) -> bool:
        """True when every seat shares first place."""
        return all(rank == 1 for rank in self.ranks)

    @classmethod
    def win_for(cls, seats: int, winner: int, termination: Termination) -> Outcome:
        """One winner, everybody else shares second place."""
        return cls(termination, tuple(1 if s == winner else 2 for s in range(seats)))

    @classmethod
    def loss_for(cls, seats: int, loser: int, termination: Termination) -> Outcome:
        """One loser ranked last, everybody else shares first place."""
        return cls(termination, tuple(seats if s == loser and seats > 1 else 1 for s in range(seats)))

    @classmethod
    def draw(cls, seats: int, termination: Termination) -> Outcome:
        """Every seat shares first place."""
        return cls(termination, (1,) * seats)


@dataclass(frozen=True, slots=True)
class View:
    """What one viewer may know of a game: the base of every game's view type.

    Views are built only by a game's ``view``/``referee_view`` functions, never by
    blanking fields of a state, so nothing hidden can ride along by accident.
    ``viewer`` is the 0-based seat, or None for a spectator (and for the
    referee view, where ``referee`` is True).
    """

    game: str
    viewer: int | None
    referee: bool
    seats: int
    to_move: int | None
    ply: int
    position: str
    legal_moves: tuple[str, ...]
    outcome: Outcome | None


@dataclass(frozen=True, slots=True)
class GameOption:
    """One rule option as a game declares it: what lobbies, the command line's help and
    ``MatchService.ListGames`` offer, so that none of them needs to know the game.

    ``choices`` lists every accepted value when there are few (empty: free text or a number,
    as ``description`` says); ``default`` is the value an omitted option takes, spelled as the
    option is (``""`` when omitting it means "none", as Kabaleo's ``colours``).
    """

    key: str
    description: str
    choices: tuple[str, ...] = ()
    default: str = ""


StateT = TypeVar("StateT")
ConfigT = TypeVar("ConfigT")
MoveT = TypeVar("MoveT")


class GameRules(Protocol, Generic[ConfigT, StateT, MoveT]):
    """The contract every game implements (``docs/game-contract.md``). States are immutable values.

    Seats are 0-based indices here; notations that show seats (Kabaleo) print
    them 1-based as the rules pages say. Every promise below is checked for every
    game in :data:`ziggurat.rules.registry.GAMES` by ``tests/contract``, so a game
    that is registered gets the whole suite, and a broken promise fails it.
    """

    name: str
    """The registry key and the ``View.game`` of every view (the wire codec maps it to the proto enum)."""
    title: str
    """The game's name as people read it ("Pylos", "Phantom tic-tac-toe")."""
    min_seats: int
    max_seats: int
    options: tuple[GameOption, ...]
    """Every option :meth:`parse_config` accepts, in the order a form shows them."""
    hidden_information: bool
    """True when some seat may not see part of the state before the end (Kabaleo's objectives).
    Then :meth:`twin` must find a twin for every viewer at the start, or (when secrets arise
    only in play, as phantom tic-tac-toe's marks) later in a game; when False, :meth:`twin`
    always returns None and every view shows the whole position."""
    private_moves: bool
    """True when a move shows only its mover what it did and the others learn only that a ply
    passed (phantom tic-tac-toe); False when every viewer learns each move (Pylos, Kabaleo).
    With private moves the legal moves and error messages are the mover's alone, and a seat
    learns from its own moves, so a twin need keep them only for the mover and the suite
    follows twins only through the other seats' moves."""
    duplicate_deals: bool
    """True when the set-up deals hidden information from the seed (Kabaleo's objectives), so a
    tournament may replay one deal with the seats rotated and compare how each player did with
    the same cards. The suite checks that such a game has hidden information, that different
    seeds deal differently, and that every viewer has a twin at the start (something is dealt)."""
    openings: bool
    """True when a tournament may start games from a book of opening moves (Pylos): the set-up
    does not depend on the seed, so an opening means the same position in every game, and
    every move is public, so the book (public text) tells no seat what it may not know. The
    suite checks both: equal set-ups from different seeds, and no private moves."""
    perft_ignores: frozenset[Termination]
    """Endings :meth:`perft` does not apply because they depend on more than the position
    (Pylos: the repetition draw needs the history); usually empty."""

    def option_examples(self, seats: int) -> list[dict[str, str]]:
        """Option sets for ``seats`` seats that together use every option value the game accepts,
        the defaults (``{}``) first: the contract suite plays a game under each of them."""
        ...

    def parse_config(self, options: Mapping[str, str], seats: int) -> ConfigT:
        """Build a configuration from string options (CLI flags, proto maps); raise InvalidConfigError."""
        ...

    def config_options(self, config: ConfigT) -> dict[str, str]:
        """The string options that rebuild ``config`` through :meth:`parse_config` (records, replays)."""
        ...

    def new_game(self, config: ConfigT, seed: bytes) -> StateT:
        """The initial state, whose hidden set-up derives only from the 32-byte ``seed``
        (the same seed and configuration always give an equal state)."""
        ...

    def legal_moves(self, state: StateT) -> list[str]:
        """Legal moves in canonical notation, sorted and unique; empty exactly when the game is over.

        Every move listed applies, and every text :meth:`apply` accepts has its canonical form here.
        """
        ...

    def apply(self, state: StateT, move: str) -> StateT:
        """The state after ``move``; raises MalformedMoveError, IllegalMoveError or GameOverError
        (never another exception, whatever the text) and leaves ``state`` unchanged."""
        ...

    def canonical_move(self, state: StateT, move: str) -> str:
        """The canonical notation of a legal ``move`` (raises like :meth:`apply`): a member of
        :meth:`legal_moves`, that applies exactly as ``move`` does, and is its own canonical form."""
        ...

    def apply_canonical(self, state: StateT, move: str) -> tuple[StateT, str]:
        """``(apply(state, move), canonical_move(state, move))`` with the move read once
        (the server does both for every move); raises exactly as :meth:`apply`.
        """
        ...

    def parse_move(self, text: str) -> MoveT:
        """Read ``text`` as the notation alone, whatever the position; raise MalformedMoveError.

        Legality is :meth:`apply`'s business: a parsed move may still be illegal everywhere.
        """
        ...

    def format_move(self, move: MoveT) -> str:
        """Print a parsed move; ``format_move(parse_move(m)) == m`` for every canonical move ``m``."""
        ...

    def to_move(self, state: StateT) -> int | None:
        """The seat to move, or None when the game is over."""
        ...

    def outcome(self, state: StateT) -> Outcome | None:
        """The outcome when the game is over (exactly when :meth:`to_move` is None), else None."""
        ...

    def seats(self, state: StateT) -> int:
        """Number of seats in this game."""
        ...

    def parse_position(self, text: str, config: ConfigT) -> StateT:
        """Read a full (referee) position string; raise InvalidPositionError."""
        ...

    def format_position(self, state: StateT) -> str:
        """The full (referee) position string; round-trips exactly through :meth:`parse_position`."""
        ...

    def random_move(self, state: StateT, rng: random.Random) -> str:
        """A legal move drawn uniformly from :meth:`legal_moves` (used for time-out substitution)."""
        ...

    def forfeit(self, state: StateT, seat: int, termination: Termination) -> StateT:
        """``seat`` resigns or loses on time. A two-seat game ends (the seat loses with
        ``termination``); in a larger game the seat is ranked last at the end and the game
        goes on (the server plays its moves at random so the others can finish).
        """
        ...

    def view(self, state: StateT, seat: int | None, *, released: bool = False) -> View:
        """What ``seat`` (0-based; None for a spectator) may know: the only path to a client.

        ``released`` is the match's decision, not the rules': True once the match has ended
        and published its end. A game that is over but not released (a duplicate deal's
        rotation held until its sister rotations are decided) shows what it showed before
        its end: each seat its own secret, the outcome to nobody. So nothing reveals a game's
        end by default; only a caller that knows the match has ended says so.

        The guarantees the contract suite checks:

        * non-interference: on the two states of a :meth:`twin` for ``seat``, the unreleased
          views of ``seat`` are equal (and so are the error messages of any move text);
        * release only at the end: before the end ``released`` changes nothing, and no
          unreleased view carries an outcome;
        * the end releases everything: once over, every viewer's released view is the
          :meth:`referee_view` but for ``viewer``, ``referee`` and ``legal_moves``.
        """
        ...

    def referee_view(self, state: StateT) -> View:
        """Everything, for the server's own records and the end-of-game reveal."""
        ...

    def twin(self, state: StateT, seat: int | None, rng: random.Random) -> StateT | None:
        """A second state that ``seat`` (None: a spectator) cannot tell from ``state``, or None.

        The twin is as consistent as a real state (its position round-trips), has the same
        public part (seat to move, ply, and the legal moves unless :attr:`private_moves` and
        ``seat`` is not the mover), keeps everything ``seat`` may see, and
        differs from ``state`` in something ``seat`` may not see before the end (drawn with
        ``rng``). None means nothing is hidden from ``seat``: the suite then checks that its
        view shows the whole position. This is how the contract suite tests redaction as a
        non-interference property rather than field by field.
        """
        ...

    def perft(self, state: StateT, depth: int) -> int:
        """Number of distinct sequences of exactly ``depth`` legal moves from ``state``: 1 at depth 0,
        else the sum over :meth:`legal_moves` of the children's counts at ``depth - 1``
        (children ended by a :attr:`perft_ignores` ending excepted)."""
        ...
