"""Configuration and view translation between the rules and the wire."""

from __future__ import annotations

import pytest

from ziggurat.rules.core import InvalidConfigError, Outcome, Termination
from ziggurat.rules.registry import GAMES
from ziggurat.v1 import game_pb2 as pb
from ziggurat.wire.codec import config_from_proto, config_to_proto, outcome_to_proto, view_to_proto


@pytest.mark.parametrize(
    ("game", "seats", "options"),
    [
        ("pylos", 2, {}),
        ("pylos", 2, {"variant": "advanced", "max_moves": "80"}),
        ("kabaleo", 3, {"deal": "equal", "last_stack": "true"}),
        ("kabaleo", 4, {"colours": "RYGBOP"}),
    ],
)
def test_config_round_trip(game: str, seats: int, options: dict[str, str]) -> None:
    rules = GAMES[game]
    canonical = rules.config_options(rules.parse_config(options, seats))
    wire = config_to_proto(game, seats, canonical)
    back = config_from_proto(pb.GameConfig.FromString(wire.SerializeToString()))
    assert back[0] == game and back[1] == seats
    assert rules.config_options(rules.parse_config(back[2], seats)) == canonical


def test_unknown_game_and_mismatched_options_are_refused() -> None:
    with pytest.raises(InvalidConfigError):
        config_from_proto(pb.GameConfig(seats=2))
    with pytest.raises(InvalidConfigError):
        config_from_proto(pb.GameConfig(game=pb.GAME_PYLOS, kabaleo=pb.KabaleoConfig(last_stack=True)))


@pytest.mark.parametrize("game", [pb.GAME_PYLOS, pb.GAME_KABALEO])
def test_a_seat_count_of_zero_is_refused_not_read_as_two(game: pb.Game) -> None:
    with pytest.raises(InvalidConfigError, match="seats must be given"):
        config_from_proto(pb.GameConfig(game=game))


def test_outcome_is_one_based_on_the_wire() -> None:
    wire = outcome_to_proto(Outcome(Termination.NORMAL, (2, 1, 1)))
    assert list(wire.ranks) == [2, 1, 1]
    assert list(wire.winners) == [2, 3]
    assert wire.termination == pb.TERMINATION_NORMAL


def test_legal_moves_only_reach_the_seat_to_move() -> None:
    rules = GAMES["kabaleo"]
    state = rules.new_game(rules.parse_config({}, 3), b"\x01" * 32)
    to_move = rules.to_move(state)
    assert to_move == 0
    assert list(view_to_proto(rules.view(state, 0)).legal_moves) == rules.legal_moves(state)
    assert not view_to_proto(rules.view(state, 1)).legal_moves
    assert not view_to_proto(rules.view(state, None)).legal_moves
    spectator = view_to_proto(rules.view(state, None))
    assert list(spectator.kabaleo.objectives) == ["?", "?", "?"]
    assert spectator.viewer_seat == 0 and spectator.to_move == 1
