"""The ladder of one game: OpenSkill ratings of every line, rebuilt from the rated games.

A *line* is an entrant's version on one game (``alice`` or ``alice@2``): a new version
starts from the prior, so a rewrite of a bot does not inherit a rating it did not earn, and
its previous line stays on the ladder, marked superseded.

Ratings are the Weng-Lin Plackett-Luce model of the ``openskill`` package with its defaults
(mu 25, sigma 25/3), as tournaments use (:mod:`ziggurat.tournament.ratings_openskill`): a
finishing order of 2-4 seats, ties sharing a rank. The displayed rating is the conservative
ordinal ``mu - 3 sigma`` scaled to read like the ratings people know: ``1000 + 40 * (mu - 3
sigma)``, so a new line shows 1000.

>>> ladder = Ladder("pylos")
>>> after = ladder.preview({"a": 1, "b": 2})
>>> after["a"][0] > 25 > after["b"][0]
True
>>> round(displayed(25.0, 25.0 / 3.0))
1000
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from openskill.models import PlackettLuce

DEFAULT_MU = 25.0
DEFAULT_SIGMA = 25.0 / 3.0
RECENT_GAMES = 64  # opponents remembered per line (the repeat window is at most this)


def displayed(mu: float, sigma: float) -> float:
    """The rating people see: 1000 + 40 x the ordinal (mu - 3 sigma)."""
    return 1000.0 + 40.0 * (mu - 3.0 * sigma)


@dataclass
class Line:
    """One line's standing: its rating and what pairing needs to know of its past."""

    name: str
    mu: float = DEFAULT_MU
    sigma: float = DEFAULT_SIGMA
    games: int = 0
    wins: int = 0
    first_seats: int = 0  # games it sat in seat 1
    last_game_ms: int = 0
    # opponents of its newest games, newest last
    recent: deque[frozenset[str]] = field(default_factory=lambda: deque(maxlen=RECENT_GAMES))

    @property
    def rating(self) -> float:
        """Its displayed rating."""
        return displayed(self.mu, self.sigma)


class Ladder:
    """Every line of one game, updated one rated game at a time, in rating order."""

    def __init__(self, game: str) -> None:
        self.game = game
        self.model = PlackettLuce()
        self.lines: dict[str, Line] = {}
        self.games_by_size: dict[int, int] = {}

    def line(self, name: str) -> Line:
        """The line of ``name`` (the prior for a line with no games)."""
        found = self.lines.get(name)
        return found if found is not None else Line(name)

    def preview(self, ranks: Mapping[str, int]) -> dict[str, tuple[float, float]]:
        """Each line's (mu, sigma) after a game with these ranks; nothing changes.

        The lines are listed in a canonical order (rank, then name), so the result does not
        depend on the order of ``ranks``.
        """
        order = sorted(ranks, key=lambda name: (ranks[name], name))
        teams = [[self.model.rating(mu=self.line(n).mu, sigma=self.line(n).sigma, name=n)] for n in order]
        updated = self.model.rate(teams, ranks=[float(ranks[n]) for n in order])
        return {name: (team[0].mu, team[0].sigma) for name, team in zip(order, updated, strict=True)}

    def apply(
        self,
        seats: Sequence[str],
        ranks: Sequence[int],
        after: Mapping[str, tuple[float, float]],
        end_ms: int,
    ) -> None:
        """Record a rated game (after its commit): new ratings, counts and opponents."""
        best = min(ranks)
        for seat, name in enumerate(seats):
            line = self.lines.setdefault(name, Line(name))
            line.mu, line.sigma = after[name]
            line.games += 1
            line.wins += ranks[seat] == best
            line.first_seats += seat == 0
            line.last_game_ms = max(line.last_game_ms, end_ms)
            line.recent.append(frozenset(seats) - {name})
        self.games_by_size[len(seats)] = self.games_by_size.get(len(seats), 0) + 1

    def quality(self, names: Sequence[str]) -> float:
        """How even a table of these lines is: OpenSkill's draw probability (higher = closer)."""
        teams = [[self.model.rating(mu=self.line(n).mu, sigma=self.line(n).sigma, name=n)] for n in names]
        return float(self.model.predict_draw(teams))
