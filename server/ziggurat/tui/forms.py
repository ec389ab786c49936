"""The create-match form as data: parsing and checking it, and one-line match summaries.

Why apart from the widgets: what a form means (seats, options, clocks in seconds)
is checked here, testable without a terminal; the server still has the last word
(``INVALID_CONFIG``) and its message is shown as is. Nothing here knows a game: the games, their
seat counts and their options are what ``MatchService.ListGames`` says (``GameInfo``), and the
options are sent by name (``GameConfig.rule_options``); the catalogues only lend words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ziggurat.tui import generic_board
from ziggurat.tui.i18n import t
from ziggurat.v1 import game_pb2, match_pb2

POLICIES = {"forfeit": match_pb2.TIMEOUT_POLICY_FORFEIT, "random": match_pb2.TIMEOUT_POLICY_RANDOM_MOVE}

KNOWN_OPTIONS: dict[tuple[str, str], tuple[str, dict[str, str]]] = {
    ("pylos", "variant"): ("form.variant", {v: f"variant.{v}" for v in ("standard", "beginner", "advanced")}),
    ("pylos", "max_moves"): ("form.maxMoves", {}),
    ("kabaleo", "deal"): ("form.deal", {d: f"deal.{d}" for d in ("random", "equal")}),
    ("kabaleo", "last_stack"): ("options.lastStack", {}),
    ("kabaleo", "colours"): ("form.colours", {}),
}
"""Words the catalogues have for some games' options, by (game name, option key): the label's
key and each choice's key. Only words: which options a game has is what ListGames says, and an
option missing here is shown by its key, with the server's description as its hint."""

KNOWN_HINTS = {("pylos", "max_moves"): "form.maxMovesHint", ("kabaleo", "colours"): "form.coloursHint"}
"""The translated hint (placeholder) of a known free-text option."""


def option_label(game: str, option: game_pb2.GameOptionInfo) -> str:
    """The label of an option's field: translated when the catalogue knows it, else its key."""
    known = KNOWN_OPTIONS.get((game, option.key))
    return t(known[0]) if known else option.key


def option_hint(game: str, option: game_pb2.GameOptionInfo) -> str:
    """What an option means, in one line: translated when known, else the server's description."""
    hint = KNOWN_HINTS.get((game, option.key))
    return t(hint) if hint else option.description


def choice_label(game: str, option: game_pb2.GameOptionInfo, value: str) -> str:
    """A choice's words: translated when known, "—" for "none" (""), else the value itself."""
    known = KNOWN_OPTIONS.get((game, option.key))
    if known and value in known[1]:
        return t(known[1][value])
    return value or "—"


def is_switch(option: game_pb2.GameOptionInfo) -> bool:
    """An option offered as a checkbox: its choices are exactly "false" and "true"."""
    return sorted(option.choices) == ["false", "true"]


def choices_of(option: game_pb2.GameOptionInfo) -> list[str]:
    """The values a choice field offers: the declared ones, after "" (none) when that is the default."""
    values = list(option.choices)
    return ["", *values] if option.default_value == "" and "" not in values else values


class FormError(ValueError):
    """A form field that cannot mean anything (the message names the field)."""


@dataclass(frozen=True, slots=True)
class MatchForm:
    """The raw values of the create form, as typed: the game by name, its options by key."""

    game: str = "pylos"
    seats: str = "2"
    options: tuple[tuple[str, str], ...] = ()
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


def rule_options(info: game_pb2.GameInfo, values: Mapping[str, str]) -> dict[str, str]:
    """The options to send: each declared option whose value is set and not its default (the
    server fills in the rest); a value the game refuses is the server's to say (INVALID_CONFIG)."""
    out = {}
    for option in info.options:
        value = values.get(option.key, "").strip()
        if value and value != option.default_value:
            out[option.key] = value
    return out


def parse_form(
    form: MatchForm, games: Mapping[str, game_pb2.GameInfo]
) -> tuple[game_pb2.GameConfig, match_pb2.TimeControl]:
    """The configuration and time control the form describes, for a game of ``games`` (by name,
    as ListGames lists them): its seats within the game's range, its options by name."""
    info = games.get(form.game)
    if info is None:
        raise FormError(t("form.unknownGame", game=form.game))
    seats = int(_number(form.seats, t("form.seats")))
    if not info.min_seats <= seats <= info.max_seats:  # the server would refuse it (INVALID_CONFIG)
        low, high = info.min_seats, info.max_seats
        raise FormError(t("form.seatsRange", field=t("form.seats"), min=low, max=high, game=info.title))
    config = game_pb2.GameConfig(
        game=info.game, seats=seats, rule_options=rule_options(info, dict(form.options))
    )
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
