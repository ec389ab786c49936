"""The contract suite has teeth: games broken on purpose, registered only inside a test, fail it.

Each broken game is the real one with one promise broken (its twin generator removed, a
hidden field leaked before the end, the end released early or never, a listed move that does
not apply, a perft that miscounts, a set-up declared as a deal or as fit for openings when it
is not). The suite's own checks must fail on it, for the reason named, while the real game
passes the same call.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest

from tests.contract import checks
from ziggurat.rules import kabaleo
from ziggurat.rules.kabaleo import KabaleoRules, KabaleoState, KabaleoView
from ziggurat.rules.phantom_ttt import PhantomRules
from ziggurat.rules.pylos import PylosRules, PylosState
from ziggurat.rules.registry import GAMES, AnyRules

SEED = bytes(range(32))


class NoTwinKabaleo(KabaleoRules):
    """Kabaleo whose twin generator was replaced by "nothing is hidden"."""

    def twin(self, state: KabaleoState, seat: int | None, rng: random.Random) -> Any:
        return None


class NoTwinMemberKabaleo:
    """Kabaleo with the twin generator removed altogether."""

    def __getattr__(self, name: str) -> Any:
        if name == "twin":
            raise AttributeError(name)
        return getattr(kabaleo.KABALEO, name)


class NoSecretsKabaleo(NoTwinKabaleo):
    """Kabaleo that says it hides nothing and has no twins, yet hides the objectives."""

    hidden_information = False


class PerfectInformationKabaleo(KabaleoRules):
    """Kabaleo that claims to hide nothing."""

    hidden_information = False


class SelfTwinKabaleo(KabaleoRules):
    """A "twin" that is the state itself."""

    def twin(self, state: KabaleoState, seat: int | None, rng: random.Random) -> KabaleoState:
        return state


class OwnSecretTwinKabaleo(KabaleoRules):
    """A twin that changes the viewer's own objective too, which the viewer sees."""

    def twin(self, state: KabaleoState, seat: int | None, rng: random.Random) -> KabaleoState:
        return kabaleo.twin(state, None, rng)


class LeakyKabaleo(KabaleoRules):
    """The view carries the unheld colours before the end (not in the position text)."""

    def view(self, state: KabaleoState, seat: int | None, *, released: bool = False) -> KabaleoView:
        return dataclasses.replace(super().view(state, seat, released=released), unheld=state.unheld)


class EarlyReleaseKabaleo(KabaleoRules):
    """``released`` reveals every objective even before the game is over."""

    def view(self, state: KabaleoState, seat: int | None, *, released: bool = False) -> KabaleoView:
        if not released:
            return super().view(state, seat)
        shown = kabaleo.referee_view(state)
        moves = shown.legal_moves if seat == state.to_move else ()
        return dataclasses.replace(shown, viewer=seat, referee=False, legal_moves=moves, outcome=None)


class SelfReleasingKabaleo(KabaleoRules):
    """The rules release the end themselves, ignoring the match's decision."""

    def view(self, state: KabaleoState, seat: int | None, *, released: bool = False) -> KabaleoView:
        return super().view(state, seat, released=True)


class NeverReleasingKabaleo(KabaleoRules):
    """The released end still hides the other objectives."""

    def view(self, state: KabaleoState, seat: int | None, *, released: bool = False) -> KabaleoView:
        return super().view(state, seat)


class ExtraMoveKabaleo(KabaleoRules):
    """Lists a move that apply refuses."""

    def legal_moves(self, state: KabaleoState) -> list[str]:
        moves = super().legal_moves(state)
        return sorted({*moves, "R99"}) if moves else moves


class MiscountingPylos(PylosRules):
    """perft one too many at depth 2 and over."""

    def perft(self, state: PylosState, depth: int) -> int:
        return super().perft(state, depth) + (depth >= 2)


class LooseNotationPylos(PylosRules):
    """Prints moves in upper case: the notation no longer round-trips."""

    def format_move(self, move: Any) -> str:
        return str(super().format_move(move)).upper()


class HiddenPylos(PylosRules):
    """Pylos that claims hidden information but has no twin."""

    hidden_information = True


class DealingPylos(PylosRules):
    """Pylos that declares duplicate deals: it deals nothing hidden to replay."""

    duplicate_deals = True


class DealingPhantom(PhantomRules):
    """Phantom tic-tac-toe that declares duplicate deals: its hidden information is not dealt."""

    duplicate_deals = True


class SeedlessKabaleo(KabaleoRules):
    """Kabaleo that declares duplicate deals but deals from a fixed seed, whatever it is given."""

    def new_game(self, config: Any, seed: bytes) -> KabaleoState:
        return super().new_game(config, bytes(32))


class OpeningsKabaleo(KabaleoRules):
    """Kabaleo that declares openings: its set-up is the seed's deal."""

    openings = True


class OpeningsPhantom(PhantomRules):
    """Phantom tic-tac-toe that declares openings: a public opening would show private marks."""

    openings = True


BROKEN = [
    pytest.param(NoTwinKabaleo(), "no twin at the start", id="twin-returns-none"),
    pytest.param(NoSecretsKabaleo(), "its view hides part of the position", id="no-twin-no-secrets"),
    pytest.param(NoTwinMemberKabaleo(), r"'twin'\] are missing", id="twin-removed"),
    pytest.param(PerfectInformationKabaleo(), "a twin in a game that hides nothing", id="claims-no-secrets"),
    pytest.param(SelfTwinKabaleo(), "the twin is the same state", id="twin-is-itself"),
    pytest.param(OwnSecretTwinKabaleo(), "can tell twins apart", id="twin-changes-own-secret"),
    pytest.param(LeakyKabaleo(), "can tell twins apart", id="view-leaks-unheld"),
    pytest.param(EarlyReleaseKabaleo(), "releasing before the end", id="release-before-end"),
    pytest.param(SelfReleasingKabaleo(), "an unreleased view shows the outcome", id="release-not-asked"),
    pytest.param(NeverReleasingKabaleo(), "the released end hides something", id="release-never"),
    pytest.param(ExtraMoveKabaleo(), "listed move 'R99' does not apply", id="lists-illegal-move"),
    pytest.param(MiscountingPylos(), r"perft\(\d\)", id="perft-miscounts"),
    pytest.param(LooseNotationPylos(), "notation of", id="notation-does-not-round-trip"),
    pytest.param(HiddenPylos(), "no twin at the start", id="claims-secrets"),
    pytest.param(DealingPylos(), "duplicate deals without hidden information", id="deals-nothing"),
    pytest.param(DealingPhantom(), "every seed deals the same set-up", id="deals-secrets-of-play"),
    pytest.param(SeedlessKabaleo(), "every seed deals the same set-up", id="deals-without-the-seed"),
    pytest.param(OpeningsKabaleo(), "the set-up depends on the seed", id="openings-over-a-deal"),
    pytest.param(OpeningsPhantom(), "openings in a game whose moves are private", id="openings-private"),
]


def run_suite(name: str) -> None:
    """What the contract suite runs for a registered game, cut to one game to stay quick."""
    rules = GAMES[name]
    checks.check_conformance(rules)
    checks.check_game(rules, rules.min_seats, {}, SEED, random.Random(1), perft_depth=2)
    checks.check_declared_setup(rules)  # last: a broken twin is reported as such, not as a deal


@pytest.mark.parametrize("name", ["kabaleo", "pylos", "phantom-ttt"])
def test_the_real_games_pass_the_same_call(name: str) -> None:
    run_suite(name)


@pytest.mark.parametrize(("broken", "reason"), BROKEN)
def test_a_broken_game_fails_the_suite(
    monkeypatch: pytest.MonkeyPatch, broken: AnyRules, reason: str
) -> None:
    name = broken.name
    monkeypatch.setitem(GAMES, name, broken)
    with pytest.raises(AssertionError, match=reason):
        run_suite(name)
