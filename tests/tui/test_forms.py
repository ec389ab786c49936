"""The TUI's create form: what it refuses before anything is sent to a server, and what it sends,
for the games as the server's registry declares them (the GameInfo that ListGames answers)."""

from __future__ import annotations

import pytest

from ziggurat.rules.registry import GAMES
from ziggurat.tui.forms import FormError, MatchForm, choices_of, is_switch, parse_form
from ziggurat.v1 import game_pb2
from ziggurat.wire.codec import game_info

LISTED = {name: game_info(rules) for name, rules in GAMES.items()}


@pytest.mark.parametrize(
    ("game", "words"), [("pylos", "2 to 2 for Pylos"), ("kabaleo", "2 to 4 for Kabaleo")]
)
def test_a_seat_count_outside_the_game_s_range_is_refused_not_sent(game: str, words: str) -> None:
    for seats in ("", "0", "5"):
        with pytest.raises(FormError, match=words):
            parse_form(MatchForm(game=game, seats=seats), LISTED)


def test_a_game_the_server_does_not_list_is_refused() -> None:
    with pytest.raises(FormError, match="does not offer chess"):
        parse_form(MatchForm(game="chess"), LISTED)


def test_a_seat_count_is_sent_as_typed() -> None:
    config, _ = parse_form(MatchForm(game="kabaleo", seats="3"), LISTED)
    assert (config.game, config.seats) == (game_pb2.GAME_KABALEO, 3)


def test_options_go_by_name_and_defaults_are_left_to_the_server() -> None:
    form = MatchForm(game="pylos", options=(("variant", "advanced"), ("max_moves", " 60 ")))
    config, _ = parse_form(form, LISTED)
    assert dict(config.rule_options) == {"variant": "advanced", "max_moves": "60"}
    assert not config.HasField("pylos"), "one way to say it: by name"
    form = MatchForm(
        game="kabaleo", seats="2", options=(("deal", "random"), ("last_stack", "false"), ("colours", ""))
    )
    assert dict(parse_form(form, LISTED)[0].rule_options) == {}


def test_a_game_with_no_options_is_created_with_its_seats_only() -> None:
    config, _ = parse_form(MatchForm(game="phantom-ttt", seats="2"), LISTED)
    assert (config.game, config.seats, dict(config.rule_options)) == (
        game_pb2.GAME_PHANTOM_TIC_TAC_TOE,
        2,
        {},
    )


def test_fields_follow_the_declaration() -> None:
    deal, last_stack, colours = LISTED["kabaleo"].options
    assert not is_switch(deal) and choices_of(deal) == ["random", "equal"]
    assert is_switch(last_stack)
    assert not colours.choices
    none_by_default = game_pb2.GameOptionInfo(key="k", choices=["a", "b"], default_value="")
    assert choices_of(none_by_default) == ["", "a", "b"], "leaving it out is a choice of its own"
