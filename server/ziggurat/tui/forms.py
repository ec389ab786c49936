"""The create-match form as data: parsing and checking it, and one-line match summaries.

Why apart from the widgets: what a form means (seats, options, clocks in seconds)
is checked here, testable without a terminal; the server still has the last word
(``INVALID_CONFIG``) and its message is shown as is.
"""

from __future__ import annotations

from dataclasses import dataclass

from ziggurat.tui import generic_board
from ziggurat.tui.i18n import t
from ziggurat.v1 import game_pb2, match_pb2

VARIANTS = {
    "standard": game_pb2.PYLOS_VARIANT_STANDARD,
    "beginner": game_pb2.PYLOS_VARIANT_BEGINNER,
    "advanced": game_pb2.PYLOS_VARIANT_ADVANCED,
}
DEALS = {"random": game_pb2.KABALEO_DEAL_RANDOM, "equal": game_pb2.KABALEO_DEAL_EQUAL}
POLICIES = {"forfeit": match_pb2.TIMEOUT_POLICY_FORFEIT, "random": match_pb2.TIMEOUT_POLICY_RANDOM_MOVE}


class FormError(ValueError):
    """A form field that cannot mean anything (the message names the field)."""


@dataclass(frozen=True, slots=True)
class MatchForm:
    """The raw values of the create form, as typed."""

    game: str = "pylos"
    seats: str = "2"
    variant: str = "standard"
    max_moves: str = "0"
    deal: str = "random"
    last_stack: bool = False
    per_move: str = "0"
    base: str = "0"
    increment: str = "0"
    on_timeout: str = "forfeit"


def _number(text: str, field: str) -> float:
    try:
        value = float(text or "0")
    except ValueError:
        raise FormError(t("form.notNumber", field=field, text=text)) from None
    if value < 0:
        raise FormError(t("form.negative", field=field))
    return value


def parse_form(form: MatchForm) -> tuple[game_pb2.GameConfig, match_pb2.TimeControl]:
    """The configuration and time control the form describes."""
    seats = int(_number(form.seats, t("form.seats")))
    if not seats:  # the server refuses 0 (INVALID_CONFIG): say it here, beside the field
        raise FormError(t("form.seatsRange", field=t("form.seats")))
    if form.game == "pylos":
        config = game_pb2.GameConfig(
            game=game_pb2.GAME_PYLOS,
            seats=seats,
            pylos=game_pb2.PylosConfig(
                variant=VARIANTS[form.variant], max_moves=int(_number(form.max_moves, t("form.maxMoves")))
            ),
        )
    elif form.game == "kabaleo":
        config = game_pb2.GameConfig(
            game=game_pb2.GAME_KABALEO,
            seats=seats,
            kabaleo=game_pb2.KabaleoConfig(deal=DEALS[form.deal], last_stack=form.last_stack),
        )
    else:
        raise FormError(f"unknown game {form.game!r}")
    time_control = match_pb2.TimeControl(
        per_move_ms=round(_number(form.per_move, t("form.perMove")) * 1000),
        base_ms=round(_number(form.base, t("form.base")) * 1000),
        increment_ms=round(_number(form.increment, t("form.increment")) * 1000),
        on_timeout=POLICIES[form.on_timeout],
    )
    return config, time_control


def describe_time_control(tc: match_pb2.TimeControl) -> str:
    """``untimed``, ``10s/move`` or ``5m+2s``."""
    parts = []
    if tc.per_move_ms:
        parts.append(t("clock.perMove", seconds=f"{tc.per_move_ms / 1000:g}"))
    if tc.base_ms:
        parts.append(f"{tc.base_ms / 60000:g}m+{tc.increment_ms / 1000:g}s")
    return " ".join(parts) or t("clock.untimed")


def describe_match(match: match_pb2.Match) -> str:
    """One line of the lobby: status, game, seats taken, players, clock, id."""
    game = generic_board.game_name(match.config.game) if match.config.game else "?"
    taken = [s for s in match.seats if s.state != match_pb2.SEAT_STATE_OPEN]
    names = ", ".join(s.player_name for s in taken) or t("lobby.nobody")
    words = (t("lobby.open"), t("lobby.running"))
    status = words[match.status != match_pb2.MATCH_STATUS_WAITING].ljust(max(map(len, words)))
    seats = t("lobby.seats", taken=len(taken), total=match.config.seats)
    clock = describe_time_control(match.time_control)
    return f"{status} {game:<7} {seats}  {clock:<10} {names}  [{match.match_id}]"
