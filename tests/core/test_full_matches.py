"""Whole matches of every game and configuration, played through the real API."""

from __future__ import annotations

import asyncio

import pytest

from tests.servers import RunningServer, kabaleo_config, pylos_config, random_chooser
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.verify import verify_record
from ziggurat_client import ZigguratClient

CONFIGS = [
    pytest.param(pylos_config(game_pb2.PYLOS_VARIANT_STANDARD), id="pylos-standard"),
    pytest.param(pylos_config(game_pb2.PYLOS_VARIANT_BEGINNER), id="pylos-beginner"),
    pytest.param(pylos_config(game_pb2.PYLOS_VARIANT_ADVANCED), id="pylos-advanced"),
    pytest.param(kabaleo_config(2), id="kabaleo-2-random"),
    pytest.param(kabaleo_config(2, game_pb2.KABALEO_DEAL_EQUAL), id="kabaleo-2-equal"),
    pytest.param(kabaleo_config(3), id="kabaleo-3-random"),
    pytest.param(kabaleo_config(3, game_pb2.KABALEO_DEAL_EQUAL, last_stack=True), id="kabaleo-3-equal-last"),
    pytest.param(kabaleo_config(4), id="kabaleo-4-random"),
]


async def play_full_match(client: ZigguratClient, config: game_pb2.GameConfig, seed: int) -> tuple[str, list]:
    match = await client.create_match(config)
    handles = [await client.join(match.match_id, f"bot{i}") for i in range(config.seats)]
    assert sorted(h.seat for h in handles) == list(range(1, config.seats + 1))
    results = await asyncio.gather(*(client.play(h, random_chooser(seed + i)) for i, h in enumerate(handles)))
    return match.match_id, results


@pytest.mark.parametrize("config", CONFIGS)
async def test_full_match_through_the_api(server: RunningServer, client: ZigguratClient, config) -> None:
    match_id, ended = await play_full_match(client, config, seed=7)
    assert all(e is not None for e in ended)
    outcomes = {e.outcome.SerializeToString() for e in ended}
    assert len(outcomes) == 1, "every seat is told the same outcome"
    final = ended[0]
    assert len(final.outcome.ranks) == config.seats
    assert final.revealed_seed and len(bytes.fromhex(final.revealed_seed)) == 32
    summary = await client.get_match(match_id)
    assert summary.status == match_pb2.MATCH_STATUS_FINISHED
    assert summary.revealed_seed == final.revealed_seed
    record = await client.record(match_id)
    assert verify_record(record).ok
    if config.game == game_pb2.GAME_KABALEO:
        # Kabaleo ends after exactly (pieces per player × players) moves.
        assert len(record.moves) == {2: 24, 3: 30, 4: 36}[config.seats]
        assert "?" not in "".join(final.view.kabaleo.objectives), "the end reveals every objective"


async def test_spectator_sees_every_event_in_order(server: RunningServer, client: ZigguratClient) -> None:
    match = await client.create_match(kabaleo_config(3))
    seen: list[match_pb2.Event] = []

    async def spectate() -> None:
        async for event in client.watch(match.match_id):
            seen.append(event)

    spectator = asyncio.create_task(spectate())
    handles = [await client.join(match.match_id, f"bot{i}") for i in range(3)]
    await asyncio.gather(*(client.play(h, random_chooser(i)) for i, h in enumerate(handles)))
    await asyncio.wait_for(spectator, 10)
    assert [e.seq for e in seen] == list(range(1, len(seen) + 1))
    kinds = [e.WhichOneof("kind") for e in seen]
    assert kinds[0] == "match_created" and kinds[-1] == "match_ended"
    assert kinds.count("move_played") == 30
    for event in seen:
        if event.WhichOneof("kind") == "move_played" and not event.move_played.view.HasField("outcome"):
            view = event.move_played.view
            assert view.viewer_seat == 0
            assert set(view.kabaleo.objectives) == {"?"}
            assert not view.legal_moves
