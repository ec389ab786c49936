"""The Python client falls back to the public address when a match's learned owner address
stops answering (a worker restarted on another port, a whole server restarted): the route is
forgotten and the call goes to the address the client was opened with, which serves the match
(here: a single server) or names its owner now (``--workers``: tests/hosting/test_worker_restarts.py).
"""

from __future__ import annotations

import asyncio
import socket

import grpc
import pytest

from tests.servers import RunningServer, pylos_config
from ziggurat.bots import make_bot
from ziggurat.v1 import match_pb2
from ziggurat.verify import verify_record
from ziggurat_client import ZigguratClient, ZigguratError
from ziggurat_client.runner import Backoff, SeatRunner


def dead_address() -> str:
    """A loopback address nothing listens on (connections to it are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


async def test_a_unary_call_whose_owner_does_not_answer_is_retried_on_the_public_address(
    server: RunningServer,
) -> None:
    async with ZigguratClient(server.address) as client:
        match = await client.create_match(pylos_config())
        client.learn_route(match.match_id, dead_address())
        handle = await client.join(match.match_id, "one")
        assert match.match_id not in client.routes, "the dead route is forgotten"
        client.learn_route(match.match_id, dead_address())
        seen = await client.get_match(match.match_id, handle)
        assert seen.seats[handle.seat - 1].player_name == "one"
        assert match.match_id not in client.routes


async def test_seats_and_a_follower_with_a_dead_route_finish_through_the_public_address(
    server: RunningServer,
) -> None:
    async with ZigguratClient(server.address) as one, ZigguratClient(server.address) as two:
        match = await one.create_match(pylos_config())
        handles = [await one.join(match.match_id, "one"), await two.join(match.match_id, "two")]
        for client in (one, two):  # learnt before the owner moved: every stream starts there
            client.learn_route(match.match_id, dead_address())
        runners = [
            SeatRunner(c, h, make_bot("random", seed=h.seat), backoff=Backoff(initial=0.05, attempts=5))
            for c, h in zip((one, two), handles, strict=True)
        ]
        async with ZigguratClient(server.address) as watcher:
            watcher.learn_route(match.match_id, dead_address())

            async def follow() -> list[match_pb2.Event]:
                return [e async for e in watcher.follow(match.match_id, initial_backoff=0.05, attempts=5)]

            following = asyncio.create_task(follow())
            ended = await asyncio.wait_for(asyncio.gather(*(r.run() for r in runners)), 60)
            followed = await asyncio.wait_for(following, 30)
        record = await one.record(match.match_id)
    assert all(e.outcome.ranks for e in ended)
    assert verify_record(record).ok
    assert [e.seq for e in followed] == list(range(1, len(followed) + 1)), "every event once, in order"
    assert followed[-1].WhichOneof("kind") == "match_ended"
    assert all(r.history == [m.move for m in record.moves] for r in runners)


async def test_only_an_address_that_did_not_answer_is_forgotten() -> None:
    """A refusal carries the server's reason: the owner answered, its address is right."""
    client = ZigguratClient("127.0.0.1:1")  # never called: forget_route only reads the error
    owner = "127.0.0.1:2"
    answered = [
        ZigguratError(grpc.StatusCode.UNAVAILABLE, "SERVER_SHUTTING_DOWN", "draining"),
        ZigguratError(grpc.StatusCode.UNAVAILABLE, "STORE_UNAVAILABLE", "disk"),
        ZigguratError(grpc.StatusCode.FAILED_PRECONDITION, "NOT_YOUR_TURN", "wait"),
        ZigguratError(grpc.StatusCode.INTERNAL, None, "a bug"),
    ]
    silent = [
        ZigguratError(grpc.StatusCode.UNAVAILABLE, None, "failed to connect to all addresses"),
        ZigguratError(grpc.StatusCode.DEADLINE_EXCEEDED, None, "deadline exceeded"),
    ]
    for error in answered:
        client.learn_route("m", owner)
        assert not client.forget_route("m", owner, error) and client.routes["m"] == owner, error
    for error in silent:
        client.learn_route("m", owner)
        assert not client.forget_route("m", "127.0.0.1:3", error), "another route than the one that failed"
        assert client.forget_route("m", owner, error) and "m" not in client.routes, error
    await client.close()


@pytest.mark.parametrize("stream", ["watch", "follow"])
async def test_a_watch_with_a_dead_route_reads_the_finished_match_from_the_public_address(
    server: RunningServer, stream: str
) -> None:
    async with ZigguratClient(server.address) as client:
        match = await client.create_match(pylos_config(max_moves=6))
        handles = [await client.join(match.match_id, n) for n in ("a", "b")]
        await asyncio.gather(*(client.play(h, make_bot("random", seed=h.seat)) for h in handles))
        client.learn_route(match.match_id, dead_address())
        events = client.watch(match.match_id) if stream == "watch" else client.follow(match.match_id)
        seen = [e async for e in events]
    assert seen and seen[-1].WhichOneof("kind") == "match_ended"
