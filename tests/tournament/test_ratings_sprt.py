"""GSPRT log-likelihood ratios checked against fastchess/fishtest worked examples and properties.

Sources:
* fastchess, app/tests/sprt_test.cpp at current master (https://github.com/Disservin/fastchess;
  the LLR code there was ported from fishtest in PR #794 "improve LLR algorithm: fishtest llr"):
  the normalized/logistic trinomial and pentanomial cases below, with fastchess's tolerance
  (doctest::Approx(...).epsilon(0.01), i.e. 1 % relative). fastchess's Stats(a, b, c) is
  (wins, losses, draws); Stats(a, ..., f) is (LL, LD, WL, DD, WD, WW).
  (An older revision of that file had different "trinomial 3"/"pentanomial 3" cases that
  belong to the pre-#794 algorithm; they are deliberately not used.)
* fishtest, server/fishtest/stats/LLRcalc.py (https://github.com/official-stockfish/fishtest):
  the same GSPRT, plus the closed-form approximations LLR_alt2 and LLR_normalized_alt
  re-derived below as independent cross-checks.
* Wald's bounds: fishtest's SPRT calculator shows (-2.94, 2.94) for alpha = beta = 0.05.
"""

from __future__ import annotations

import itertools
import math

import pytest

from ziggurat.tournament.ratings import (
    EloModel,
    Pentanomial,
    SprtDecision,
    SprtParameters,
    Trinomial,
    elo_to_score,
    llr,
    sprt,
)

NORMALIZED = EloModel.NORMALIZED
LOGISTIC = EloModel.LOGISTIC
NELO_PER_T = 800 / math.log(10)


def fc(value: float) -> object:
    return pytest.approx(value, rel=0.01)


def tri(wins: int, losses: int, draws: int) -> Trinomial:
    """fastchess's Stats(wins, losses, draws) argument order."""
    return Trinomial(wins=wins, draws=draws, losses=losses)


def penta(ll: int, ld: int, wl: int, dd: int, wd: int, ww: int) -> Pentanomial:
    """fastchess's Stats(LL, LD, WL, DD, WD, WW) argument order."""
    return Pentanomial(ll=ll, ld=ld, wl_dd=wl + dd, wd=wd, ww=ww)


# --- fastchess sprt_test.cpp ---------------------------------------------------------------

FASTCHESS_CASES: list[tuple[str, Trinomial | Pentanomial, float, float, EloModel, float]] = [
    # (name in sprt_test.cpp, counts, elo0, elo1, model, expected LLR)
    ("normalized trinomial 1", tri(36433, 36027, 68692), 0.0, 2.0, NORMALIZED, 0.92),
    ("normalized trinomial 2", tri(10871, 10650, 20431), -1.75, 0.25, NORMALIZED, 2.30),
    ("normalized trinomial 3", tri(4250, 0, 0), 0.0, 10.0, NORMALIZED, 120.56),
    ("logistic trinomial 1", tri(21404, 21184, 40708), 0.5, 2.5, LOGISTIC, -1.57),
    ("logistic trinomial 2", tri(57433, 57030, 106593), 0.0, 2.0, LOGISTIC, -2.59),
    ("normalized pentanomial 1", penta(365, 16618, 36029, 200, 16974, 390), 0.0, 2.0, NORMALIZED, 2.25),
    ("normalized pentanomial 2", penta(127, 4883, 10311, 401, 5150, 104), -1.75, 0.25, NORMALIZED, 3.01),
    ("normalized pentanomial 3", penta(0, 0, 0, 0, 0, 5550), 0.0, 5.0, NORMALIZED, 111.82),
    ("logistic pentanomial 1", penta(223, 9863, 20279, 1000, 10037, 246), 0.5, 2.5, LOGISTIC, -3.07),
    ("logistic pentanomial 2", penta(871, 26175, 55003, 980, 26678, 821), 0.0, 2.0, LOGISTIC, -4.98),
]


@pytest.mark.parametrize(
    ("counts", "elo0", "elo1", "model", "expected"),
    [case[1:] for case in FASTCHESS_CASES],
    ids=[case[0] for case in FASTCHESS_CASES],
)
def test_fastchess_llr_examples(
    counts: Trinomial | Pentanomial, elo0: float, elo1: float, model: EloModel, expected: float
) -> None:
    assert llr(counts, elo0, elo1, model) == fc(expected)


def test_fastchess_non_extreme_examples_to_two_decimals() -> None:
    # For the non-degenerate cases our fully converged MLE agrees with fastchess's printed
    # two decimals exactly (the 1 % tolerance above is only needed for the all-wins cases,
    # where fastchess/fishtest stop the fixed-point iteration after 10 rounds).
    for name, counts, elo0, elo1, model, expected in FASTCHESS_CASES:
        if name.endswith("3"):
            continue
        assert round(llr(counts, elo0, elo1, model), 2) == expected, name


# --- bounds ----------------------------------------------------------------------------------


def test_bounds_formula_and_fishtest_display() -> None:
    params = SprtParameters(elo0=0.0, elo1=2.0)
    assert params.lower_bound == pytest.approx(math.log(0.05 / 0.95))
    assert params.upper_bound == pytest.approx(math.log(0.95 / 0.05))
    # fishtest's SPRT calculator shows these as (-2.94, 2.94).
    assert f"({params.lower_bound:.2f}, {params.upper_bound:.2f})" == "(-2.94, 2.94)"
    skewed = SprtParameters(elo0=0.0, elo1=5.0, alpha=0.01, beta=0.1)
    assert skewed.lower_bound == pytest.approx(math.log(0.1 / 0.99))
    assert skewed.upper_bound == pytest.approx(math.log(0.9 / 0.01))


def test_bad_parameters_are_rejected() -> None:
    with pytest.raises(ValueError, match="elo0"):
        SprtParameters(elo0=2.0, elo1=2.0)
    with pytest.raises(ValueError, match="alpha"):
        SprtParameters(elo0=0.0, elo1=2.0, alpha=0.0)
    with pytest.raises(ValueError, match="alpha \\+ beta"):
        SprtParameters(elo0=0.0, elo1=2.0, alpha=0.6, beta=0.5)


# --- independent cross-checks ------------------------------------------------------------------


def test_logistic_llr_matches_fishtest_brownian_approximation() -> None:
    # fishtest LLRcalc.LLR_alt2 (Van den Bergh, "GSPRT approximation"):
    # LLR ~= N (s1 - s0)(2s - s0 - s1) / (2 var), accurate when s0, s1 and s are close.
    counts = Trinomial(wins=2040, draws=3960, losses=2000)
    n = counts.games
    s = (counts.wins + 0.5 * counts.draws) / n
    var = (counts.wins * (1 - s) ** 2 + counts.draws * (0.5 - s) ** 2 + counts.losses * s**2) / n
    s0, s1 = elo_to_score(0.0), elo_to_score(5.0)
    approx = n * (s1 - s0) * (2 * s - s0 - s1) / (2 * var)
    assert llr(counts, 0.0, 5.0, LOGISTIC) == pytest.approx(approx, rel=0.01)


def test_normalized_llr_matches_fishtest_closed_form_approximation() -> None:
    # fishtest LLRcalc.LLR_normalized_alt ("Comments on Normalized Elo", section 4.2):
    # LLR ~= (games/2) * log((1 + (t - t0)^2) / (1 + (t - t1)^2)), t per game.
    for counts in (
        Pentanomial(ll=300, ld=2100, wl_dd=4500, wd=2300, ww=350),
        Pentanomial(ll=350, ld=2300, wl_dd=4500, wd=2100, ww=300),
    ):
        values = [0, 0.25, 0.5, 0.75, 1.0]
        n = counts.pairs
        mu = sum(v * c for v, c in zip(values, counts.counts(), strict=True)) / n
        var = sum(c * (v - mu) ** 2 for v, c in zip(values, counts.counts(), strict=True)) / n
        t = (mu - 0.5) / math.sqrt(2 * var)
        t0, t1 = 0.0 / NELO_PER_T, 5.0 / NELO_PER_T
        approx = n * math.log((1 + (t - t0) ** 2) / (1 + (t - t1) ** 2))  # games/2 == pairs
        assert llr(counts, 0.0, 5.0, NORMALIZED) == pytest.approx(approx, rel=0.02)


def test_pentanomial_and_trinomial_agree_for_independent_games() -> None:
    # With independent games the pair distribution is the game distribution convolved with
    # itself, and the GSPRT on N pairs must tell the same story as on 2N games.
    pl, pd, pw = 0.29, 0.40, 0.31
    pairs = 20_000
    probs = [pl * pl, 2 * pl * pd, pd * pd + 2 * pw * pl, 2 * pw * pd, pw * pw]
    pent = Pentanomial(*(round(p * pairs) for p in probs))
    games = 2 * pent.pairs
    tri3 = Trinomial(wins=round(pw * games), draws=round(pd * games), losses=round(pl * games))
    for model in (NORMALIZED, LOGISTIC):
        a, b = llr(tri3, 0.0, 5.0, model), llr(pent, 0.0, 5.0, model)
        assert b == pytest.approx(a, rel=0.02), model


# --- properties ------------------------------------------------------------------------------


@pytest.mark.parametrize("model", [NORMALIZED, LOGISTIC])
def test_swapping_wins_and_losses_negates_a_symmetric_test(model: EloModel) -> None:
    # H0: -e vs H1: +e is antisymmetric: the mirrored sample has exactly the opposite LLR.
    counts = Trinomial(wins=530, draws=700, losses=470)
    assert llr(counts.mirrored(), -3.0, 3.0, model) == pytest.approx(-llr(counts, -3.0, 3.0, model))
    pent = Pentanomial(ll=40, ld=180, wl_dd=300, wd=210, ww=55)
    assert llr(pent.mirrored(), -3.0, 3.0, model) == pytest.approx(-llr(pent, -3.0, 3.0, model))


@pytest.mark.parametrize("model", [NORMALIZED, LOGISTIC])
def test_llr_is_monotone_in_wins(model: EloModel) -> None:
    values = [llr(Trinomial(wins=w, draws=500, losses=450), 0.0, 5.0, model) for w in range(400, 520, 10)]
    assert all(a < b for a, b in itertools.pairwise(values))
    pvalues = [
        llr(Pentanomial(ll=50, ld=200, wl_dd=400, wd=200, ww=ww), 0.0, 5.0, model) for ww in range(40, 70, 5)
    ]
    assert all(a < b for a, b in itertools.pairwise(pvalues))


def test_no_games_is_llr_zero_and_continue() -> None:
    result = sprt(Trinomial(wins=0, draws=0, losses=0), SprtParameters(elo0=0.0, elo1=5.0))
    assert result.llr == 0.0
    assert result.decision is SprtDecision.CONTINUE


def test_sample_exactly_at_h0_gives_non_positive_llr() -> None:
    # When the observed Elo is exactly elo0, the H0 fit is the empirical distribution itself,
    # which no constrained fit can beat: the generalized LLR is <= 0.
    counts = Trinomial(wins=300, draws=400, losses=300)
    assert llr(counts, 0.0, 5.0, NORMALIZED) < 0
    assert llr(counts, 0.0, 5.0, LOGISTIC) < 0


@pytest.mark.parametrize("model", [NORMALIZED, LOGISTIC])
def test_sprt_decides_h1_on_a_strong_winner_and_h0_on_a_loser(model: EloModel) -> None:
    params = SprtParameters(elo0=0.0, elo1=5.0, model=model)
    win = sprt(Trinomial(wins=700, draws=600, losses=500), params)
    assert win.decision is SprtDecision.ACCEPT_H1
    assert win.llr >= win.upper_bound
    lose = sprt(Trinomial(wins=500, draws=600, losses=700), params)
    assert lose.decision is SprtDecision.ACCEPT_H0
    assert lose.llr <= lose.lower_bound
    still = sprt(Trinomial(wins=12, draws=10, losses=10), params)
    assert still.decision is SprtDecision.CONTINUE
    assert still.lower_bound < still.llr < still.upper_bound
    pent = Pentanomial(ll=20, ld=80, wl_dd=300, wd=180, ww=60)
    assert sprt(pent, params).decision is SprtDecision.ACCEPT_H1
    assert sprt(pent.mirrored(), params).decision is SprtDecision.ACCEPT_H0


def test_decision_strings() -> None:
    assert [d.value for d in SprtDecision] == ["continue", "accept H0", "accept H1"]


def test_default_model_is_normalized() -> None:
    assert SprtParameters(elo0=0.0, elo1=2.0).model is EloModel.NORMALIZED
