"""Time controls of a match: per-move limit, Fischer clock, timeout policy, disconnect grace."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from ziggurat.rules.core import InvalidConfigError

POLICIES = ("forfeit", "random_move")
MAX_MS = 7 * 24 * 3600 * 1000
# The per-move limit the server gives a match created with neither a move limit nor a clock
# (ziggurat serve --untimed-move-limit; 0 leaves such matches untimed): without it an untimed
# match whose seat never answers, or only sends illegal moves, never ends and holds its slot
# (and its creator's, --max-matches-per-address) for ever.
DEFAULT_UNTIMED_MOVE_LIMIT_S = 3600.0


@dataclass(frozen=True, slots=True)
class TimeControl:
    """All zero means untimed. Times are milliseconds."""

    per_move_ms: int = 0
    base_ms: int = 0
    increment_ms: int = 0
    on_timeout: str = "forfeit"
    disconnect_grace_ms: int = 0
    max_illegal_moves: int = 0  # 0 = no limit

    def __post_init__(self) -> None:
        """Refuse values that would make a match unplayable or overflow a clock."""
        if self.on_timeout not in POLICIES:
            raise InvalidConfigError(f"on_timeout must be one of {', '.join(POLICIES)}")
        if not 0 <= self.max_illegal_moves <= 1_000_000:
            raise InvalidConfigError("max_illegal_moves must be between 0 and 1000000")
        for name in ("per_move_ms", "base_ms", "increment_ms", "disconnect_grace_ms"):
            value = getattr(self, name)
            if not 0 <= value <= MAX_MS:
                raise InvalidConfigError(f"{name} must be between 0 and {MAX_MS}")
        if self.increment_ms and not self.base_ms:
            raise InvalidConfigError("increment_ms needs base_ms (a Fischer clock)")

    @property
    def timed(self) -> bool:
        """True when any limit applies to a move."""
        return bool(self.per_move_ms or self.base_ms)

    def with_default_move_limit(self, per_move_ms: int) -> TimeControl:
        """The same time control, or, when it limits no move (untimed), one with ``per_move_ms``
        as its per-move limit (0: unchanged). The limit is stored with the match, so its log and
        record say which limit its turns had.

        >>> TimeControl(disconnect_grace_ms=5000).with_default_move_limit(60_000).per_move_ms
        60000
        >>> TimeControl(base_ms=1000).with_default_move_limit(60_000).per_move_ms
        0
        """
        if self.timed or not per_move_ms:
            return self
        return replace(self, per_move_ms=per_move_ms)

    def to_dict(self) -> dict[str, int | str]:
        """Plain form for the database and records."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, int | str]) -> TimeControl:
        """Inverse of :meth:`to_dict`."""
        return cls(
            per_move_ms=int(data.get("per_move_ms", 0)),
            base_ms=int(data.get("base_ms", 0)),
            increment_ms=int(data.get("increment_ms", 0)),
            on_timeout=str(data.get("on_timeout", "forfeit")),
            disconnect_grace_ms=int(data.get("disconnect_grace_ms", 0)),
            max_illegal_moves=int(data.get("max_illegal_moves", 0)),
        )
