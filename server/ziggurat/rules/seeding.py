"""Deterministic randomness from a 32-byte seed: the documented set-up procedure.

The server draws a secret 32-byte seed per match, publishes
``commitment(seed)`` when the match starts and reveals the seed at the end.
Every random choice of the set-up is drawn from :class:`SeedStream`, so anyone
can re-derive the set-up from the revealed seed and check it (``ziggurat verify``).

Procedure (see ``docs/setup-derivation.md``):

* block ``i`` (i = 0, 1, ...) of the stream for a ``label`` is
  ``SHA-256(b"ziggurat/v1/" + label + b"/" + seed + i.to_bytes(8, "big"))``;
  the stream is the concatenation of the blocks.
* ``below(n)`` reads 8-byte big-endian integers ``x`` from the stream and
  returns ``x % n`` for the first ``x < 2**64 - (2**64 % n)`` (rejection
  sampling, so it is exactly uniform).
* ``shuffle(items)`` is Fisher-Yates: for ``i`` from ``len-1`` down to ``1``,
  swap ``items[i]`` with ``items[below(i + 1)]``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

from ziggurat.rules.core import InvalidConfigError

SEED_BYTES = 32
_DOMAIN = b"ziggurat/v1/"
_T = TypeVar("_T")


def commitment(seed: bytes) -> str:
    """The public commitment to a seed: hex SHA-256 of ``b"ziggurat/v1/commit/" + seed``."""
    check_seed(seed)
    return hashlib.sha256(_DOMAIN + b"commit/" + seed).hexdigest()


def check_seed(seed: bytes) -> None:
    """Raise InvalidConfigError unless ``seed`` is exactly 32 bytes."""
    if not isinstance(seed, bytes) or len(seed) != SEED_BYTES:
        raise InvalidConfigError(f"a seed must be exactly {SEED_BYTES} bytes")


class SeedStream:
    """A labelled, deterministic stream of uniform choices derived from a seed."""

    def __init__(self, seed: bytes, label: str) -> None:
        check_seed(seed)
        self._prefix = _DOMAIN + label.encode() + b"/" + seed
        self._counter = 0
        self._buffer = b""

    def _take(self, count: int) -> bytes:
        while len(self._buffer) < count:
            block = hashlib.sha256(self._prefix + self._counter.to_bytes(8, "big")).digest()
            self._counter += 1
            self._buffer += block
        out, self._buffer = self._buffer[:count], self._buffer[count:]
        return out

    def below(self, n: int) -> int:
        """A uniform integer in ``[0, n)``."""
        if n <= 0:
            raise ValueError("n must be positive")
        limit = 2**64 - (2**64 % n)
        while True:
            x = int.from_bytes(self._take(8), "big")
            if x < limit:
                return x % n

    def shuffle(self, items: Sequence[_T]) -> list[_T]:
        """A new list with ``items`` in Fisher-Yates order."""
        out = list(items)
        for i in range(len(out) - 1, 0, -1):
            j = self.below(i + 1)
            out[i], out[j] = out[j], out[i]
        return out


def seat_order(seed: bytes, seats: int) -> tuple[int, ...]:
    """The game seat of each participant, by join order, drawn by lot.

    ``seat_order(seed, n)[k]`` is the 0-based game seat of the participant who joined
    k-th (docs/setup-derivation.md section 3). In Pylos seat 0 is light, so this is
    also the colour draw.
    """
    return tuple(SeedStream(seed, "seats").shuffle(range(seats)))
