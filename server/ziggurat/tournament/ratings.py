"""Ratings and match statistics for bot tournaments, in one import.

* :mod:`~ziggurat.tournament.ratings_openskill` -- OpenSkill (Plackett-Luce)
  ratings for any table size (:class:`OpenSkillTable`);
* :mod:`~ziggurat.tournament.ratings_elo` -- Elo ± 95 % and likelihood of
  superiority for two bots, from W/D/L or paired-game (pentanomial) counts;
* :mod:`~ziggurat.tournament.ratings_sprt` -- the fishtest/fastchess GSPRT.

All of it is pure computation: no I/O, no clocks, no randomness.
"""

from __future__ import annotations

from ziggurat.tournament.ratings_elo import (
    Z95,
    EloEstimate,
    Pentanomial,
    Trinomial,
    elo_pentanomial,
    elo_to_score,
    elo_trinomial,
    likelihood_of_superiority,
    score_likelihood_of_superiority,
    score_to_elo,
    score_to_normalized_elo,
)
from ziggurat.tournament.ratings_openskill import OpenSkillTable, ParticipantRating
from ziggurat.tournament.ratings_sprt import (
    EloModel,
    SprtDecision,
    SprtParameters,
    SprtResult,
    llr,
    sprt,
)

__all__ = [
    "Z95",
    "EloEstimate",
    "EloModel",
    "OpenSkillTable",
    "ParticipantRating",
    "Pentanomial",
    "SprtDecision",
    "SprtParameters",
    "SprtResult",
    "Trinomial",
    "elo_pentanomial",
    "elo_to_score",
    "elo_trinomial",
    "likelihood_of_superiority",
    "llr",
    "score_likelihood_of_superiority",
    "score_to_elo",
    "score_to_normalized_elo",
    "sprt",
]
