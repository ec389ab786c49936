"""The TUI's create form: what it refuses before anything is sent to a server."""

from __future__ import annotations

import pytest

from ziggurat.tui.forms import FormError, MatchForm, parse_form
from ziggurat.v1 import game_pb2


@pytest.mark.parametrize("game", ["pylos", "kabaleo"])
def test_an_empty_or_zero_seat_count_is_refused_not_sent(game: str) -> None:
    for seats in ("", "0"):
        with pytest.raises(FormError, match="2 for Pylos, 2 to 4 for Kabaleo"):
            parse_form(MatchForm(game=game, seats=seats))


def test_a_seat_count_is_sent_as_typed() -> None:
    config, _ = parse_form(MatchForm(game="kabaleo", seats="3"))
    assert (config.game, config.seats) == (game_pb2.GAME_KABALEO, 3)
