"""InviteBot: only the creator invites, a bot's pending invitations are capped and expire, and an
organiser's seat never waits for them (docs/protocol.md, "Remote bots"). A real server on a
loopback port, real clients, real remote bots (the thin client's RemoteBot, or a raw ConnectBot
stream for a bot that never plays), a real database file read back after a restart."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests import processes
from tests.servers import RunningServer, ServerProcess
from ziggurat.bots import make_bot
from ziggurat.core.timecontrol import TimeControl
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import bot_service_pb2 as bpb
from ziggurat.v1 import bot_service_pb2_grpc as bgrpc
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.wire.codec import config_to_proto
from ziggurat_client import ZigguratClient, ZigguratError, game_config
from ziggurat_client.remote import RemoteBot

OPEN = match_pb2.SEAT_STATE_OPEN


@asynccontextmanager
async def _serving(tmp_path: Path, **options: float) -> AsyncIterator[RunningServer]:
    """An in-process server on 127.0.0.1 with these invitation options."""
    db = tmp_path / "ziggurat.db"
    server = ZigguratServer(
        ServeOptions(host="127.0.0.1", port=0, db_path=str(db), grace_seconds=0.5, **options)  # type: ignore[arg-type]
    )
    port = await server.start()
    try:
        yield RunningServer(server, f"127.0.0.1:{port}", db)
    finally:
        await server.stop()


@asynccontextmanager
async def _remote_bot(client: ZigguratClient, name: str, max_matches: int) -> AsyncIterator[RemoteBot]:
    """A remote bot that opens Play on every seat it is handed at once (and plays random moves)."""
    remote = RemoteBot(
        client,
        lambda _: make_bot("random", seed=1),
        name=name,
        token=f"{name}-token",
        max_matches=max_matches,
    )
    task = asyncio.create_task(remote.run())
    try:
        await _bot(client, name)
        yield remote
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _bot(client: ZigguratClient, name: str) -> bpb.ConnectedBot:
    for _ in range(400):
        found = [b for b in await client.list_bots() if b.name == name]
        if found:
            return found[0]
        await asyncio.sleep(0.05)
    raise AssertionError(f"bot {name} never connected")


async def _until(check: Callable[[], object], what: str, timeout: float = 20) -> None:
    """Poll an async check until it is true."""
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():  # type: ignore[misc]
        assert asyncio.get_running_loop().time() < deadline, what
        await asyncio.sleep(0.05)


def _all_open(match: match_pb2.Match) -> bool:
    return all(s.state == OPEN for s in match.seats)


async def _termination(client: ZigguratClient, match_id: str) -> int:
    """How the match ended, from its log (the last event a watcher reads)."""
    async for event in client.follow(match_id):
        last = event
    assert last.WhichOneof("kind") == "match_ended"
    return last.match_ended.outcome.termination


async def _refusal(call: object) -> tuple[str, str]:
    try:
        await call  # type: ignore[misc]
    except ZigguratError as error:
        return error.code.name, error.reason
    raise AssertionError("the call was not refused")


async def test_invite_needs_the_creator_token_of_the_match(tmp_path: Path) -> None:
    async with (
        _serving(tmp_path) as running,
        ZigguratClient(running.address) as creator,
        ZigguratClient(running.address) as stranger,
        _remote_bot(creator, "invitee", max_matches=4),
    ):
        match = await creator.create_match(game_config("pylos"))
        other = await stranger.create_match(game_config("pylos"))
        seat = await stranger.join(other.match_id, "someone")
        refusals = [
            await _refusal(stranger.invite_bot(match.match_id, "invitee")),  # no token at all
            await _refusal(  # the creator token of another match
                stranger.invite_bot(
                    match.match_id, "invitee", creator_token=stranger.creator_tokens[other.match_id]
                )
            ),
            await _refusal(stranger.invite_bot(match.match_id, "invitee", creator_token=seat.token)),
            await _refusal(stranger.invite_bot(match.match_id, "invitee", creator_token="forged-" * 4)),
        ]
        assert refusals == [
            ("UNAUTHENTICATED", "MISSING_TOKEN"),
            ("PERMISSION_DENIED", "BAD_TOKEN"),
            ("PERMISSION_DENIED", "BAD_TOKEN"),
            ("PERMISSION_DENIED", "BAD_TOKEN"),
        ]
        # Nothing changed: the match's seats are open and the bot was handed nothing.
        assert _all_open(await creator.get_match(match.match_id))
        assert (await _bot(creator, "invitee")).active_matches == 0
        # A match a tournament made (no creator token) cannot be invited into by anyone.
        organised = running.server.manager.create("pylos", 2, {}, TimeControl(), "lot")
        assert await _refusal(
            stranger.invite_bot(organised.match_id, "invitee", creator_token=seat.token)
        ) == ("PERMISSION_DENIED", "BAD_TOKEN")
        # The creator's own token (kept by the client that created the match, or passed) seats the bot.
        assert await stranger.invite_bot(
            match.match_id, "invitee", creator_token=creator.creator_tokens[match.match_id]
        ) in (1, 2)
        assert (await _bot(creator, "invitee")).active_matches == 1
        assert [s.player_name for s in (await creator.get_match(match.match_id)).seats].count("invitee") == 1


async def test_a_bots_pending_invitations_are_capped(tmp_path: Path) -> None:
    async with (
        _serving(tmp_path, max_pending_invitations=2) as running,
        ZigguratClient(running.address) as client,
        _remote_bot(client, "popular", max_matches=5),
    ):
        matches = [await client.create_match(game_config("pylos")) for _ in range(3)]
        first, second, third = (m.match_id for m in matches)
        await client.invite_bot(first, "popular")
        await client.invite_bot(second, "popular")
        # The bot opened Play on both seats at once, but neither match has started: both pending.
        assert await _refusal(client.invite_bot(third, "popular")) == (
            "RESOURCE_EXHAUSTED",
            "TOO_MANY_INVITATIONS",
        )
        assert _all_open(await client.get_match(third))
        assert (await _bot(client, "popular")).active_matches == 2
        # Once one is played (its match started and the bot's seat connected), it is pending no more.
        await client.join(first, "human")

        async def bot_connected() -> bool:
            seats = (await client.get_match(first)).seats
            return any(
                s.player_name == "popular" and s.state == match_pb2.SEAT_STATE_CONNECTED for s in seats
            )

        await _until(bot_connected, "the invited bot never opened its seat")
        assert await client.invite_bot(third, "popular") in (1, 2)
        assert (await _bot(client, "popular")).active_matches == 3


async def test_an_unplayed_invitation_expires_and_frees_the_bot(tmp_path: Path) -> None:
    async with (
        _serving(tmp_path, invitation_ttl_s=0.6) as running,
        ZigguratClient(running.address) as client,
        _remote_bot(client, "eager", max_matches=3),
    ):
        # A bot that is connected but never opens a stream on the seats it is handed.
        stub = bgrpc.BotServiceStub(client.channel)
        idle = stub.ConnectBot(
            bpb.ConnectBotRequest(name="idle", max_matches=3),
            metadata=(("authorization", "Bearer idle-token"),),
        )
        assert (await idle.read()).registered.name == "idle"
        never_started = await client.create_match(game_config("pylos"))  # the bot plays, nobody else comes
        started_without_it = await client.create_match(game_config("pylos"))  # the bot never comes
        played = await client.create_match(game_config("pylos"))  # both come: it must not expire
        await client.invite_bot(never_started.match_id, "eager")
        await client.invite_bot(started_without_it.match_id, "idle")
        assert (await idle.read()).assignment.match_id == started_without_it.match_id
        human = await client.join(started_without_it.match_id, "human")
        await client.invite_bot(played.match_id, "eager")
        await client.join(played.match_id, "human")
        assert [b.active_matches for b in (await _bot(client, "eager"), await _bot(client, "idle"))] == [2, 1]

        async def expired() -> bool:
            statuses = [
                (await client.get_match(m.match_id)).status for m in (never_started, started_without_it)
            ]
            return statuses == [match_pb2.MATCH_STATUS_FINISHED] * 2

        await _until(expired, "the unplayed invitations never expired")
        for match_id in (never_started.match_id, started_without_it.match_id):
            assert await _termination(client, match_id) == game_pb2.TERMINATION_ABORTED
            assert len((await client.get_match(match_id)).revealed_seed) == 64  # as CancelMatch

        async def released() -> bool:
            bots = (await _bot(client, "eager"), await _bot(client, "idle"))
            return [b.active_matches for b in bots] == [1, 0]

        await _until(released, "the bots were not released")
        await asyncio.sleep(1.2)  # twice the TTL: the played invitation stays
        assert (await client.get_match(played.match_id)).status == match_pb2.MATCH_STATUS_ACTIVE
        with pytest.raises(ZigguratError) as over:  # the human of the cancelled match is told so
            await client.submit_move(human, "anything")
        assert over.value.reason == "GAME_OVER"
        idle.cancel()
    # The log says the same after a restart: both cancellations were committed.
    async with _serving(tmp_path) as again, ZigguratClient(again.address) as client:
        for match_id in (never_started.match_id, started_without_it.match_id):
            assert await _termination(client, match_id) == game_pb2.TERMINATION_ABORTED


async def test_an_organisers_seat_withdraws_a_pending_invitation(tmp_path: Path) -> None:
    async with (
        _serving(tmp_path) as running,
        ZigguratClient(running.address) as client,
        _remote_bot(client, "solo", max_matches=1) as remote,
    ):
        invited = await client.create_match(game_config("pylos"))
        await client.invite_bot(invited.match_id, "solo")
        registry = running.server.bots
        connection = await registry.wait_for("solo", 5)
        assert connection.free == 1  # the pending invitation does not keep the organiser waiting
        # What a tournament does: create a match, take the seats, hand one to the bot.
        organised = running.server.manager.create("pylos", 2, {}, TimeControl(), "chosen")
        token, _ = organised.join("solo", 0)
        organised.join("other", 1)
        registry.assign(
            "solo",
            bpb.Assignment(
                match_id=organised.match_id, seat=1, token=token, config=config_to_proto("pylos", 2, {})
            ),
            "pylos",
        )
        assert await _termination(client, invited.match_id) == game_pb2.TERMINATION_ABORTED
        assert connection.active == {organised.match_id}
        # The bot now plays the organiser's seat; an invitation is refused while it does.
        assert await _refusal(
            client.invite_bot((await client.create_match(game_config("pylos"))).match_id, "solo")
        ) == ("FAILED_PRECONDITION", "BOT_BUSY")

        async def playing() -> bool:
            return organised.match_id in remote.played

        await _until(playing, "the bot never played the organiser's seat")


async def test_serve_flags_set_the_invitation_limits(tmp_path: Path) -> None:
    """``ziggurat serve --max-pending-invitations 1 --invitation-ttl 1`` as a real process."""
    server = ServerProcess(tmp_path / "z.db", ["--max-pending-invitations", "1", "--invitation-ttl", "1"])
    server.start()
    try:
        async with ZigguratClient(server.address) as client, _remote_bot(client, "flagged", max_matches=3):
            first = await client.create_match(game_config("pylos"))
            second = await client.create_match(game_config("pylos"))
            await client.invite_bot(first.match_id, "flagged")
            assert await _refusal(client.invite_bot(second.match_id, "flagged")) == (
                "RESOURCE_EXHAUSTED",
                "TOO_MANY_INVITATIONS",
            )

            async def expired() -> bool:
                return (await client.get_match(first.match_id)).status == match_pb2.MATCH_STATUS_FINISHED

            await _until(expired, "the invitation never expired", timeout=10)
            assert await client.invite_bot(second.match_id, "flagged") in (1, 2)
    finally:
        server.stop()
    for flags, message in [
        (["--invitation-ttl", "0"], "error: --invitation-ttl must be a positive number of seconds"),
        (["--max-pending-invitations", "0"], "error: --max-pending-invitations must be at least 1"),
    ]:
        refused = processes.run(
            [sys.executable, "-m", "ziggurat.cli.main", "serve", "--db", str(tmp_path / "x.db"), *flags],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert refused.returncode == 2 and refused.stderr.strip() == message, refused.stderr
