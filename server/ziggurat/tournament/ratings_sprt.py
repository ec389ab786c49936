"""Sequential probability ratio test (SPRT) for "is bot A at least elo1 stronger than B?".

This is the generalized SPRT (GSPRT) used by fishtest and fastchess. A plain
SPRT needs the full outcome distribution under each hypothesis, but H0/H1 only
fix the *Elo* (one number), not the draw rate or the pair distribution. The
GSPRT therefore replaces each hypothesis by the maximum-likelihood distribution
that satisfies it, given the observed outcome frequencies, and compares those:

    LLR = N · Σᵢ p̂ᵢ · (log p₁ᵢ - log p₀ᵢ)

where p̂ is the empirical distribution over the 3 (W/D/L) or 5 (pair) outcomes,
N the number of games or pairs, and pⱼ the MLE under hypothesis j
(M. Van den Bergh, "Comments on Normalized Elo",
https://www.cantate.be/Fishtest/normalized_elo_practical.pdf, proposition 1.1
and section 4.1; fishtest ``server/fishtest/stats/LLRcalc.py``; fastchess
``app/src/matchmaking/sprt/sprt.cpp``).

Elo models (what ``elo0``/``elo1`` mean):

* ``EloModel.NORMALIZED`` (the default, as in current fastchess and fishtest):
  the hypotheses fix the t-value ``(score - ½)/sigma`` where sigma is the per-game
  score deviation (per-pair deviation ·√2 for pentanomial counts), with
  ``nElo = t · 800/ln 10``. Its meaning does not shift with the draw rate, so
  the same bounds cost about the same number of games for any pair of bots.
* ``EloModel.LOGISTIC`` (fastchess ``model=logistic``, fishtest's older tests):
  the hypotheses fix the expected score ``1/(1 + 10^(-elo/400))``.

Decision thresholds are Wald's: accept H1 once LLR ≥ log((1 - beta)/alpha), accept H0
once LLR ≤ log(beta/(1 - alpha)); in between, keep playing. Empty outcome classes are
replaced by 10⁻³ before the MLE (the regularisation of fishtest and fastchess)
so that a sample with, say, no losses yet still has a defined likelihood.

Only :mod:`math` is used: the one-dimensional "secular" equations are solved by
bisection, which is safe here because each is strictly monotone on its bracket.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from ziggurat.tournament.ratings_elo import NELO_PER_T, Pentanomial, Trinomial, elo_to_score

__all__ = [
    "EloModel",
    "SprtDecision",
    "SprtParameters",
    "SprtResult",
    "llr",
    "sprt",
]

_REGULARIZE = 1e-3
"""Stand-in count for an outcome that has not occurred yet (fishtest/fastchess use 1e-3)."""

_MLE_TOLERANCE = 1e-12
_MLE_MAX_ITERATIONS = 200


class EloModel(StrEnum):
    """Which Elo scale ``elo0``/``elo1`` are expressed in."""

    NORMALIZED = "normalized"
    LOGISTIC = "logistic"


class SprtDecision(StrEnum):
    """The state of a sequential test after the games so far."""

    CONTINUE = "continue"
    ACCEPT_H0 = "accept H0"
    ACCEPT_H1 = "accept H1"


@dataclass(frozen=True, slots=True)
class SprtParameters:
    """H0: Elo = ``elo0`` against H1: Elo = ``elo1``, false-positive rate ``alpha``, false-negative ``beta``.

    ``elo0``/``elo1`` are in the scale named by ``model`` (normalized Elo unless
    told otherwise). Typical fishtest-style gainer bounds: ``elo0=0, elo1=2``
    normalized; for a quick "is the new bot better at all" check ``0, 5``.
    """

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05
    model: EloModel = EloModel.NORMALIZED

    def __post_init__(self) -> None:
        # The same checks as fastchess: a degenerate test would never stop or
        # would stop at once, which is always a configuration mistake.
        if not self.elo0 < self.elo1:
            raise ValueError(f"elo0 must be less than elo1, got {self.elo0} and {self.elo1}")
        if not 0.0 < self.alpha < 1.0 or not 0.0 < self.beta < 1.0:
            raise ValueError(f"alpha and beta must lie in (0, 1), got {self.alpha} and {self.beta}")
        if self.alpha + self.beta >= 1.0:
            raise ValueError("alpha + beta must be less than 1")

    @property
    def lower_bound(self) -> float:
        """log(beta/(1 - alpha)): at or below it the test accepts H0."""
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper_bound(self) -> float:
        """log((1 - beta)/alpha): at or above it the test accepts H1."""
        return math.log((1.0 - self.beta) / self.alpha)


@dataclass(frozen=True, slots=True)
class SprtResult:
    """Where the test stands: the decision, the log-likelihood ratio and the bounds it was held to."""

    decision: SprtDecision
    llr: float
    lower_bound: float
    upper_bound: float


def _bisect_decreasing(f: Callable[[float], float], low: float, high: float) -> float:
    """Root of a strictly decreasing ``f`` on the open interval (low, high), by bisection.

    The ends are poles of the secular functions (f → +inf at ``low``, -inf at
    ``high``), so they are never evaluated; the loop stops when the midpoint no
    longer moves in floating point, which takes at most a few thousand halvings.
    """
    while True:
        mid = 0.5 * (low + high)
        if mid in (low, high):
            return mid
        value = f(mid)
        if value > 0.0:
            low = mid
        elif value < 0.0:
            high = mid
        else:
            return mid


def _secular(a: Sequence[float], p: Sequence[float]) -> float:
    """Solve Σᵢ p̂ᵢ·aᵢ/(1 + x·aᵢ) = 0 for x (the Lagrange multiplier of the constrained MLE).

    With min aᵢ < 0 < max aᵢ the left side falls strictly from +inf to -inf on
    (-1/max a, -1/min a), so there is exactly one root there.
    """
    lo_a, hi_a = min(a), max(a)
    if not lo_a < 0.0 < hi_a:
        raise ValueError("the hypothesis is outside what any outcome distribution can reach")

    def f(x: float) -> float:
        return sum(pi * ai / (1.0 + x * ai) for ai, pi in zip(a, p, strict=True))

    return _bisect_decreasing(f, -1.0 / hi_a, -1.0 / lo_a)


def _mean_variance(values: Sequence[float], probs: Sequence[float]) -> tuple[float, float]:
    mean = sum(v * p for v, p in zip(values, probs, strict=True))
    return mean, sum(p * (v - mean) ** 2 for v, p in zip(values, probs, strict=True))


def _mle_expected(values: Sequence[float], phat: Sequence[float], s: float) -> list[float]:
    """Most likely distribution with expected score ``s`` given empirical ``phat`` (logistic model).

    Proposition 1.1 of Van den Bergh: pᵢ = p̂ᵢ/(1 + x·(aᵢ - s)) with x the root of
    the secular equation for aᵢ - s.
    """
    shifted = [v - s for v in values]
    x = _secular(shifted, phat)
    return [pi / (1.0 + x * ai) for ai, pi in zip(shifted, phat, strict=True)]


def _mle_t_value(values: Sequence[float], phat: Sequence[float], ref: float, t: float) -> list[float]:
    """Most likely distribution with t-value (mu - ref)/sigma = ``t`` given ``phat`` (normalized model).

    Section 4.1 of Van den Bergh: a fixed-point iteration, starting from the
    uniform distribution, each step solving a secular equation linearised at
    the current (mu, sigma).
    """
    p = [1.0 / len(values)] * len(values)
    for _ in range(_MLE_MAX_ITERATIONS):
        mu, var = _mean_variance(values, p)
        sigma = math.sqrt(var)
        phi = [v - ref - t * sigma * (1.0 + ((mu - v) / sigma) ** 2) / 2.0 for v in values]
        x = _secular(phi, phat)
        new_p = [pi / (1.0 + x * fi) for fi, pi in zip(phi, phat, strict=True)]
        moved = max(abs(a - b) for a, b in zip(new_p, p, strict=True))
        p = new_p
        if moved < _MLE_TOLERANCE:
            break
    return p


def llr(
    results: Trinomial | Pentanomial,
    elo0: float,
    elo1: float,
    model: EloModel = EloModel.NORMALIZED,
) -> float:
    """GSPRT log-likelihood ratio of H1 (Elo = ``elo1``) against H0 (Elo = ``elo0``).

    ``results`` are W/D/L counts or pentanomial pair counts. For pairs the
    sample is the pair, and the normalized hypotheses are scaled by √2 because
    a pair's score deviation is 1/√2 of a game's when games are independent
    (fishtest's ``LLR_normalized``), so both forms test the same per-game nElo.
    With no games at all the LLR is 0.
    """
    raw = results.counts()
    if sum(raw) == 0:
        return 0.0
    counts = [float(c) if c > 0 else _REGULARIZE for c in raw]
    total = sum(counts)
    phat = [c / total for c in counts]
    values = [i / (len(counts) - 1) for i in range(len(counts))]
    if model is EloModel.LOGISTIC:
        p0 = _mle_expected(values, phat, elo_to_score(elo0))
        p1 = _mle_expected(values, phat, elo_to_score(elo1))
    else:
        scale = math.sqrt(2.0) if isinstance(results, Pentanomial) else 1.0
        p0 = _mle_t_value(values, phat, 0.5, scale * elo0 / NELO_PER_T)
        p1 = _mle_t_value(values, phat, 0.5, scale * elo1 / NELO_PER_T)
    return total * sum(ph * (math.log(a) - math.log(b)) for ph, a, b in zip(phat, p1, p0, strict=True))


def sprt(results: Trinomial | Pentanomial, parameters: SprtParameters) -> SprtResult:
    """Run the test on the counts so far: "continue", "accept H0" or "accept H1", with the LLR.

    The test is meant to be consulted after every game (or pair) and stopped at
    the first decision; reading it only at the end of a fixed-length match
    does not carry the alpha/beta guarantees.
    """
    value = llr(results, parameters.elo0, parameters.elo1, parameters.model)
    lower, upper = parameters.lower_bound, parameters.upper_bound
    if value >= upper:
        decision = SprtDecision.ACCEPT_H1
    elif value <= lower:
        decision = SprtDecision.ACCEPT_H0
    else:
        decision = SprtDecision.CONTINUE
    return SprtResult(decision=decision, llr=value, lower_bound=lower, upper_bound=upper)
