"""The organiser's sealed secret: where every game's hidden set-up and bot seeds come from.

A tournament's public configuration (the TOML file, its ``seed`` string) decides only
*who plays whom*: tables, colours, Swiss lots. What must stay hidden — each game's
32-byte set-up seed (Kabaleo objectives) and the per-seat bot seeds — is drawn from a
32-byte secret the organiser creates at random when the tournament starts and keeps in
the tournament database, never shown until the tournament has finished. Anyone who
knows the configuration therefore learns nothing about a set-up.

``ziggurat tournament run --seed TEXT`` replaces the random secret by
``SHA-256("ziggurat-tournament-secret/" + TEXT)`` so that a *private* run can be
repeated exactly (benchmarks, regression tests). It is no secret to whoever knows TEXT:
do not use it for a competition whose participants might guess it.

Every game also has an *attempt* number. A game cut off by a crash is replayed with the
next attempt, hence a fresh seed: the cut-off match is aborted, which publishes its seed,
and a replay with that same seed would be played by bots that could have read it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

SECRET_BYTES = 32
TEXT_PREFIX = b"ziggurat-tournament-secret/"


def new_secret() -> bytes:
    """A fresh random secret (the default for every tournament)."""
    return secrets.token_bytes(SECRET_BYTES)


def secret_from_text(text: str) -> bytes:
    """The secret of ``--seed TEXT``: reproducible, hence only for private runs."""
    return hashlib.sha256(TEXT_PREFIX + text.encode("utf-8")).digest()


def _draw(secret: bytes, label: str) -> bytes:
    return hmac.new(secret, label.encode("utf-8"), hashlib.sha256).digest()


def game_seed(secret: bytes, index: int, deal: int | None, attempt: int) -> bytes:
    """The set-up seed of game ``index``: every rotation of a duplicate deal shares its deal's seed."""
    label = f"deal/{deal}" if deal is not None else f"game/{index}"
    return _draw(secret, f"{label}/attempt/{attempt}")


def bot_seeds(secret: bytes, index: int, seats: int, attempt: int) -> tuple[int, ...]:
    """Per-seat seeds (< 2**63) handed to the bots of game ``index`` (reproducible bots)."""
    out = []
    for seat in range(seats):
        digest = _draw(secret, f"bots/{index}/{seat}/attempt/{attempt}")
        out.append(int.from_bytes(digest[:8], "big") >> 1)
    return tuple(out)
