"""MatchService.ListGames and GameConfig.rule_options: a client learns and creates any game by name.

Driven as a client would: a real server on a loopback port, the generated stubs, and a match
created from nothing but what ListGames said.
"""

from __future__ import annotations

import grpc
import pytest

from ziggurat.rules.registry import GAMES
from ziggurat.v1 import game_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat_client import ZigguratClient
from ziggurat_client.errors import error_info

Code = grpc.StatusCode


def _reason(error: grpc.aio.AioRpcError) -> str:
    info = error_info(error.trailing_metadata())
    return info[0] if info else ""


async def test_list_games_names_every_registered_game_as_it_declares_itself(client: ZigguratClient) -> None:
    listed = (await client.stub.ListGames(spb.ListGamesRequest())).games
    assert [info.name for info in listed] == list(GAMES)
    by_name = {info.name: info for info in listed}
    pylos = by_name["pylos"]
    assert (pylos.game, pylos.title, pylos.min_seats, pylos.max_seats) == (game_pb2.GAME_PYLOS, "Pylos", 2, 2)
    assert not pylos.hidden_information and not pylos.private_moves
    assert [(o.key, list(o.choices), o.default_value) for o in pylos.options] == [
        ("variant", ["standard", "beginner", "advanced"], "standard"),
        ("max_moves", [], ""),
    ]
    kabaleo = by_name["kabaleo"]
    assert (kabaleo.min_seats, kabaleo.max_seats, kabaleo.hidden_information) == (2, 4, True)
    assert [o.key for o in kabaleo.options] == ["deal", "last_stack", "colours"]
    phantom = by_name["phantom-ttt"]
    assert (phantom.game, phantom.hidden_information, phantom.private_moves) == (
        game_pb2.GAME_PHANTOM_TIC_TAC_TOE,
        True,
        True,
    )
    assert not phantom.options
    assert all(option.description for info in listed for option in info.options)


@pytest.mark.parametrize("name", list(GAMES))
async def test_every_listed_game_can_be_created_from_what_list_games_said(
    client: ZigguratClient, name: str
) -> None:
    info = next(i for i in (await client.stub.ListGames(spb.ListGamesRequest())).games if i.name == name)
    options = {o.key: o.choices[-1] for o in info.options if o.choices}
    config = game_pb2.GameConfig(game=info.game, seats=info.min_seats, rule_options=options)
    created = await client.stub.CreateMatch(spb.CreateMatchRequest(config=config))
    got = (await client.stub.GetMatch(spb.GetMatchRequest(match_id=created.match.match_id))).match.config
    assert got.game == info.game and got.seats == info.min_seats
    if name == "pylos":  # a game with a typed message answers in it
        assert got.pylos.variant == game_pb2.PYLOS_VARIANT_ADVANCED and not got.rule_options
    if name == "kabaleo":
        assert got.kabaleo.deal == game_pb2.KABALEO_DEAL_EQUAL and got.kabaleo.last_stack


@pytest.mark.parametrize(
    ("config", "words"),
    [
        (
            game_pb2.GameConfig(
                game=game_pb2.GAME_PYLOS,
                seats=2,
                pylos=game_pb2.PylosConfig(variant=game_pb2.PYLOS_VARIANT_BEGINNER),
                rule_options={"variant": "advanced"},
            ),
            "given both",
        ),
        (
            game_pb2.GameConfig(game=game_pb2.GAME_PHANTOM_TIC_TAC_TOE, seats=2, rule_options={"size": "4"}),
            "no options",
        ),
        (
            game_pb2.GameConfig(game=game_pb2.GAME_KABALEO, seats=3, rule_options={"deal": "generous"}),
            "deal must be",
        ),
    ],
    ids=["typed-and-named", "undeclared-key", "bad-value"],
)
async def test_bad_rule_options_are_refused_and_create_nothing(
    client: ZigguratClient, config: game_pb2.GameConfig, words: str
) -> None:
    before = await client.stub.ListMatches(spb.ListMatchesRequest())
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await client.stub.CreateMatch(spb.CreateMatchRequest(config=config))
    assert refused.value.code() == Code.INVALID_ARGUMENT
    assert _reason(refused.value) == "INVALID_CONFIG"
    assert words in (refused.value.details() or "")
    after = await client.stub.ListMatches(spb.ListMatchesRequest())
    assert [m.match_id for m in after.matches] == [m.match_id for m in before.matches]
