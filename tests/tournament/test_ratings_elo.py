"""Elo, error bars and LOS checked against published figures and exact properties.

Sources:
* chessprogramming wiki, "Match Statistics"
  (https://www.chessprogramming.org/Match_Statistics): Elo from score
  -400*log10(1/score - 1), and LOS = 0.5*(1 + erf((W - L)/sqrt(2(W + L)))).
* cutechess-cli, projects/lib/src/elo.cpp (https://github.com/cutechess/cutechess):
  the same Elo formula, error = half the Elo width of score +/- z*stdev.
* fastchess, app/tests/elo_test.cpp (https://github.com/Disservin/fastchess),
  read at its current master: the worked examples "EloWDL 1-3" and
  "EloPentanomial 1-3" below, with fastchess's own tolerance (1 % relative).
  fastchess's Stats(a, b, c) is (wins, losses, draws); Stats(a..f) is
  (LL, LD, WL, DD, WD, WW).
"""

from __future__ import annotations

import math

import pytest

from ziggurat.tournament.ratings import (
    Pentanomial,
    Trinomial,
    elo_pentanomial,
    elo_to_score,
    elo_trinomial,
    likelihood_of_superiority,
    score_likelihood_of_superiority,
    score_to_elo,
)

FASTCHESS_TOLERANCE = 0.01  # doctest::Approx(...).epsilon(0.01) in elo_test.cpp


def fc(value: float) -> object:
    return pytest.approx(value, rel=FASTCHESS_TOLERANCE)


# --- chessprogramming wiki / cutechess formula ---------------------------------------------


def test_wiki_sixty_percent_is_about_plus_70_elo() -> None:
    # chessprogramming wiki "Match Statistics" (Elo-Rating & Win-Probability), quoted from
    # memory: a 60 % score corresponds to about +70.4 Elo.
    assert score_to_elo(0.6) == pytest.approx(70.4365, abs=1e-4)
    assert score_to_elo(0.4) == pytest.approx(-70.4365, abs=1e-4)


def test_elo_formula_equals_400_log10_score_ratio() -> None:
    # The form commonly quoted for cutechess-cli: Elo = 400*log10(score/(1 - score)).
    for score in (0.01, 0.25, 0.5, 0.64, 0.75, 0.99):
        assert score_to_elo(score) == pytest.approx(400 * math.log10(score / (1 - score)), abs=1e-9)


def test_elo_and_score_are_inverse() -> None:
    for elo in (-800.0, -191.0, -1.0, 0.0, 3.5, 100.0, 400.0):
        assert score_to_elo(elo_to_score(elo)) == pytest.approx(elo, abs=1e-9)
    # The textbook anchors: +400 Elo expects 10:1, i.e. a score of 10/11.
    assert elo_to_score(400.0) == pytest.approx(10 / 11)
    assert elo_to_score(-1e9) == 0.0


def test_whitewash_has_infinite_elo_not_an_exception() -> None:
    assert score_to_elo(1.0) == math.inf
    assert score_to_elo(0.0) == -math.inf
    est = elo_trinomial(Trinomial(wins=10, draws=0, losses=0))
    assert est.elo == math.inf
    assert est.error == math.inf


def test_los_wiki_formula_and_fixed_points() -> None:
    # chessprogramming wiki LOS: 0.5*(1 + erf((W - L)/sqrt(2(W + L)))); draws do not enter.
    assert likelihood_of_superiority(10, 10) == 0.5
    assert likelihood_of_superiority(0, 0) == 0.5
    # W - L = sqrt(W + L) is exactly one standard deviation: LOS = Phi(1) = 84.13 %.
    assert likelihood_of_superiority(58, 42) == pytest.approx(0.5 * (1 + math.erf(16 / math.sqrt(200))))
    assert likelihood_of_superiority(55, 45) == pytest.approx(0.841345, abs=1e-6)
    assert likelihood_of_superiority(45, 55) == pytest.approx(1 - 0.841345, abs=1e-6)
    assert elo_trinomial(Trinomial(wins=55, draws=999, losses=45)).los == likelihood_of_superiority(55, 45)


# --- fastchess worked examples ------------------------------------------------------------


def test_fastchess_elowdl_1() -> None:
    # fastchess elo_test.cpp "EloWDL 1": Stats(76, 89, 123) -> nElo -20.76 +/- 40.13, LOS "15.53 %".
    est = elo_trinomial(Trinomial(wins=76, draws=123, losses=89))
    assert est.nelo == fc(-20.76)
    assert est.nelo_error == fc(40.13)
    assert est.score == fc(0.477)
    # fastchess prints the score-based LOS, to two decimals.
    assert f"{100 * score_likelihood_of_superiority(est.score, est.variance, est.samples):.2f} %" == "15.53 %"


def test_fastchess_elowdl_2() -> None:
    # fastchess "EloWDL 2": Stats(136, 96, 111) -> nElo 49.77 +/- 36.77, Elo 40.70 +/- 30.43, LOS "99.60 %".
    est = elo_trinomial(Trinomial(wins=136, draws=111, losses=96))
    assert est.nelo == fc(49.77)
    assert est.nelo_error == fc(36.77)
    assert est.elo == fc(40.70)
    assert est.error == fc(30.43)
    assert f"{100 * score_likelihood_of_superiority(est.score, est.variance, est.samples):.2f} %" == "99.60 %"
    # Our own digits, for the record (tighter than fastchess's two decimals).
    assert est.elo == pytest.approx(40.7025, abs=1e-4)
    assert est.error == pytest.approx(30.4272, abs=1e-4)
    # The wiki LOS (wins/losses only) is close to the score-based one.
    assert est.los == pytest.approx(0.9957, abs=1e-4)


def test_fastchess_elowdl_3() -> None:
    # fastchess "EloWDL 3": Stats(34, 356, 0) -> nElo -508.44 +/- 34.48, score 0.087.
    est = elo_trinomial(Trinomial(wins=34, draws=0, losses=356))
    assert est.nelo == fc(-508.44)
    assert est.nelo_error == fc(34.48)
    assert est.score == fc(0.087)


def test_fastchess_elopentanomial_1() -> None:
    # fastchess "EloPentanomial 1": Stats(34, 54, 31, 32, 64, 75) -> nElo 57.94 +/- 28.28,
    # Elo 55.58 +/- 27.65, LOS "100.00 %".
    est = elo_pentanomial(Pentanomial(ll=34, ld=54, wl_dd=31 + 32, wd=64, ww=75))
    assert est.nelo == fc(57.94)
    assert est.nelo_error == fc(28.28)
    assert est.elo == fc(55.58)
    assert est.error == fc(27.65)
    assert f"{100 * est.los:.2f} %" == "100.00 %"


def test_fastchess_elopentanomial_2() -> None:
    # fastchess "EloPentanomial 2": Stats(332, 433, 457, 41, 333, 334) -> nElo -9.17 +/- 10.96,
    # Elo -8.64 +/- 10.33, LOS "5.05 %".
    est = elo_pentanomial(Pentanomial(ll=332, ld=433, wl_dd=457 + 41, wd=333, ww=334))
    assert est.nelo == fc(-9.17)
    assert est.nelo_error == fc(10.96)
    assert est.elo == fc(-8.64)
    assert est.error == fc(10.33)
    assert f"{100 * est.los:.2f} %" == "5.05 %"


def test_fastchess_elopentanomial_3() -> None:
    # fastchess "EloPentanomial 3": Stats(7895, 8757, 5485, 200, 568, 9999) -> nElo -19.01 +/- 2.65,
    # Elo -21.04 +/- 2.95.
    est = elo_pentanomial(Pentanomial(ll=7895, ld=8757, wl_dd=5485 + 200, wd=568, ww=9999))
    assert est.nelo == fc(-19.01)
    assert est.nelo_error == fc(2.65)
    assert est.elo == fc(-21.04)
    assert est.error == fc(2.95)


# --- properties that cannot fail silently ------------------------------------------------


def test_even_score_is_zero_elo_and_fifty_percent_los() -> None:
    est = elo_trinomial(Trinomial(wins=30, draws=40, losses=30))
    assert est.elo == 0.0
    assert est.nelo == 0.0
    assert est.los == 0.5
    pent = elo_pentanomial(Pentanomial(ll=5, ld=10, wl_dd=20, wd=10, ww=5))
    assert pent.elo == 0.0
    assert pent.los == 0.5


def test_swapping_sides_negates_elo_and_mirrors_los() -> None:
    tri = Trinomial(wins=61, draws=27, losses=44)
    a, b = elo_trinomial(tri), elo_trinomial(tri.mirrored())
    assert b.elo == pytest.approx(-a.elo)
    assert b.error == pytest.approx(a.error)
    assert b.nelo == pytest.approx(-a.nelo)
    assert b.los == pytest.approx(1 - a.los)
    assert (b.elo_lower, b.elo_upper) == pytest.approx((-a.elo_upper, -a.elo_lower))
    pent = Pentanomial(ll=3, ld=11, wl_dd=25, wd=14, ww=6)
    p, q = elo_pentanomial(pent), elo_pentanomial(pent.mirrored())
    assert q.elo == pytest.approx(-p.elo)
    assert q.error == pytest.approx(p.error)
    assert q.los == pytest.approx(1 - p.los)


def test_error_bar_is_the_z95_normal_interval() -> None:
    # Rebuild the interval by hand from the per-game score variance.
    w, d, lo = 50, 30, 20
    n = w + d + lo
    s = (w + 0.5 * d) / n
    var = (w * (1 - s) ** 2 + d * (0.5 - s) ** 2 + lo * s**2) / n
    half = 1.959963984540054 * math.sqrt(var / n)
    est = elo_trinomial(Trinomial(wins=w, draws=d, losses=lo))
    assert est.elo_lower == pytest.approx(score_to_elo(s - half))
    assert est.elo_upper == pytest.approx(score_to_elo(s + half))
    assert est.error == pytest.approx((est.elo_upper - est.elo_lower) / 2)
    assert est.elo_lower < est.elo < est.elo_upper


def test_error_shrinks_like_one_over_root_n() -> None:
    small = elo_trinomial(Trinomial(wins=55, draws=0, losses=45))
    large = elo_trinomial(Trinomial(wins=5500, draws=0, losses=4500))
    assert small.elo == pytest.approx(large.elo)
    # Only approximately: the Elo map is curved, and the wide small-sample interval feels it.
    assert large.error == pytest.approx(small.error / 10, rel=0.02)


def test_pentanomial_of_independent_games_matches_trinomial() -> None:
    # If the two games of a pair are independent, the pair distribution is the convolution
    # of the game distribution with itself; the per-game score, its variance (x 2) and
    # therefore Elo, error and nElo must match the trinomial figures.
    pl, pd, pw = 0.3, 0.3, 0.4
    pairs = 1_000_000
    probs = [pl * pl, 2 * pl * pd, pd * pd + 2 * pw * pl, 2 * pw * pd, pw * pw]
    pent = Pentanomial(*(round(p * pairs) for p in probs))
    games = 2 * pent.pairs
    tri = Trinomial(wins=round(pw * games), draws=round(pd * games), losses=round(pl * games))
    a, b = elo_trinomial(tri), elo_pentanomial(pent)
    assert b.score == pytest.approx(a.score, abs=1e-9)
    assert 2 * b.variance == pytest.approx(a.variance, rel=1e-6)
    assert b.elo == pytest.approx(a.elo, rel=1e-6)
    assert b.error == pytest.approx(a.error, rel=1e-4)
    assert b.nelo == pytest.approx(a.nelo, rel=1e-6)


def test_pentanomial_from_pair_points() -> None:
    pent = Pentanomial.from_pair_points([0, 0.5, 1, 1, 1.5, 2, 2, 2])
    assert pent == Pentanomial(ll=1, ld=1, wl_dd=2, wd=1, ww=3)
    assert pent.pairs == 8
    with pytest.raises(ValueError, match="pair scores"):
        Pentanomial.from_pair_points([0.75])
    with pytest.raises(ValueError, match="pair scores"):
        Pentanomial.from_pair_points([2.5])


def test_bad_counts_are_rejected() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        Trinomial(wins=-1, draws=0, losses=0)
    with pytest.raises(ValueError, match="non-negative"):
        Pentanomial(ll=0, ld=0, wl_dd=-2, wd=0, ww=0)
    with pytest.raises(ValueError, match="no games"):
        elo_trinomial(Trinomial(wins=0, draws=0, losses=0))
