"""Time controls of a match: per-move limit, Fischer clock, timeout policy, disconnect grace."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ziggurat.rules.core import InvalidConfigError

POLICIES = ("forfeit", "random_move")
MAX_MS = 7 * 24 * 3600 * 1000


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
