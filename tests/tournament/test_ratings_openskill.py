"""OpenSkill (Plackett-Luce) table: documented example values, a hand derivation, properties.

Sources:
* openskill.py README "Limited Example" (shipped in the installed 6.2.0 package metadata and
  at https://github.com/vivekjoshy/openskill.py): default rating mu=25, sigma=8.333333333333334;
  after a 2-vs-2 game with default ratings the winners have mu=26.964294621803063,
  sigma=8.177962604389991 and the losers mu=23.035705378196937, same sigma.
* Weng & Lin, "A Bayesian Approximation Method for Online Ranking", JMLR 12 (2011),
  Algorithm 4 (Plackett-Luce), worked by hand below for one-vs-one between equal ratings.
"""

from __future__ import annotations

import math

import pytest
from openskill.models import PlackettLuce

from ziggurat.tournament.ratings import OpenSkillTable
from ziggurat.tournament.ratings_openskill import DEFAULT_BETA, DEFAULT_MU, DEFAULT_SIGMA, DEFAULT_TAU


def test_readme_defaults_and_two_vs_two_example() -> None:
    # The pinned package still produces the README's numbers with the defaults our table uses.
    model = PlackettLuce(mu=DEFAULT_MU, sigma=DEFAULT_SIGMA, beta=DEFAULT_BETA, tau=DEFAULT_TAU)
    assert (DEFAULT_MU, DEFAULT_SIGMA) == (25.0, 8.333333333333334)
    r = model.rating
    [[a, b], [x, y]] = model.rate([[r(), r()], [r(), r()]])
    assert a.mu == pytest.approx(26.964294621803063, abs=1e-12)
    assert a.sigma == pytest.approx(8.177962604389991, abs=1e-12)
    assert x.mu == pytest.approx(23.035705378196937, abs=1e-12)
    assert x.sigma == pytest.approx(8.177962604389991, abs=1e-12)
    assert (a.mu, a.sigma) == (b.mu, b.sigma)
    assert (x.mu, x.sigma) == (y.mu, y.sigma)


def test_new_participant_has_the_readme_default_rating() -> None:
    table = OpenSkillTable()
    fresh = table.rating("nobody")
    assert (fresh.mu, fresh.sigma, fresh.games) == (25.0, 8.333333333333334, 0)
    assert fresh.ordinal == pytest.approx(0.0, abs=1e-12)
    assert "nobody" not in table


def test_one_vs_one_matches_weng_lin_algorithm_by_hand() -> None:
    # Weng & Lin Algorithm 4 for two equal players: sigma'^2 = sigma^2 + tau^2 (openskill's
    # additive dynamics), c^2 = 2(sigma'^2 + beta^2), each wins with probability 1/2, so
    # Omega = +-sigma'^2 / (2c) and Delta = gamma * sigma'^2/c^2 * 1/4 with gamma = sigma'/c.
    s2 = DEFAULT_SIGMA**2 + DEFAULT_TAU**2
    c = math.sqrt(2 * (s2 + DEFAULT_BETA**2))
    omega = s2 / (2 * c)
    delta = math.sqrt(s2) / c * s2 / c**2 / 4
    table = OpenSkillTable()
    table.record({"winner": 1, "loser": 2})
    win, lose = table.rating("winner"), table.rating("loser")
    assert win.mu == pytest.approx(DEFAULT_MU + omega, abs=1e-12)
    assert lose.mu == pytest.approx(DEFAULT_MU - omega, abs=1e-12)
    assert win.sigma == pytest.approx(math.sqrt(s2 * (1 - delta)), abs=1e-12)
    assert lose.sigma == pytest.approx(win.sigma, abs=1e-12)
    # The figures, for the record: 27.6354 / 22.3646, sigma 8.0659.
    assert (win.mu, lose.mu, win.sigma) == pytest.approx((27.63539, 22.36461, 8.06590), abs=1e-5)
    assert win.ordinal == pytest.approx(win.mu - 3 * win.sigma)
    assert (win.games, lose.games) == (1, 1)


def test_table_equals_direct_openskill_call_for_four_players() -> None:
    model = PlackettLuce()
    r = model.rating
    expected = model.rate([[r()], [r()], [r()], [r()]], ranks=[1.0, 2.0, 2.0, 3.0])
    table = OpenSkillTable()
    table.record({"a": 1, "b": 2, "c": 2, "d": 3})
    for name, (want,) in zip("abcd", expected, strict=True):
        got = table.rating(name)
        assert (got.mu, got.sigma) == pytest.approx((want.mu, want.sigma), abs=1e-12)


def test_winners_gain_and_losers_lose_mu() -> None:
    table = OpenSkillTable()
    table.record({"a": 1, "b": 2, "c": 3, "d": 4})
    mus = [table.rating(n).mu for n in "abcd"]
    assert mus[0] > 25.0 > mus[3]
    assert mus == sorted(mus, reverse=True)
    assert [r.name for r in table.standings()] == ["a", "b", "c", "d"]
    assert all(table.rating(n).sigma < 25.0 / 3.0 for n in "abcd")


def test_a_tie_moves_both_towards_each_other() -> None:
    table = OpenSkillTable()
    for _ in range(3):
        table.record({"strong": 1, "weak": 2})
    before_strong, before_weak = table.rating("strong").mu, table.rating("weak").mu
    table.record({"strong": 1, "weak": 1})
    after_strong, after_weak = table.rating("strong").mu, table.rating("weak").mu
    assert after_strong < before_strong
    assert after_weak > before_weak
    assert after_weak < after_strong  # towards each other, not past each other


def test_a_tie_between_equals_changes_no_mu() -> None:
    table = OpenSkillTable()
    table.record({"a": 1, "b": 1})
    assert table.rating("a").mu == pytest.approx(25.0, abs=1e-12)
    assert table.rating("b").mu == pytest.approx(25.0, abs=1e-12)


def test_placings_are_the_same_game_as_ranks() -> None:
    by_ranks, by_placings = OpenSkillTable(), OpenSkillTable()
    by_ranks.record({"a": 1, "b": 2, "c": 2, "d": 3})
    by_placings.record_placings([["a"], ["c", "b"], ["d"]])
    assert by_ranks.standings() == by_placings.standings()


def test_listing_order_within_a_game_does_not_matter() -> None:
    one, other = OpenSkillTable(), OpenSkillTable()
    one.record({"a": 1, "b": 2, "c": 2, "d": 3})
    other.record({"d": 3, "c": 2, "b": 2, "a": 1})
    assert one.standings() == other.standings()  # bit-identical, thanks to the canonical order


def test_replay_is_deterministic_but_game_order_matters() -> None:
    games = [{"a": 1, "b": 2}, {"b": 1, "c": 2}, {"c": 1, "a": 2}, {"a": 1, "b": 2, "c": 3}]
    first, second = OpenSkillTable(), OpenSkillTable()
    first.record_all(games)
    second.record_all(games)
    assert first.standings() == second.standings()
    reordered = OpenSkillTable()
    reordered.record_all(list(reversed(games)))
    assert reordered.standings() != first.standings()  # documented: updates are sequential


def test_game_counts_and_membership() -> None:
    table = OpenSkillTable()
    table.record({"a": 1, "b": 2})
    table.record({"a": 2, "c": 1, "d": 3})
    assert len(table) == 4
    assert "c" in table
    assert {r.name: r.games for r in table.standings()} == {"a": 2, "b": 1, "c": 1, "d": 1}


def test_bad_games_are_rejected_and_leave_the_table_alone() -> None:
    table = OpenSkillTable()
    with pytest.raises(ValueError, match="2-4"):
        table.record({"a": 1})
    with pytest.raises(ValueError, match="2-4"):
        table.record({n: i for i, n in enumerate("abcde")})
    with pytest.raises(ValueError, match="twice"):
        table.record_placings([["a"], ["a"]])
    with pytest.raises(ValueError, match="at least one"):
        table.record_placings([["a"], []])
    with pytest.raises(ValueError, match="non-empty"):
        table.record({"": 1, "b": 2})
    assert len(table) == 0


def test_limit_sigma_never_widens_a_deviation() -> None:
    table = OpenSkillTable(limit_sigma=True)
    for _ in range(20):
        table.record({"a": 1, "b": 2})
    sigma = table.rating("a").sigma
    table.record({"a": 1, "b": 2})
    assert table.rating("a").sigma <= sigma
