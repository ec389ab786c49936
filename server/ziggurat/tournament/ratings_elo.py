"""Elo difference between two bots from game counts, with 95 % error bars and LOS.

Two ways of counting are supported, as in fastchess:

* **trinomial** -- wins, draws and losses of single games (:class:`Trinomial`);
* **pentanomial** -- games played in *pairs* on the same opening/seed with the
  seats swapped, each pair scoring 0, ½, 1, 1½ or 2 points (:class:`Pentanomial`).

Why pairs: the two games of a pair are correlated (a lopsided opening or seat
favours whoever holds it, once each), so treating them as independent games
overstates the variance of the per-game score for a good set-up and understates
it for a bad one. Counting whole pairs keeps the correlation inside each sample.

The estimates are the normal approximation of cutechess-cli and fastchess:
the mean score ``s`` has standard error ``sqrt(var / n)``, where ``var`` is the
variance of the per-sample score; the 95 % interval of ``s`` is mapped through
the logistic Elo formula ``elo(s) = -400 * log10(1/s - 1)``, and the reported
error is half the width of that (slightly asymmetric) Elo interval.

Scores are always from the point of view of the first bot ("wins" are its wins).
Everything here is pure arithmetic: no I/O, no randomness.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "Z95",
    "EloEstimate",
    "Pentanomial",
    "Trinomial",
    "elo_pentanomial",
    "elo_to_score",
    "elo_trinomial",
    "likelihood_of_superiority",
    "score_likelihood_of_superiority",
    "score_to_elo",
    "score_to_normalized_elo",
]

Z95 = 1.959963984540054
"""Two-sided 95 % quantile of the standard normal (the constant fastchess uses)."""

NELO_PER_T = 800.0 / math.log(10.0)
"""Normalized Elo per unit of t-value (≈ 347.4): nElo = t · 800/ln 10, as in fishtest."""


def score_to_elo(score: float) -> float:
    """Logistic Elo difference that predicts an expected ``score`` in [0, 1].

    ``-400·log10(1/score - 1)``: 0.5 → 0, 0.6 → ≈ +70.4. A score of exactly 0 or
    1 has no finite Elo; it maps to ∓inf rather than raising, because a short
    match can legitimately be a whitewash.
    """
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def elo_to_score(elo: float) -> float:
    """Expected score of the stronger side at a logistic Elo difference (inverse of :func:`score_to_elo`)."""
    exponent = -elo / 400.0
    if exponent > 300.0:  # 10**300 would already round the score to 0; avoid OverflowError
        return 0.0
    return 1.0 / (1.0 + math.pow(10.0, exponent))


def score_to_normalized_elo(score: float, sd: float) -> float:
    """Normalized Elo: ``(score - ½)/sd · 800/ln 10`` where ``sd`` is the per-game score deviation.

    Normalized Elo measures the score excess in units of its own noise, so it
    does not depend on the draw rate (see fishtest's "normalized Elo" notes);
    for a draw-free match at small Elo it coincides with logistic Elo.
    """
    if sd <= 0.0:
        if score == 0.5:
            return 0.0
        return math.copysign(math.inf, score - 0.5)
    return (score - 0.5) / sd * NELO_PER_T


def likelihood_of_superiority(wins: int, losses: int) -> float:
    """LOS = ½·(1 + erf((W - L)/sqrt(2(W + L)))), the chessprogramming-wiki / cutechess formula.

    The probability that the first bot is truly the stronger one, from a normal
    approximation to the wins/losses split; draws carry no information about who
    is stronger here, so they are ignored. With no decisive games it is ½.
    """
    decisive = wins + losses
    if decisive == 0:
        return 0.5
    return 0.5 * (1.0 + math.erf((wins - losses) / math.sqrt(2.0 * decisive)))


def score_likelihood_of_superiority(score: float, variance: float, samples: int) -> float:
    """LOS from the mean score and its variance, as fastchess prints it: Φ((s - ½)/sqrt(var/n)).

    This is the form that also works for pentanomial pairs, where there is no
    single count of wins and losses. ``variance`` is per sample (game or pair).
    """
    if variance <= 0.0:
        if score == 0.5:
            return 0.5
        return 1.0 if score > 0.5 else 0.0
    return 0.5 * (1.0 - math.erf(-(score - 0.5) / math.sqrt(2.0 * variance / samples)))


@dataclass(frozen=True, slots=True)
class Trinomial:
    """Win/draw/loss counts of single games, from the first bot's point of view."""

    wins: int
    draws: int
    losses: int

    def __post_init__(self) -> None:
        if min(self.wins, self.draws, self.losses) < 0:
            raise ValueError(f"counts must be non-negative, got {self}")

    @property
    def games(self) -> int:
        """Number of games counted."""
        return self.wins + self.draws + self.losses

    def counts(self) -> tuple[int, int, int]:
        """Counts in ascending score order (L, D, W): the order the likelihood code indexes by score."""
        return (self.losses, self.draws, self.wins)

    def mirrored(self) -> Trinomial:
        """The same games from the other bot's point of view."""
        return Trinomial(wins=self.losses, draws=self.draws, losses=self.wins)


@dataclass(frozen=True, slots=True)
class Pentanomial:
    """Counts of game pairs (seats swapped) by the first bot's points in the pair.

    ``ll`` = 0 points, ``ld`` = ½, ``wl_dd`` = 1 (a win and a loss, or two draws:
    fastchess keeps those apart for display but they score the same, so every
    statistic here merges them), ``wd`` = 1½, ``ww`` = 2.
    """

    ll: int
    ld: int
    wl_dd: int
    wd: int
    ww: int

    def __post_init__(self) -> None:
        if min(self.counts()) < 0:
            raise ValueError(f"counts must be non-negative, got {self}")

    @classmethod
    def from_pair_points(cls, points: Iterable[float]) -> Pentanomial:
        """Count pairs from each pair's total points (0, 0.5, 1, 1.5 or 2)."""
        tally = [0, 0, 0, 0, 0]
        for value in points:
            index = round(value * 2)
            if index < 0 or index > 4 or index != value * 2:
                raise ValueError(f"a pair scores 0, 0.5, 1, 1.5 or 2 points, got {value}")
            tally[index] += 1
        return cls(*tally)

    @property
    def pairs(self) -> int:
        """Number of pairs counted (twice as many games)."""
        return sum(self.counts())

    def counts(self) -> tuple[int, int, int, int, int]:
        """Counts in ascending score order (LL, LD, WL+DD, WD, WW), fishtest's order."""
        return (self.ll, self.ld, self.wl_dd, self.wd, self.ww)

    def mirrored(self) -> Pentanomial:
        """The same pairs from the other bot's point of view."""
        return Pentanomial(ll=self.ww, ld=self.wd, wl_dd=self.wl_dd, wd=self.ld, ww=self.ll)


@dataclass(frozen=True, slots=True)
class EloEstimate:
    """An Elo difference with its 95 % interval, as cutechess-cli / fastchess report it.

    ``score`` is the mean score per game in [0, 1] (for pairs: pair points / 2).
    ``variance`` is the variance of that per-sample score (per game, or per pair
    for the pentanomial form); ``samples`` is the number of games or pairs.
    ``elo ± error`` is logistic Elo with the symmetric half-width fastchess
    prints; ``elo_lower``/``elo_upper`` are the exact ends of the interval.
    ``nelo ± nelo_error`` is normalized Elo. ``los`` is the likelihood of
    superiority: the wins/losses formula for trinomial counts, the score-based
    normal approximation for pentanomial counts.
    """

    samples: int
    score: float
    variance: float
    elo: float
    error: float
    elo_lower: float
    elo_upper: float
    nelo: float
    nelo_error: float
    los: float


def _mean_and_variance(values: tuple[float, ...], counts: tuple[int, ...]) -> tuple[float, float]:
    total = sum(counts)
    mean = sum(v * c for v, c in zip(values, counts, strict=True)) / total
    variance = sum(c * (v - mean) ** 2 for v, c in zip(values, counts, strict=True)) / total
    return mean, variance


def _half_width(low: float, high: float) -> float:
    width = (high - low) / 2.0
    return width if math.isfinite(width) else math.inf


def _estimate(
    values: tuple[float, ...], counts: tuple[int, ...], per_game_variance_factor: float, los: float | None
) -> EloEstimate:
    """Shared normal-approximation estimate; ``los=None`` means use the score-based LOS."""
    samples = sum(counts)
    if samples == 0:
        raise ValueError("no games to estimate from")
    score, variance = _mean_and_variance(values, counts)
    margin = Z95 * math.sqrt(variance / samples)
    low, high = score - margin, score + margin
    elo_low, elo_high = score_to_elo(low), score_to_elo(high)
    # Normalized Elo is per game. A pair's score is the mean of two games, so its
    # variance is half a game's when the games are independent; undo that.
    sd = math.sqrt(per_game_variance_factor * variance)
    elo = score_to_elo(score)
    return EloEstimate(
        samples=samples,
        score=score,
        variance=variance,
        elo=elo,
        error=_half_width(elo_low, elo_high) if math.isfinite(elo) else math.inf,
        elo_lower=elo_low,
        elo_upper=elo_high,
        nelo=score_to_normalized_elo(score, sd),
        nelo_error=_half_width(score_to_normalized_elo(low, sd), score_to_normalized_elo(high, sd)),
        los=score_likelihood_of_superiority(score, variance, samples) if los is None else los,
    )


def elo_trinomial(results: Trinomial) -> EloEstimate:
    """Elo ± 95 % error from W/D/L counts (cutechess-cli / fastchess ``EloWDL``).

    ``los`` is the wins/losses formula of :func:`likelihood_of_superiority`
    (fastchess prints the score-based one instead; the two agree closely).
    """
    los = likelihood_of_superiority(results.wins, results.losses)
    return _estimate((0.0, 0.5, 1.0), results.counts(), 1.0, los)


def elo_pentanomial(results: Pentanomial) -> EloEstimate:
    """Elo ± 95 % error from pair counts (fastchess ``EloPentanomial``); ``samples`` counts pairs."""
    return _estimate((0.0, 0.25, 0.5, 0.75, 1.0), results.counts(), 2.0, None)
