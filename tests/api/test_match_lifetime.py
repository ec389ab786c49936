"""Match lifetime: creator cancel, waiting-match expiry, the operator token, the create token.

Real servers on loopback ports with real database files, called through the
generated stubs; the last tests run ``ziggurat serve`` as a subprocess with the flags.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests import processes
from tests.servers import RunningServer, ServerProcess, pylos_config
from tests.store_faults import LockedDatabase
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import admin_service_pb2 as apb
from ziggurat.v1 import admin_service_pb2_grpc as agrpc
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as rpc
from ziggurat.wire.errors import error_reason

WAITING, FINISHED = match_pb2.MATCH_STATUS_WAITING, match_pb2.MATCH_STATUS_FINISHED
ABORTED = game_pb2.TERMINATION_ABORTED
ADMIN_TOKEN = "operator-secret-0123456789"
CREATE_TOKEN = "create-secret-0123456789"


def bearer(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


async def refused(call: Awaitable[Any], code: grpc.StatusCode, reason: str) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    assert (caught.value.code(), error_reason(caught.value)) == (code, reason), caught.value


@asynccontextmanager
async def serving(tmp_path: Path, **options: Any) -> AsyncIterator[tuple[ZigguratServer, grpc.aio.Channel]]:
    """An in-process server with these options, and a channel to it."""
    for name, token in (("admin_token_file", ADMIN_TOKEN), ("create_token_file", CREATE_TOKEN)):
        if options.get(name) is True:
            path = tmp_path / f"{name}.txt"
            path.write_text(token + "\n")
            options[name] = str(path)
    options.setdefault("db_path", str(tmp_path / "z.db"))
    server = ZigguratServer(ServeOptions(host="127.0.0.1", port=0, grace_seconds=0.2, **options))
    port = await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield server, channel
    finally:
        await server.stop()


async def status_of(stub: rpc.MatchServiceStub, match_id: str) -> match_pb2.Match:
    return (await stub.GetMatch(spb.GetMatchRequest(match_id=match_id))).match


async def wait_finished(stub: rpc.MatchServiceStub, match_id: str, timeout: float = 20.0) -> match_pb2.Match:
    deadline = time.monotonic() + timeout
    while (match := await status_of(stub, match_id)).status != FINISHED:
        assert time.monotonic() < deadline, f"match {match_id} did not finish in {timeout} s"
        await asyncio.sleep(0.05)
    return match


def assert_aborted(match: match_pb2.Match) -> None:
    assert match.status == FINISHED
    assert len(match.revealed_seed) == 64, "the seed is revealed at the end"


async def test_the_creator_cancels_its_waiting_match(server: RunningServer) -> None:
    async with grpc.aio.insecure_channel(server.address) as channel:
        stub = rpc.MatchServiceStub(channel)
        created = await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
        other = await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
        match_id = created.match.match_id
        assert created.creator_token and created.creator_token != other.creator_token
        joined = await stub.JoinMatch(spb.JoinMatchRequest(match_id=match_id, player_name="a"))
        cancel = spb.CancelMatchRequest(match_id=match_id)
        await refused(stub.CancelMatch(cancel), grpc.StatusCode.UNAUTHENTICATED, "MISSING_TOKEN")
        for wrong in (joined.token, other.creator_token, "forged"):
            await refused(
                stub.CancelMatch(cancel, metadata=bearer(wrong)),
                grpc.StatusCode.PERMISSION_DENIED,
                "BAD_TOKEN",
            )
        assert (await status_of(stub, match_id)).status == WAITING, "refusals change nothing"

        watch = stub.WatchMatch(spb.WatchMatchRequest(match_id=match_id))
        cancelled = await stub.CancelMatch(cancel, metadata=bearer(created.creator_token))
        assert_aborted(cancelled.match)
        events = [event async for response in watch for event in response.events]
        assert events[-1].match_ended.outcome.termination == ABORTED, "watchers see the end"
        assert await status_of(stub, match_id) == cancelled.match
        await refused(
            stub.CancelMatch(cancel, metadata=bearer(created.creator_token)),
            grpc.StatusCode.FAILED_PRECONDITION,
            "GAME_OVER",
        )
        # Its seats are still open, but a cancelled match can no longer be joined (not "full").
        await refused(
            stub.JoinMatch(spb.JoinMatchRequest(match_id=match_id, player_name="late")),
            grpc.StatusCode.FAILED_PRECONDITION,
            "GAME_OVER",
        )
        assert await status_of(stub, match_id) == cancelled.match


async def test_a_started_match_cannot_be_cancelled_by_its_creator(server: RunningServer) -> None:
    async with grpc.aio.insecure_channel(server.address) as channel:
        stub = rpc.MatchServiceStub(channel)
        created = await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
        for name in ("a", "b"):
            await stub.JoinMatch(spb.JoinMatchRequest(match_id=created.match.match_id, player_name=name))
        await refused(
            stub.CancelMatch(
                spb.CancelMatchRequest(match_id=created.match.match_id),
                metadata=bearer(created.creator_token),
            ),
            grpc.StatusCode.FAILED_PRECONDITION,
            "NOT_WAITING",
        )
        assert (await status_of(stub, created.match.match_id)).status == match_pb2.MATCH_STATUS_ACTIVE


async def test_idle_waiting_matches_expire_and_joins_keep_them_alive(tmp_path: Path) -> None:
    async with serving(tmp_path, waiting_ttl_s=1.0) as (server, channel):
        stub = rpc.MatchServiceStub(channel)
        idle = (await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))).match.match_id
        busy = (
            await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config(), seat_assignment=2))
        ).match
        kabaleo = game_pb2.GameConfig(game=game_pb2.GAME_KABALEO, seats=4)
        lobby = (await stub.CreateMatch(spb.CreateMatchRequest(config=kabaleo))).match.match_id
        started = time.monotonic()
        for index in range(3):  # a join every 0.6 s: never idle for a whole second
            await stub.JoinMatch(spb.JoinMatchRequest(match_id=lobby, player_name=f"p{index}"))
            await asyncio.sleep(0.6)
        assert_aborted(await wait_finished(stub, idle))
        assert time.monotonic() - started >= 0.9, "not before its idle time"
        joined = await stub.JoinMatch(spb.JoinMatchRequest(match_id=lobby, player_name="p3"))
        assert joined.match.status == match_pb2.MATCH_STATUS_ACTIVE, (
            "a lobby that kept filling did not expire"
        )
        assert_aborted(await wait_finished(stub, busy.match_id))
        assert set(server.manager.live) == {lobby}, "expired matches leave the live set"


async def test_cancelled_and_expired_matches_free_their_slot_and_stay_finished_after_restart(
    tmp_path: Path,
) -> None:
    async with serving(tmp_path, max_live_matches=2) as (_, channel):
        stub = rpc.MatchServiceStub(channel)
        first = await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
        await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
        await refused(
            stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config())),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "TOO_MANY_MATCHES",
        )
        await stub.CancelMatch(
            spb.CancelMatchRequest(match_id=first.match.match_id), metadata=bearer(first.creator_token)
        )
        third = await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
    # Restarted with a short idle time: the cancelled match stays finished, the others expire.
    async with serving(tmp_path, max_live_matches=2, waiting_ttl_s=0.5) as (server, channel):
        stub = rpc.MatchServiceStub(channel)
        assert (await status_of(stub, first.match.match_id)).status == FINISHED
        assert_aborted(await wait_finished(stub, third.match.match_id))
        listed = await stub.ListMatches(spb.ListMatchesRequest(status=WAITING))
        assert list(listed.matches) == [] and server.manager.live == {}
        for _ in range(2):
            await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))


async def test_the_operator_aborts_any_match_and_closes_creation(tmp_path: Path) -> None:
    async with serving(tmp_path, admin_token_file=True) as (_, channel):
        stub, admin = rpc.MatchServiceStub(channel), agrpc.AdminServiceStub(channel)
        created = await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
        match_id = created.match.match_id
        tokens = [
            (await stub.JoinMatch(spb.JoinMatchRequest(match_id=match_id, player_name=n))).token for n in "ab"
        ]
        abort = apb.AbortMatchRequest(match_id=match_id)
        await refused(admin.AbortMatch(abort), grpc.StatusCode.UNAUTHENTICATED, "MISSING_TOKEN")
        for wrong in (tokens[0], created.creator_token, ADMIN_TOKEN + "x"):
            await refused(
                admin.AbortMatch(abort, metadata=bearer(wrong)),
                grpc.StatusCode.PERMISSION_DENIED,
                "BAD_TOKEN",
            )
        assert (await status_of(stub, match_id)).status == match_pb2.MATCH_STATUS_ACTIVE

        play = stub.Play(metadata=bearer(tokens[0]))
        await play.write(spb.PlayRequest(match_id=match_id))
        aborted = await admin.AbortMatch(abort, metadata=bearer(ADMIN_TOKEN))
        assert_aborted(aborted.match)
        ended = [e async for response in play for e in response.events if e.HasField("match_ended")]
        assert ended[-1].match_ended.outcome.termination == ABORTED, "the seat's stream ends with the abort"
        await refused(
            admin.AbortMatch(abort, metadata=bearer(ADMIN_TOKEN)),
            grpc.StatusCode.FAILED_PRECONDITION,
            "GAME_OVER",
        )
        await refused(
            admin.AbortMatch(apb.AbortMatchRequest(match_id="nope"), metadata=bearer(ADMIN_TOKEN)),
            grpc.StatusCode.NOT_FOUND,
            "MATCH_NOT_FOUND",
        )

        await refused(
            admin.CloseMatchCreation(apb.CloseMatchCreationRequest()),
            grpc.StatusCode.UNAUTHENTICATED,
            "MISSING_TOKEN",
        )
        await admin.CloseMatchCreation(apb.CloseMatchCreationRequest(), metadata=bearer(ADMIN_TOKEN))
        await refused(
            stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config())),
            grpc.StatusCode.FAILED_PRECONDITION,
            "CREATION_CLOSED",
        )
        await admin.OpenMatchCreation(apb.OpenMatchCreationRequest(), metadata=bearer(ADMIN_TOKEN))
        await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))


async def test_without_an_admin_token_file_the_admin_service_is_disabled(server: RunningServer) -> None:
    async with grpc.aio.insecure_channel(server.address) as channel:
        admin = agrpc.AdminServiceStub(channel)
        for call in (
            admin.AbortMatch(apb.AbortMatchRequest(match_id="x"), metadata=bearer(ADMIN_TOKEN)),
            admin.CloseMatchCreation(apb.CloseMatchCreationRequest()),
        ):
            await refused(call, grpc.StatusCode.PERMISSION_DENIED, "ADMIN_DISABLED")


async def test_a_create_token_guards_match_creation(tmp_path: Path) -> None:
    async with serving(tmp_path, create_token_file=True, admin_token_file=True) as (_, channel):
        stub = rpc.MatchServiceStub(channel)
        request = spb.CreateMatchRequest(config=pylos_config())
        await refused(stub.CreateMatch(request), grpc.StatusCode.UNAUTHENTICATED, "MISSING_TOKEN")
        await refused(
            stub.CreateMatch(request, metadata=bearer("guess")),
            grpc.StatusCode.PERMISSION_DENIED,
            "BAD_TOKEN",
        )
        assert list((await stub.ListMatches(spb.ListMatchesRequest())).matches) == []
        made = await stub.CreateMatch(request, metadata=bearer(CREATE_TOKEN))
        by_operator = await stub.CreateMatch(request, metadata=bearer(ADMIN_TOKEN))
        # Everything else stays open to anyone: joining, watching, listing.
        await stub.JoinMatch(spb.JoinMatchRequest(match_id=made.match.match_id, player_name="guest"))
        assert len((await stub.ListMatches(spb.ListMatchesRequest())).matches) == 2
        assert by_operator.creator_token


def test_serve_flags_run_a_guarded_server(tmp_path: Path) -> None:
    """``ziggurat serve --admin-token-file --create-token-file --waiting-ttl`` as a real process."""
    (tmp_path / "admin").write_text(ADMIN_TOKEN)
    (tmp_path / "create").write_text(CREATE_TOKEN)
    extra = ["--admin-token-file", str(tmp_path / "admin"), "--create-token-file", str(tmp_path / "create")]
    process = ServerProcess(tmp_path / "z.db", [*extra, "--waiting-ttl", "1"])
    address = process.start()
    try:

        async def drive() -> None:
            async with grpc.aio.insecure_channel(address) as channel:
                stub, admin = rpc.MatchServiceStub(channel), agrpc.AdminServiceStub(channel)
                request = spb.CreateMatchRequest(config=pylos_config())
                await refused(stub.CreateMatch(request), grpc.StatusCode.UNAUTHENTICATED, "MISSING_TOKEN")
                expiring = await stub.CreateMatch(request, metadata=bearer(CREATE_TOKEN))
                active = await stub.CreateMatch(request, metadata=bearer(CREATE_TOKEN))
                for name in "ab":
                    await stub.JoinMatch(
                        spb.JoinMatchRequest(match_id=active.match.match_id, player_name=name)
                    )
                abort = apb.AbortMatchRequest(match_id=active.match.match_id)
                assert_aborted((await admin.AbortMatch(abort, metadata=bearer(ADMIN_TOKEN))).match)
                assert_aborted(await wait_finished(stub, expiring.match.match_id))

        asyncio.run(drive())
    finally:
        assert process.terminate() == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--admin-token-file", "/nonexistent/admin"], "cannot read the admin token file /nonexistent/admin"),
        (["--create-token-file", "SHORT"], "must hold a token of at least 16 characters"),
        (["--waiting-ttl", "0"], "--waiting-ttl must be a positive number of seconds"),
    ],
)
def test_serve_refuses_bad_lifetime_and_token_options_in_one_line(
    tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "SHORT").write_text("short")
    args = [str(tmp_path / "SHORT") if arg == "SHORT" else arg for arg in args]
    command = [sys.executable, "-m", "ziggurat.cli.main", "serve", "--port", "0", "--no-mdns"]
    result = processes.run(
        [*command, "--db", str(tmp_path / "z.db"), *args], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [f"error: {result.stderr.strip()[7:]}"]
    assert message in result.stderr


async def test_a_locked_database_delays_cancel_and_abort_without_losing_them(tmp_path: Path) -> None:
    """Store down: UNAVAILABLE, the matches stay as the log says; store back: both go through."""
    lock = LockedDatabase(tmp_path / "z.db")
    async with serving(tmp_path, admin_token_file=True) as (_, channel):
        stub, admin = rpc.MatchServiceStub(channel), agrpc.AdminServiceStub(channel)
        cancelled = await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
        aborted = await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
        cancel = stub.CancelMatch(
            spb.CancelMatchRequest(match_id=cancelled.match.match_id),
            metadata=bearer(cancelled.creator_token),
        )
        abort = apb.AbortMatchRequest(match_id=aborted.match.match_id)
        lock.on()
        try:
            await refused(cancel, grpc.StatusCode.UNAVAILABLE, "STORE_UNAVAILABLE")
            await refused(
                admin.AbortMatch(abort, metadata=bearer(ADMIN_TOKEN)),
                grpc.StatusCode.UNAVAILABLE,
                "STORE_UNAVAILABLE",
            )
            for made in (cancelled, aborted):
                assert (await status_of(stub, made.match.match_id)).status == WAITING, (
                    "memory follows the log"
                )
        finally:
            lock.off()
        again = spb.CancelMatchRequest(match_id=cancelled.match.match_id)
        assert_aborted((await stub.CancelMatch(again, metadata=bearer(cancelled.creator_token))).match)
        assert_aborted((await admin.AbortMatch(abort, metadata=bearer(ADMIN_TOKEN))).match)


async def test_a_locked_database_delays_expiry_until_the_store_is_back(tmp_path: Path) -> None:
    lock = LockedDatabase(tmp_path / "z.db")
    async with serving(tmp_path, waiting_ttl_s=0.3) as (server, channel):
        stub = rpc.MatchServiceStub(channel)
        server.manager.waiting_ttl_s = 3600.0  # not yet: the match must exist before the lock
        created = await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
        lock.on()
        try:
            server.manager.waiting_ttl_s = 0.3  # its idle time runs out while every sweep fails
            await asyncio.sleep(1.5)
            assert (await status_of(stub, created.match.match_id)).status == WAITING, "memory follows the log"
        finally:
            lock.off()
        assert_aborted(await wait_finished(stub, created.match.match_id))


async def test_one_address_cannot_keep_another_from_creating_matches(tmp_path: Path) -> None:
    from tests.hosting.test_gate import from_address

    async with serving(tmp_path, max_matches_per_address=3) as (server, channel):
        stub = rpc.MatchServiceStub(channel)
        port = server.port
        mine = [await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config())) for _ in range(3)]
        await stub.JoinMatch(spb.JoinMatchRequest(match_id=mine[0].match.match_id, player_name="a"))
        await refused(
            stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config())),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "TOO_MANY_MATCHES_CREATED",
        )
        assert server.manager.created_by("ipv4:127.0.0.1") == 3
        # Another client (127.0.0.2) still creates: the cap is the address's, not the server's.
        async with (
            from_address(port, "127.0.0.2") as elsewhere,
            grpc.aio.insecure_channel(elsewhere) as other,
        ):
            create = spb.CreateMatchRequest(config=pylos_config())
            theirs = await rpc.MatchServiceStub(other).CreateMatch(create)
            assert theirs.match.status == WAITING
            assert server.manager.created_by("ipv4:127.0.0.2") == 1
        # A match that ends frees its creator's slot (here: cancelled by its creator).
        await stub.CancelMatch(
            spb.CancelMatchRequest(match_id=mine[1].match.match_id), metadata=bearer(mine[1].creator_token)
        )
        again = await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
        assert again.match.status == WAITING
        assert server.manager.created_by("ipv4:127.0.0.1") == 3
        assert len(server.manager.live) == 4


async def test_the_create_rate_is_per_address_and_apart_from_the_move_rate(tmp_path: Path) -> None:
    # One match per 10 s for creation, and a seat rate so low that it would stop the second
    # create if creation still shared it: each rate counts only what it is for.
    async with serving(tmp_path, create_rate=0.1, rate_per_seat=0.1, burst_per_seat=1) as (_, channel):
        stub = rpc.MatchServiceStub(channel)
        created = await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
        await refused(
            stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config())),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "RATE_LIMITED",
        )
        match_id = created.match.match_id
        joins = [await stub.JoinMatch(spb.JoinMatchRequest(match_id=match_id, player_name=n)) for n in "ab"]
        public = (await stub.GetMatch(spb.GetMatchRequest(match_id=match_id))).match
        mover = next(joined.token for joined in joins if joined.seat == public.view.to_move)
        own = await stub.GetMatch(spb.GetMatchRequest(match_id=match_id), metadata=bearer(mover))
        view = own.match.view
        moved = await stub.SubmitMove(
            spb.SubmitMoveRequest(match_id=match_id, move=view.legal_moves[0]), metadata=bearer(mover)
        )
        assert moved.seq > 0, "a seat's first move is not held back by the create rate"
    async with serving(tmp_path, create_rate=0) as (_, channel):
        stub = rpc.MatchServiceStub(channel)
        for _ in range(5):  # 0: no create rate
            await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
