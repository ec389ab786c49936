"""Remote bots (BotService), the illegal-move conduct limit, and aborting a match."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from tests import processes
from tests.servers import RunningServer, kabaleo_config, pylos_config
from ziggurat.bots import make_bot
from ziggurat.core.match import hash_token
from ziggurat.core.timecontrol import TimeControl
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.rules.core import Termination
from ziggurat.store.sqlite import Store
from ziggurat.v1 import bot_service_pb2 as bpb
from ziggurat.v1 import bot_service_pb2_grpc as bgrpc
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.verify import verify_record
from ziggurat.wire.codec import config_to_proto
from ziggurat.wire.errors import error_reason
from ziggurat_client import ZigguratClient, ZigguratError
from ziggurat_client.remote import RemoteBot


async def _wait_connected(client: ZigguratClient, name: str, timeout: float = 20) -> bpb.ConnectedBot:
    stub = bgrpc.BotServiceStub(client.channel)
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        bots = (await stub.ListBots(bpb.ListBotsRequest())).bots
        found = [b for b in bots if b.name == name]
        if found:
            return found[0]
        assert asyncio.get_running_loop().time() < deadline, f"bot {name} never connected"
        await asyncio.sleep(0.05)


def _assign_all(running: RunningServer, game: str, seats: int, bots: list[str]) -> str:
    """What an organiser does: create a match, take every seat, hand each seat to a bot."""
    server = running.server
    match = server.manager.create(game, seats, {}, TimeControl(), "chosen")
    for seat, name in enumerate(bots):
        token, _ = match.join(name, seat)
        assignment = bpb.Assignment(
            match_id=match.match_id, seat=seat + 1, token=token, config=config_to_proto(game, seats, {})
        )
        server.bots.assign(name, assignment, game)
    return match.match_id


async def test_remote_bots_play_assigned_seats(server: RunningServer, client: ZigguratClient) -> None:
    remotes = [
        RemoteBot(
            client, lambda _, i=i: make_bot("random", seed=i), name=f"remote{i}", token=f"t{i}", max_matches=2
        )
        for i in range(3)
    ]
    tasks = [asyncio.create_task(r.run()) for r in remotes]
    try:
        listed = [await _wait_connected(client, f"remote{i}") for i in range(3)]
        assert [b.max_matches for b in listed] == [2, 2, 2]
        pylos = _assign_all(server, "pylos", 2, ["remote0", "remote1"])
        kabaleo = _assign_all(server, "kabaleo", 3, ["remote0", "remote1", "remote2"])
        busy = await _wait_connected(client, "remote0")
        assert busy.active_matches == 2
        with pytest.raises(Exception) as full:
            _assign_all(server, "pylos", 2, ["remote0", "remote2"])
        assert getattr(full.value, "reason", None) == "BOT_BUSY"
        for match_id in (pylos, kabaleo):
            async for event in client.follow(match_id):
                last = event
            assert last.WhichOneof("kind") == "match_ended"
            assert verify_record(await client.record(match_id)).ok
        assert remotes[0].played[:2] == [pylos, kabaleo]
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def test_bot_names_belong_to_their_first_token(server: RunningServer, client: ZigguratClient) -> None:
    stub = bgrpc.BotServiceStub(client.channel)
    first = stub.ConnectBot(
        bpb.ConnectBotRequest(name="owned"), metadata=(("authorization", "Bearer right"),)
    )
    registered = await first.read()
    assert registered.registered.name == "owned"
    # other case, outer spaces, full-width letters, a look-alike in another script: the same name
    for name in ("Owned", " owned ", "\uff4f\uff57\uff4e\uff45\uff44", "OWNED"):
        for token, reason in (("wrong", "BAD_TOKEN"), ("", "MISSING_TOKEN")):
            call = stub.ConnectBot(
                bpb.ConnectBotRequest(name=name), metadata=(("authorization", f"Bearer {token}"),)
            )
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await call.read()
            assert error_reason(refused.value) == reason, name
    mixed = stub.ConnectBot(  # Latin with one Cyrillic letter: no honest name mixes scripts
        bpb.ConnectBotRequest(name="\u043ewned"), metadata=(("authorization", "Bearer other"),)
    )
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await mixed.read()
    assert error_reason(refused.value) == "BAD_NAME"
    posing = stub.ConnectBot(  # the server's own bots are "NAME (bot)": nobody else is
        bpb.ConnectBotRequest(name="greedy (b0t)"), metadata=(("authorization", "Bearer other"),)
    )
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await posing.read()
    assert error_reason(refused.value) == "BAD_NAME"
    # the token holder takes its name over at once (its old connection may be cut but not yet
    # noticed): the new stream is registered, the old one ends
    again = stub.ConnectBot(
        bpb.ConnectBotRequest(name=" Owned"), metadata=(("authorization", "Bearer right"),)
    )
    assert (await again.read()).registered.name == "Owned"
    assert await first.read() is grpc.aio.EOF
    again.cancel()


async def test_homoglyph_names_in_one_script_are_the_same_name(
    server: RunningServer, client: ZigguratClient
) -> None:
    stub = bgrpc.BotServiceStub(client.channel)
    latin = stub.ConnectBot(bpb.ConnectBotRequest(name="coco"), metadata=(("authorization", "Bearer a"),))
    await latin.read()
    cyrillic = stub.ConnectBot(  # "сосо": four Cyrillic letters that look like "coco"
        bpb.ConnectBotRequest(name="\u0441\u043e\u0441\u043e"), metadata=(("authorization", "Bearer b"),)
    )
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await cyrillic.read()
    assert error_reason(refused.value) == "BAD_TOKEN"
    latin.cancel()


# (a name registered first, look-alikes that must be refused as that name): the cases of issue 25
LOOK_ALIKES = [
    ("TEAM", ["\u0422\u0415\u0410\u041c", "\u03a4\u0395\u0391\u039c"]),  # Cyrillic, Greek capitals
    ("apple", ["\u0430\u0440\u0440\u04cf\u0435"]),  # all Cyrillic, with a palochka for the l
    ("alice", ["aIice", "a1ice", "\u1d00\u029f\u026a\u1d04\u1d07"]),  # capital I, digit 1, small capitals
    ("mybot1", ["rnybot1"]),
]


@pytest.mark.parametrize(("holder", "look_alikes"), LOOK_ALIKES)
async def test_look_alike_names_are_the_name_they_look_like(
    server: RunningServer, client: ZigguratClient, holder: str, look_alikes: list[str]
) -> None:
    stub = bgrpc.BotServiceStub(client.channel)
    first = stub.ConnectBot(bpb.ConnectBotRequest(name=holder), metadata=(("authorization", "Bearer owner"),))
    assert (await first.read()).registered.name == holder
    for name in look_alikes:
        call = stub.ConnectBot(
            bpb.ConnectBotRequest(name=name), metadata=(("authorization", "Bearer squat"),)
        )
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await call.read()
        assert error_reason(refused.value) == "BAD_TOKEN", name
    first.cancel()


async def test_names_stored_under_the_older_key_keep_their_holder(tmp_path: Path) -> None:
    """A database written when keys were case-folded before the look-alike mapping: on start
    the names are keyed again, so the holder of "mybot1" (stored as "mybot1") keeps it and
    "rnybot1" is its name."""
    db = tmp_path / "old.db"
    store = Store(db)
    store.register_bot("mybot1", hash_token("owner"), 1)
    store.register_bot("rnybot1", hash_token("later"), 2)  # a squat the old key let through
    store.close()
    running = ZigguratServer(ServeOptions(host="127.0.0.1", port=0, db_path=str(db), grace_seconds=0.5))
    port = await running.start()
    try:
        async with ZigguratClient(f"127.0.0.1:{port}") as client:
            stub = bgrpc.BotServiceStub(client.channel)
            for name, token, reason in (("rnybot1", "later", "BAD_TOKEN"), ("MYBOT1", "later", "BAD_TOKEN")):
                call = stub.ConnectBot(
                    bpb.ConnectBotRequest(name=name), metadata=(("authorization", f"Bearer {token}"),)
                )
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await call.read()
                assert error_reason(refused.value) == reason, name
            owner = stub.ConnectBot(
                bpb.ConnectBotRequest(name="rnybot1"), metadata=(("authorization", "Bearer owner"),)
            )
            assert (await owner.read()).registered.name == "rnybot1"
            owner.cancel()
    finally:
        await running.stop()


async def test_an_operator_pre_registers_a_name(server: RunningServer, client: ZigguratClient) -> None:
    server.server.bots.preregister("Reserved", hash_token("issued"))
    stub = bgrpc.BotServiceStub(client.channel)
    squatter = stub.ConnectBot(
        bpb.ConnectBotRequest(name="reserved"), metadata=(("authorization", "Bearer x"),)
    )
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await squatter.read()
    assert error_reason(refused.value) == "BAD_TOKEN"
    holder = stub.ConnectBot(
        bpb.ConnectBotRequest(name="reserved"), metadata=(("authorization", "Bearer issued"),)
    )
    assert (await holder.read()).registered.name == "reserved"
    holder.cancel()


async def test_new_names_are_rate_limited(server: RunningServer, client: ZigguratClient) -> None:
    stub = bgrpc.BotServiceStub(client.channel)
    reasons = []
    for i in range(40):
        call = stub.ConnectBot(
            bpb.ConnectBotRequest(name=f"flood-{i}"), metadata=(("authorization", "Bearer t"),)
        )
        try:
            await call.read()
            reasons.append("")
        except grpc.aio.AioRpcError as error:
            reasons.append(error_reason(error) or "")
        call.cancel()
    assert reasons[:10] == [""] * 10  # a burst of new names from one address
    assert reasons[-1] == "RATE_LIMITED" and reasons.count("RATE_LIMITED") >= 25
    # names already registered still connect
    known = stub.ConnectBot(bpb.ConnectBotRequest(name="flood-0"), metadata=(("authorization", "Bearer t"),))
    assert (await known.read()).registered.name == "flood-0"
    known.cancel()


async def test_the_bot_command_as_a_remote_bot(server: RunningServer, client: ZigguratClient) -> None:
    cli = [
        sys.executable,
        "-m",
        "ziggurat.cli.main",
        "bot",
        "greedy",
        "--server",
        server.address,
        "--remote",
        "--name",
        "cli-greedy",
        "--bot-token",
        "secret",
        "--max-matches",
        "2",
    ]
    proc = await processes.exec_async(*cli, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    local = RemoteBot(client, lambda _: make_bot("random", seed=3), name="local", token="t")
    task = asyncio.create_task(local.run())
    try:
        await _wait_connected(client, "cli-greedy")
        await _wait_connected(client, "local")
        match_id = _assign_all(server, "pylos", 2, ["cli-greedy", "local"])
        async for event in client.follow(match_id):
            last = event
        assert last.WhichOneof("kind") == "match_ended"
        record = await client.record(match_id)
        assert [s.player_name for s in record.seats] == ["cli-greedy", "local"]
        assert verify_record(record).ok
    finally:
        task.cancel()
        proc.terminate()
        await proc.wait()
    out = (await proc.stdout.read()).decode() if proc.stdout else ""
    assert "connected as remote bot 'cli-greedy'" in out


async def test_conduct_limit_forfeits_a_seat_that_keeps_sending_illegal_moves(
    server: RunningServer, client: ZigguratClient
) -> None:
    match = await client.create_match(pylos_config(), time_control=match_pb2.TimeControl(max_illegal_moves=2))
    handles = [await client.join(match.match_id, f"p{i}") for i in range(2)]
    light = next(h for h in handles if h.seat == 1)
    for attempt in range(2):
        with pytest.raises(ZigguratError) as refused:
            await client.submit_move(light, "4a1")
        assert refused.value.reason == "ILLEGAL_MOVE" and "forfeits" not in refused.value.message
        assert (await client.get_match(match.match_id)).status == match_pb2.MATCH_STATUS_ACTIVE, attempt
    with pytest.raises(ZigguratError) as third:
        await client.submit_move(light, "zz9")
    assert third.value.reason == "MALFORMED_MOVE" and "forfeits" in third.value.message
    summary = await client.get_match(match.match_id)
    assert summary.status == match_pb2.MATCH_STATUS_FINISHED
    assert summary.view.outcome.termination == game_pb2.TERMINATION_ILLEGAL_MOVE
    assert list(summary.view.outcome.ranks) == [2, 1]
    assert verify_record(await client.record(match.match_id)).ok


async def test_an_aborted_match_reveals_and_verifies(server: RunningServer, client: ZigguratClient) -> None:
    match = await client.create_match(kabaleo_config(2))
    handles = [await client.join(match.match_id, f"p{i}") for i in range(2)]
    mover = next(h for h in handles if h.seat == 1)
    mine = await client.get_match(match.match_id, mover)
    await client.submit_move(mover, mine.view.legal_moves[0])
    server.server.manager.get(match.match_id).abort()
    summary = await client.get_match(match.match_id)
    assert summary.status == match_pb2.MATCH_STATUS_FINISHED and summary.revealed_seed
    record = await client.record(match.match_id)
    assert record.outcome.termination == game_pb2.TERMINATION_ABORTED
    verdict = verify_record(record)
    assert verdict.ok and "aborted" in verdict.problem
    assert Termination.ABORTED.value == "aborted"
