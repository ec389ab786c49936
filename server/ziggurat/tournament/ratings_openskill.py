"""OpenSkill (Weng-Lin Plackett-Luce) ratings for games of 2-4 participants.

Elo is defined for two players; Kabaleo seats up to four, so the ladder uses a
Bayesian rating that understands a full finishing order: the Plackett-Luce
model of Weng & Lin (JMLR 12, 2011) as implemented by the ``openskill``
package (pinned to 6.2.0). Each participant holds a Gaussian belief about
their skill, mean ``mu`` and deviation ``sigma``; the ladder sorts by the
conservative ``ordinal = mu - 3·sigma``, so a newcomer with few games (large
sigma) does not leap over an established bot on one lucky result.

Results are applied one game at a time, **in the order they are recorded**.
Each update starts from the ratings the previous games left behind, so the
table is deterministic (same games in the same order → bit-identical ratings;
nothing random is involved) but *not* order-independent: replaying the same
games in another order gives slightly different numbers. Within one game the
order in which participants are listed does not matter.

Every participant here is a one-member "team" in OpenSkill's terms; ties share
a rank. The model's defaults (mu 25, sigma 25/3, beta 25/6, tau 25/300) are
OpenSkill's; tau adds a little uncertainty before every game so that a rating
can still move after thousands of games.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from openskill.models import PlackettLuce

__all__ = [
    "DEFAULT_BETA",
    "DEFAULT_MU",
    "DEFAULT_SIGMA",
    "DEFAULT_TAU",
    "MAX_PARTICIPANTS",
    "MIN_PARTICIPANTS",
    "OpenSkillTable",
    "ParticipantRating",
]

DEFAULT_MU = 25.0
DEFAULT_SIGMA = 25.0 / 3.0
DEFAULT_BETA = 25.0 / 6.0
DEFAULT_TAU = 25.0 / 300.0
MIN_PARTICIPANTS = 2
MAX_PARTICIPANTS = 4
"""Pylos seats 2 players and Kabaleo 2-4; a table bigger than that is a caller bug."""

ORDINAL_Z = 3.0
"""How many deviations the ordinal subtracts: mu - 3sigma is ~99.7 % likely to undershoot true skill."""


@dataclass(frozen=True, slots=True)
class ParticipantRating:
    """One participant's current rating and the number of games it rests on."""

    name: str
    mu: float
    sigma: float
    games: int

    @property
    def ordinal(self) -> float:
        """Conservative skill estimate mu - 3sigma, the number ladders sort by."""
        return self.mu - ORDINAL_Z * self.sigma


class OpenSkillTable:
    """Plackett-Luce ratings of named participants, updated game by game.

    Participants appear on first mention with the model's prior (``mu``,
    ``sigma``). A game is a mapping of participant → rank, lower is better and
    equal ranks are ties (``{"a": 1, "b": 2, "c": 2}``: a won, b and c tied for
    second), or equivalently a list of placings best first
    (``[["a"], ["b", "c"]]``).
    """

    def __init__(
        self,
        *,
        mu: float = DEFAULT_MU,
        sigma: float = DEFAULT_SIGMA,
        beta: float = DEFAULT_BETA,
        tau: float = DEFAULT_TAU,
        limit_sigma: bool = False,
    ) -> None:
        """Create an empty table; the keyword arguments are OpenSkill's model parameters.

        ``limit_sigma=True`` stops a game from ever widening a deviation (tau
        otherwise can, slightly, for a participant whose result was expected).
        """
        self._model = PlackettLuce(mu=mu, sigma=sigma, beta=beta, tau=tau, limit_sigma=limit_sigma)
        self._mu = mu
        self._sigma = sigma
        self._ratings: dict[str, ParticipantRating] = {}

    def __len__(self) -> int:
        return len(self._ratings)

    def __contains__(self, name: object) -> bool:
        return name in self._ratings

    def rating(self, name: str) -> ParticipantRating:
        """The participant's rating; an unseen name gets the prior with zero games."""
        found = self._ratings.get(name)
        if found is None:
            return ParticipantRating(name=name, mu=self._mu, sigma=self._sigma, games=0)
        return found

    def standings(self) -> list[ParticipantRating]:
        """Everyone who has played, best ordinal first (name breaks exact ties, for a stable order)."""
        return sorted(self._ratings.values(), key=lambda r: (-r.ordinal, r.name))

    def record(self, ranks: Mapping[str, int]) -> None:
        """Apply one game: ``ranks`` maps each participant to its finishing rank (lower is better).

        Raises ``ValueError`` for fewer than 2 or more than 4 participants or an
        empty name; the table is left unchanged then.
        """
        if not MIN_PARTICIPANTS <= len(ranks) <= MAX_PARTICIPANTS:
            raise ValueError(
                f"a game has {MIN_PARTICIPANTS}-{MAX_PARTICIPANTS} participants, got {len(ranks)}"
            )
        if any(not name for name in ranks):
            raise ValueError("participant names must be non-empty")
        # A canonical order (by rank, then name) makes the update independent of
        # how the caller happened to list the participants, down to the last bit.
        order = sorted(ranks, key=lambda name: (ranks[name], name))
        before = [self.rating(name) for name in order]
        teams = [[self._model.rating(mu=r.mu, sigma=r.sigma, name=r.name)] for r in before]
        updated = self._model.rate(teams, ranks=[float(ranks[name]) for name in order])
        for old, (new,) in zip(before, updated, strict=True):
            self._ratings[old.name] = ParticipantRating(
                name=old.name, mu=new.mu, sigma=new.sigma, games=old.games + 1
            )

    def record_placings(self, placings: Sequence[Sequence[str]]) -> None:
        """Apply one game given as placings, best first; names in one placing tied.

        ``[["a"], ["b", "c"], ["d"]]`` is the same game as
        ``record({"a": 1, "b": 2, "c": 2, "d": 3})``.
        """
        ranks: dict[str, int] = {}
        for place, group in enumerate(placings, start=1):
            if not group:
                raise ValueError("a placing must name at least one participant")
            for name in group:
                if name in ranks:
                    raise ValueError(f"{name!r} appears twice in one game")
                ranks[name] = place
        self.record(ranks)

    def record_all(self, games: Sequence[Mapping[str, int]]) -> None:
        """Apply games in the given order (see the module docstring: order matters)."""
        for ranks in games:
            self.record(ranks)
