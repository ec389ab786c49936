"""The game contract (``docs/game-contract.md``) as check functions over any registered game.

Each ``check_*`` function raises AssertionError, naming the promise broken, when a game
breaks the contract of :class:`ziggurat.rules.core.GameRules`. ``test_contract.py`` runs
them over every game in the registry; ``test_teeth.py`` runs them over deliberately broken
games to show that each one can fail.
"""

from __future__ import annotations

import dataclasses
import random
import typing
from typing import Any

from ziggurat.rules.core import (
    GameOverError,
    GameRules,
    IllegalMoveError,
    InvalidConfigError,
    MalformedMoveError,
    RulesError,
    Termination,
    View,
)
from ziggurat.rules.registry import AnyRules
from ziggurat.v1 import game_pb2 as pb
from ziggurat.wire.codec import GAME_NAMES, TERMINATIONS, view_to_proto

MAX_PLIES = 10_000  # a random game longer than this is taken not to end
REJECTIONS = (MalformedMoveError, IllegalMoveError, GameOverError)
MUTATIONS = 6  # legal moves mutated per position
PUNCTUATION = "-x+/ 0"  # characters tried in mutations besides those of the moves

State = Any  # a game's state: the checks only pass states back to the same rules object


def contract_members() -> list[str]:
    """Every attribute and method the protocol declares."""
    names = set(typing.get_type_hints(GameRules))
    names |= {n for n, v in vars(GameRules).items() if callable(v) and not n.startswith("_")}
    return sorted(names)


def check_conformance(rules: AnyRules) -> None:
    """Every member is present; the declared seat counts and option examples make configurations
    that round-trip through their string options."""
    missing = [name for name in contract_members() if not hasattr(rules, name)]
    assert not missing, f"{rules.name}: the contract's {missing} are missing"
    assert 1 <= rules.min_seats <= rules.max_seats, f"{rules.name}: seat counts"
    assert isinstance(rules.hidden_information, bool)
    assert all(isinstance(t, Termination) for t in rules.perft_ignores)
    for seats in range(rules.min_seats, rules.max_seats + 1):
        examples = rules.option_examples(seats)
        assert examples and examples[0] == {}, f"{rules.name}: the defaults come first"
        for options in examples:
            config = rules.parse_config(options, seats)
            again = rules.parse_config(rules.config_options(config), seats)
            assert again == config, f"{rules.name}: {options} does not round-trip through config_options"
    check_declared_options(rules)


SETUP_SEEDS = tuple(bytes([n]) * 32 for n in range(4))  # a few seeds, to compare the set-ups they give


def check_declared_setup(rules: AnyRules) -> None:
    """What a tournament builds on what the game declares about its set-up, checked against it:
    ``duplicate_deals`` is a deal of hidden information from the seed (different seeds deal
    differently, and every viewer has a twin at the start), ``openings`` a set-up the seed plays
    no part in (an opening then means the same position in every game) and public moves."""
    name = rules.name
    assert isinstance(rules.duplicate_deals, bool) and isinstance(rules.openings, bool)
    if rules.duplicate_deals:
        assert rules.hidden_information, f"{name}: duplicate deals without hidden information"
    if rules.openings:
        assert not rules.private_moves, f"{name}: openings in a game whose moves are private"
    rng = random.Random(0)
    for seats in range(rules.min_seats, rules.max_seats + 1):
        for options in rules.option_examples(seats):
            config = rules.parse_config(options, seats)
            starts = [rules.new_game(config, seed) for seed in SETUP_SEEDS]
            differ = any(start != starts[0] for start in starts)
            if rules.openings:
                assert not differ, f"{name}: openings, but the set-up depends on the seed ({options})"
            if rules.duplicate_deals:
                assert differ, f"{name}: duplicate deals, but every seed deals the same set-up ({options})"
                blind = [v for v in viewers(rules, starts[0]) if rules.twin(starts[0], v, rng) is None]
                assert not blind, f"{name}: duplicate deals, nothing dealt hidden from viewer {blind[0]}"


def check_declared_options(rules: AnyRules) -> None:
    """The declared options (what ListGames and the lobbies offer) are the ones parse_config takes:
    every example uses declared keys, every declared choice is accepted, a declared default means
    what omitting the option means, and an undeclared key is refused."""
    assert isinstance(rules.title, str) and rules.title, f"{rules.name}: a title"
    keys = [option.key for option in rules.options]
    assert len(set(keys)) == len(keys), f"{rules.name}: an option declared twice"
    for seats in range(rules.min_seats, rules.max_seats + 1):
        defaults = rules.parse_config({}, seats)
        for options in rules.option_examples(seats):
            undeclared = set(options) - set(keys)
            assert not undeclared, f"{rules.name}: option_examples use undeclared {sorted(undeclared)}"
        for option in rules.options:
            assert option.description, f"{rules.name}: option {option.key} has no description"
            if option.default:
                assert rules.parse_config({option.key: option.default}, seats) == defaults, (
                    f"{rules.name}: {option.key}={option.default} is not what omitting it means"
                )
            for choice in option.choices:
                try:
                    rules.parse_config({option.key: choice}, seats)
                except InvalidConfigError as error:
                    # A choice may depend on the seat count (Kabaleo's equal deal: 2 or 3 seats).
                    assert seats == rules.max_seats and seats > rules.min_seats, (
                        f"{rules.name}: {option.key}={choice} refused at {seats} seats: {error}"
                    )
        try:
            rules.parse_config({"no-such-option": "1"}, seats)
        except InvalidConfigError:
            pass
        else:
            raise AssertionError(f"{rules.name}: an undeclared option is accepted")


def viewers(rules: AnyRules, state: State) -> list[int | None]:
    """The spectator and every seat."""
    return [None, *range(rules.seats(state))]


def play_game(
    rules: AnyRules, seats: int, options: dict[str, str], seed: bytes, rng: random.Random
) -> list[State]:
    """A random game to its end, every state on the way; sometimes a seat forfeits on the way.

    Checks what holds along any game: set-up from the seed alone, the three ways of saying
    "over" agree, random moves are legal, the game ends, and a finished game takes no more moves.
    """
    config = rules.parse_config(options, seats)
    state = rules.new_game(config, seed)
    assert state == rules.new_game(config, seed), f"{rules.name}: the set-up is not a function of the seed"
    assert rules.seats(state) == seats
    forfeit_at = rng.randrange(60) if rng.random() < 0.25 else None
    states = [state]
    last_legal: list[str] = []
    while rules.outcome(state) is None:
        assert len(states) <= MAX_PLIES, f"{rules.name}: no end after {MAX_PLIES} plies"
        legal = rules.legal_moves(state)
        assert legal, f"{rules.name}: a game not over has no legal move"
        assert rules.to_move(state) is not None, f"{rules.name}: nobody to move in a game not over"
        last_legal = legal
        if forfeit_at == len(states):
            state = rules.forfeit(state, rng.randrange(seats), Termination.RESIGNATION)
        else:
            move = rules.random_move(state, rng)
            assert move in legal, f"{rules.name}: random_move gave {move!r}, not a legal move"
            state = rules.apply(state, move)
        states.append(state)
    outcome = rules.outcome(state)
    assert outcome is not None
    assert rules.to_move(state) is None and rules.legal_moves(state) == []
    assert len(outcome.ranks) == seats and all(1 <= r <= seats for r in outcome.ranks)
    assert 1 in outcome.ranks, f"{rules.name}: nobody ranked first in {outcome}"
    for move in last_legal[:5]:
        _expect_rejection(rules, state, move, GameOverError)
    try:
        rules.forfeit(state, 0, Termination.RESIGNATION)
    except GameOverError:
        pass
    else:
        raise AssertionError(f"{rules.name}: a finished game accepted a forfeit")
    return states


def _expect_rejection(rules: AnyRules, state: State, move: str, error: type[RulesError]) -> None:
    try:
        rules.apply(state, move)
    except error:
        return
    raise AssertionError(f"{rules.name}: {move!r} should raise {error.__name__}")


def _attempt(rules: AnyRules, state: State, text: str) -> object:
    """``(state after, canonical)`` from apply and canonical_move, or the error's class and message."""
    try:
        return rules.apply(state, text), rules.canonical_move(state, text)
    except RulesError as error:
        assert isinstance(error, REJECTIONS), f"{rules.name}: {text!r} raised {type(error).__name__}"
        return (type(error), str(error))


def _at_once(rules: AnyRules, state: State, text: str) -> object:
    try:
        return rules.apply_canonical(state, text)
    except RulesError as error:
        return (type(error), str(error))


def move_texts(legal: list[str], junk: str, rng: random.Random) -> list[str]:
    """Texts to try on a position: legal moves and near misses of them (a character changed,
    dropped or added, the pieces after a separator reordered, two moves glued) and ``junk``."""
    alphabet = sorted({c for move in legal for c in move} | set(PUNCTUATION))
    texts = [junk, ""]
    sample = rng.sample(legal, min(MUTATIONS, len(legal)))
    for move in sample:
        i = rng.randrange(len(move))
        texts += [move, move[:-1], move[1:], move + rng.choice(alphabet), move + rng.choice(legal)]
        texts.append(move[:i] + rng.choice(alphabet) + move[i + 1 :])
        for separator in sorted(set(move)):
            head, *rest = move.split(separator)
            if len(rest) >= 2:
                texts.append(separator.join([head, *reversed(rest)]))
    return texts


def check_moves(rules: AnyRules, state: State, rng: random.Random, junk: str = "") -> None:
    """Legal moves and apply agree, the notation round-trips, and any text is either a legal
    move (whose canonical form is listed and stable) or one of the three rules errors."""
    before = rules.format_position(state)
    legal = rules.legal_moves(state)
    assert legal == sorted(set(legal)), f"{rules.name}: legal moves not sorted and unique"
    over = rules.outcome(state) is not None
    assert (rules.to_move(state) is None) == over == (not legal), f"{rules.name}: disagreement on the end"
    listed = set(legal)
    for move in legal:
        try:
            after, canonical = rules.apply_canonical(state, move)
        except RulesError as error:
            raise AssertionError(f"{rules.name}: listed move {move!r} does not apply: {error}") from None
        assert canonical == move, f"{rules.name}: listed move {move!r} is not canonical ({canonical!r})"
        assert rules.canonical_move(state, move) == move
        assert after == rules.apply(state, move), f"{rules.name}: apply_canonical and apply differ on {move}"
        assert rules.referee_view(after).ply == rules.referee_view(state).ply + 1, f"{rules.name}: ply"
        assert rules.format_move(rules.parse_move(move)) == move, f"{rules.name}: notation of {move!r}"
    for text in move_texts(legal, junk, rng):
        separately = _attempt(rules, state, text)
        assert _at_once(rules, state, text) == separately, f"{rules.name}: apply_canonical on {text!r}"
        try:
            parsed = rules.parse_move(text)
        except MalformedMoveError:
            parsed = None
        if isinstance(separately, tuple) and isinstance(separately[0], type):
            if separately[0] is MalformedMoveError:
                assert parsed is None, f"{rules.name}: {text!r} parses but apply calls it malformed"
            elif parsed is None:
                assert separately[0] is GameOverError, f"{rules.name}: {text!r} does not parse"
            assert text not in listed, f"{rules.name}: listed move {text!r} was refused"
            continue
        assert parsed is not None, f"{rules.name}: {text!r} applies but does not parse"
        after, canonical = separately  # type: ignore[misc]
        assert canonical in listed, f"{rules.name}: {text!r} applies but {canonical!r} is not listed"
        assert rules.canonical_move(state, canonical) == canonical, f"{rules.name}: canonical form unstable"
        assert rules.apply(state, canonical) == after, f"{rules.name}: {text!r} and {canonical!r} differ"
        assert rules.parse_move(rules.format_move(parsed)) == parsed, f"{rules.name}: notation of {text!r}"
    assert rules.format_position(state) == before, f"{rules.name}: a move attempt changed the state"


def check_position(rules: AnyRules, state: State, config: object) -> None:
    """The full position string round-trips (what a reachable position may be read back as
    depends on the game, e.g. a Pylos draw cannot: then the text must at least be refused cleanly)."""
    text = rules.format_position(state)
    try:
        again = rules.parse_position(text, config)
    except RulesError as error:
        assert rules.outcome(state) is not None, f"{rules.name}: {text!r} refused: {error}"
        return
    assert rules.format_position(again) == text, f"{rules.name}: {text!r} does not round-trip"


def check_perft(rules: AnyRules, state: State, depth: int) -> None:
    """perft(0) is 1, perft(1) counts the legal moves, perft(n) sums the children's perft(n - 1)."""
    assert rules.perft(state, 0) == 1
    legal = rules.legal_moves(state)
    assert rules.perft(state, 1) == len(legal), f"{rules.name}: perft(1) is not the legal move count"
    if depth < 2:
        return
    total, skipped = 0, 0
    for move in legal:
        child = rules.apply(state, move)
        ended = rules.outcome(child)
        if ended is not None and ended.termination in rules.perft_ignores:
            skipped += 1
            continue
        total += rules.perft(child, depth - 1)
    count = rules.perft(state, depth)
    if skipped:
        assert count >= total, f"{rules.name}: perft({depth}) = {count} < {total}"
    else:
        assert count == total, f"{rules.name}: perft({depth}) = {count}, children sum to {total}"


def public_part(view: View) -> View:
    """A view without who it is for, the legal moves (only the mover gets them) and the outcome."""
    return dataclasses.replace(view, viewer=None, referee=False, legal_moves=(), outcome=None)


def check_views(rules: AnyRules, state: State) -> None:
    """The views of every viewer: consistent with the state, released only at the end, and at
    the end the release shows everything (the referee's view)."""
    referee = rules.referee_view(state)
    legal = tuple(rules.legal_moves(state))
    over = rules.outcome(state) is not None
    assert referee.referee and referee.position == rules.format_position(state), f"{rules.name}: referee"
    assert referee.outcome == rules.outcome(state) and referee.legal_moves == legal, f"{rules.name}: referee"
    for viewer in viewers(rules, state):
        view = rules.view(state, viewer)
        assert (view.game, view.viewer, view.referee) == (rules.name, viewer, False), (
            f"{rules.name}: whose view"
        )
        assert (view.seats, view.to_move, view.ply) == (
            rules.seats(state),
            rules.to_move(state),
            referee.ply,
        ), f"{rules.name}: the public facts of {viewer}'s view"
        if viewer is not None and viewer == rules.to_move(state):
            assert view.legal_moves == legal, f"{rules.name}: the seat to move is not told its moves"
        assert view.outcome is None, f"{rules.name}: an unreleased view shows the outcome"
        released = rules.view(state, viewer, released=True)
        if not over:
            assert released == view, f"{rules.name}: releasing before the end changed {viewer}'s view"
        else:
            assert released.outcome == rules.outcome(state), f"{rules.name}: the released end hides something"
            shown = dataclasses.replace(released, viewer=None, referee=True, legal_moves=referee.legal_moves)
            assert shown == referee, f"{rules.name}: the released end hides something from {viewer}"
        for each in (view, released):
            check_codec(each)
    check_codec(referee)


def check_secrets_arise(rules: AnyRules, start: State, rng: random.Random) -> None:
    """A game with hidden information hides something from every viewer: a twin at the start or,
    when secrets arise only in play (phantom tic-tac-toe's marks), at some position of a random
    game played on from the start."""
    state, missing = start, set(viewers(rules, start))
    while missing:
        missing = {viewer for viewer in missing if rules.twin(state, viewer, rng) is None}
        if not missing or rules.outcome(state) is not None:
            break
        state = rules.apply(state, rules.random_move(state, rng))
    first = min(missing, key=str) if missing else None
    assert not missing, (
        f"{rules.name}: hidden information, but no twin at the start (nor later) for viewer {first}"
    )


def check_twins(rules: AnyRules, state: State, config: object, rng: random.Random, junk: str = "") -> None:
    """Redaction as non-interference: for every viewer, the game's twin of ``state`` is a real,
    different state that the viewer's view (also as proto bytes) and error messages cannot tell
    apart, and keeps so while the same moves are played, until a released end shows the difference.
    A game without a twin for a viewer must show that viewer the whole position."""
    follow = rng.choice(viewers(rules, state))
    for viewer in viewers(rules, state):
        other = rules.twin(state, viewer, rng)
        if not rules.hidden_information:
            assert other is None, f"{rules.name}: a twin in a game that hides nothing"
        if other is None:
            view, referee = rules.view(state, viewer), rules.referee_view(state)
            assert view.position == rules.format_position(state) and public_part(view) == public_part(
                referee
            ), f"{rules.name}: no twin for viewer {viewer}, yet its view hides part of the position"
            continue
        check_twin(rules, state, other, viewer, config, rng, junk, follow=viewer == follow)


def check_twin(
    rules: AnyRules,
    state: State,
    other: State,
    viewer: int | None,
    config: object,
    rng: random.Random,
    junk: str = "",
    *,
    follow: bool = True,
) -> None:
    """``state`` and ``other`` are twins for ``viewer`` (see :func:`check_twins`).

    With ``private_moves`` a move is its mover's alone: the legal moves and error messages need
    agree only when ``viewer`` is the mover, and the twins are followed only through the other
    seats' moves, until the seat to move differs (a seat learns from its own moves, and what a
    move did shows in who moves next: phantom tic-tac-toe's failed attempt keeps the turn)."""
    name = rules.name
    assert rules.format_position(other) != rules.format_position(state), f"{name}: the twin is the same state"
    check_position(rules, other, config)
    assert rules.to_move(other) == rules.to_move(state) and rules.seats(other) == rules.seats(state)
    moves_seen = not rules.private_moves or viewer == rules.to_move(state)
    if moves_seen:
        assert rules.legal_moves(other) == rules.legal_moves(state), f"{name}: twins differ in legal moves"
    assert_same_view(rules, state, other, viewer)
    for text in move_texts(rules.legal_moves(state), junk, rng) if moves_seen else ():
        assert _error(rules, state, text) == _error(rules, other, text), f"{name}: {text!r} tells twins apart"
    if not follow:
        return
    while rules.outcome(state) is None:
        if rules.private_moves:
            both = sorted(set(rules.legal_moves(state)) & set(rules.legal_moves(other)))
            if viewer == rules.to_move(state) or not both:
                return
            move = rng.choice(both)
            state, other = rules.apply(state, move), rules.apply(other, move)
            if rules.to_move(state) != rules.to_move(other):
                return
        else:
            move = rules.random_move(state, rng)
            state, other = rules.apply(state, move), rules.apply(other, move)
        assert_same_view(rules, state, other, viewer)
    assert rules.outcome(other) is not None, f"{name}: one twin ended, the other did not"
    assert rules.view(state, viewer, released=True) != rules.view(other, viewer, released=True), (
        f"{name}: the released end does not show what told the twins apart"
    )


def assert_same_view(rules: AnyRules, state: State, other: State, viewer: int | None) -> None:
    """The unreleased views of ``viewer`` are equal, as values and as proto bytes."""
    mine, theirs = rules.view(state, viewer), rules.view(other, viewer)
    assert mine == theirs, f"{rules.name}: viewer {viewer} can tell twins apart: {mine} != {theirs}"
    assert _bytes(mine) == _bytes(theirs), f"{rules.name}: twins differ on the wire for viewer {viewer}"


def _error(rules: AnyRules, state: State, text: str) -> str:
    try:
        rules.apply(state, text)
    except RulesError as error:
        return f"{error.reason}: {error}"
    return "ok"


def _bytes(view: View) -> bytes:
    return view_to_proto(view).SerializeToString(deterministic=True)


def check_codec(view: View) -> None:
    """A view survives the proto: the bytes parse back to the same message and re-serialise to
    the same bytes, and the fields every game shares read back as they were."""
    message = view_to_proto(view)
    data = message.SerializeToString(deterministic=True)
    back = pb.GameView.FromString(data)
    assert back == message and back.SerializeToString(deterministic=True) == data
    assert GAME_NAMES[back.game] == view.game
    assert back.viewer_seat == (0 if view.viewer is None else view.viewer + 1)
    assert (back.seats, back.ply, back.position) == (view.seats, view.ply, view.position)
    assert back.to_move == (0 if view.to_move is None else view.to_move + 1)
    mover = view.to_move is not None and view.viewer == view.to_move
    assert tuple(back.legal_moves) == (view.legal_moves if mover else ())
    assert back.HasField("outcome") == (view.outcome is not None)
    if view.outcome is not None:
        assert tuple(back.outcome.ranks) == view.outcome.ranks
        assert back.outcome.termination == TERMINATIONS[view.outcome.termination]
        assert tuple(back.outcome.winners) == tuple(s + 1 for s in view.outcome.winners)


def check_game(
    rules: AnyRules,
    seats: int,
    options: dict[str, str],
    seed: bytes,
    rng: random.Random,
    junk: str = "",
    perft_depth: int = 2,
) -> None:
    """The whole contract over one random game of ``rules`` under ``options``."""
    config = rules.parse_config(options, seats)
    states = play_game(rules, seats, options, seed, rng)
    if rules.hidden_information:
        check_secrets_arise(rules, states[0], rng)
    deep = rng.randrange(len(states))
    for index, state in enumerate(states):
        check_moves(rules, state, rng, junk)
        check_position(rules, state, config)
        check_views(rules, state)
        check_perft(rules, state, perft_depth + (index == deep))
    for state in states:  # after the views, so a broken release rule is reported as such
        check_twins(rules, state, config, rng, junk)
