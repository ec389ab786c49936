"""Bad input gets a clear error and changes nothing: every refusal, through the real server.

Each test drives the real in-process server through the real client. For every
refusal it checks the status code and the ErrorInfo reason, that the match as a
spectator and as the seat see it is byte-for-byte unchanged, and that the match
can still be played to its end afterwards.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.servers import RunningServer, kabaleo_config, play_items, pylos_config
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.wire.errors import error_reason
from ziggurat_client import ZigguratClient, ZigguratError
from ziggurat_client.client import MatchHandle

PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION
INVALID = grpc.StatusCode.INVALID_ARGUMENT

# --------------------------------------------------------------------------- helpers


async def expect_error(call: Awaitable[Any], code: grpc.StatusCode, reason: str | None) -> ZigguratError:
    """Await ``call``, which must be refused with ``code`` and ErrorInfo ``reason``."""
    with pytest.raises(ZigguratError) as caught:
        await call
    error = caught.value
    assert error.code == code, f"expected {code.name} {reason}, got {error}"
    assert error.reason == reason, f"expected {code.name} {reason}, got {error}"
    assert error.message, "every refusal explains itself"
    return error


async def snapshot(client: ZigguratClient, match_id: str, handles: list[MatchHandle]) -> list[bytes]:
    """The match as a spectator and as every seat sees it (GetMatch reads change nothing)."""
    views = [await client.get_match(match_id)]
    views += [await client.get_match(match_id, h) for h in handles]
    return [v.SerializeToString(deterministic=True) for v in views]


class Guard:
    """Checks that a refusal changed nothing: same last_seq, same position, same bytes."""

    def __init__(self, client: ZigguratClient, match_id: str, handles: list[MatchHandle]) -> None:
        self.client = client
        self.match_id = match_id
        self.handles = handles
        self.refusals = 0

    async def refused(self, call: Awaitable[Any], code: grpc.StatusCode, reason: str | None) -> ZigguratError:
        before = await snapshot(self.client, self.match_id, self.handles)
        spectator = await self.client.get_match(self.match_id)
        error = await expect_error(call, code, reason)
        after_spectator = await self.client.get_match(self.match_id)
        assert after_spectator.last_seq == spectator.last_seq, f"{reason} appended an event"
        assert after_spectator.view.position == spectator.view.position, f"{reason} changed the game"
        assert await snapshot(self.client, self.match_id, self.handles) == before, (
            f"{reason} changed the match"
        )
        self.refusals += 1
        return error


async def started_match(
    client: ZigguratClient, config: game_pb2.GameConfig, **create: Any
) -> tuple[str, list[MatchHandle]]:
    """A match with every seat taken; handles in seat order (index 0 is seat 1)."""
    match = await client.create_match(config, **create)
    handles = [await client.join(match.match_id, f"bot{i}") for i in range(config.seats)]
    return match.match_id, sorted(handles, key=lambda h: h.seat)


async def turn(client: ZigguratClient, match_id: str, handles: list[MatchHandle]) -> tuple[MatchHandle, Any]:
    """(handle of the seat to move, that seat's view)."""
    public = await client.get_match(match_id)
    assert public.status == match_pb2.MATCH_STATUS_ACTIVE
    mover = handles[public.view.to_move - 1]
    view = (await client.get_match(match_id, mover)).view
    assert view.legal_moves, "the seat to move sees its legal moves"
    return mover, view


async def play_to_end(
    client: ZigguratClient, match_id: str, handles: list[MatchHandle], seed: int = 1
) -> match_pb2.Match:
    """Play random legal moves with SubmitMove until the match is over."""
    rng = random.Random(seed)
    for _ in range(2000):
        public = await client.get_match(match_id)
        if public.status == match_pb2.MATCH_STATUS_FINISHED:
            return public
        mover, view = await turn(client, match_id, handles)
        move = rng.choice(list(view.legal_moves))
        response = await client.submit_move(mover, move, ply=view.ply)
        assert response.move == move
    raise AssertionError("the match did not end")


def illegal_candidates(game: int, view: Any) -> list[str]:
    """Well-formed moves that are not legal for the seat to move in ``view``."""
    legal = set(view.legal_moves)
    if game == game_pb2.GAME_KABALEO:
        shaped = [f"{c}{n}" for c in "RYGBOP" for n in (1, 2, 5, 16, 17, 20, 24, 25, 99, 12345)]
    else:
        places = [
            f"{lvl}{c}{r}"
            for lvl, size in ((1, 4), (2, 3), (3, 2), (4, 1))
            for c in "abcd"[:size]
            for r in range(1, size + 1)
        ]
        shaped = [*places, "1a1-2a1", "1a1-4a1", "1a1x1a2", "2a1x1a1x1b1", "1d4-1a1"]
    return [m for m in shaped if m not in legal]


MALFORMED_PYLOS = [
    "",
    "a",
    "1e1",
    "5a1",
    "1a5",
    "2d1",
    "3c1",
    "3a3",
    "4a2",
    "4b1",
    "1A1",
    "1a1-",
    "-1a1",
    "1a1x",
    "1a1 ",
    " 1a1",
    "1a1x1b1x1c1x1d1",
    "1a1\x00",
    "１a1",
    "B7",
    "1a1;drop table",
]
MALFORMED_KABALEO = [
    "",
    "B",
    "7",
    "B0",
    "B07",
    "b7",
    "BB7",
    "B7 ",
    " B7",
    "B-1",
    "B+7",
    "X7",
    "B７",
    "B7\n",
    "1a1",
    "B1.0",
    "B\x007",
]

# Messages a Kabaleo refusal may carry: each from public facts and the caller's own input.
KABALEO_TEMPLATES = [
    re.compile(
        r"'.*' is not a Kabaleo move: a colour letter of RYGBOP then a stack number, like 'B7'", re.DOTALL
    ),
    re.compile(r"no (red|yellow|green|blue|orange|pink) piece in your hand"),
    re.compile(r"stack \d+ does not exist \(there are \d+\)"),
    re.compile(r"stack \d+ is a bare (red|yellow|green|blue|orange|pink) base"),
    re.compile(r"last_stack: stack \d+ was played last"),
    re.compile(r"it is not seat \d+'s turn"),
    re.compile(r"the move was meant for ply \d+; it is ply \d+"),
    re.compile(r"a move is at most 64 characters"),
    re.compile(r"the match is over"),
]

# --------------------------------------------------------------------------- moves


@pytest.mark.parametrize(
    ("config", "malformed"),
    [
        pytest.param(pylos_config(), MALFORMED_PYLOS, id="pylos"),
        pytest.param(kabaleo_config(2), MALFORMED_KABALEO, id="kabaleo-2"),
        pytest.param(
            kabaleo_config(3, game_pb2.KABALEO_DEAL_EQUAL, last_stack=True),
            MALFORMED_KABALEO,
            id="kabaleo-3-last-stack",
        ),
    ],
)
async def test_bad_moves_are_refused_and_change_nothing(
    server: RunningServer, client: ZigguratClient, config: game_pb2.GameConfig, malformed: list[str]
) -> None:
    match_id, handles = await started_match(client, config)
    guard = Guard(client, match_id, handles)
    rng = random.Random(3)
    for ply in range(4):
        mover, view = await turn(client, match_id, handles)
        assert view.ply == ply
        others = [h for h in handles if h.seat != mover.seat]
        legal = list(view.legal_moves)
        # Malformed notation: INVALID_ARGUMENT MALFORMED_MOVE.
        for text in malformed:
            await guard.refused(client.submit_move(mover, text), INVALID, "MALFORMED_MOVE")
        # Well-formed but illegal here: FAILED_PRECONDITION ILLEGAL_MOVE.
        illegal = illegal_candidates(config.game, view)
        assert illegal
        for text in rng.sample(illegal, min(len(illegal), 16)):
            await guard.refused(client.submit_move(mover, text), PRECONDITION, "ILLEGAL_MOVE")
        # A legal move, but from a seat whose turn it is not: NOT_YOUR_TURN (even with the right ply).
        for other in others:
            await guard.refused(client.submit_move(other, legal[0]), PRECONDITION, "NOT_YOUR_TURN")
            await guard.refused(client.submit_move(other, legal[0], ply=ply), PRECONDITION, "NOT_YOUR_TURN")
        # A legal move meant for another ply: STALE_PLY.
        for stale in {ply + 1, ply + 2, 1000} | ({ply - 1, 0} if ply else set()):
            await guard.refused(client.submit_move(mover, legal[0], ply=stale), PRECONDITION, "STALE_PLY")
        # Move text longer than any notation: MALFORMED_MOVE before the rules look at it.
        for length in (65, 1000, 60_000):
            error = await guard.refused(client.submit_move(mover, "1" * length), INVALID, "MALFORMED_MOVE")
            assert len(error.message) < 200, "the message does not echo the whole input"
        # Then a legal move (with the right ply guard when there can be one) is accepted.
        move = rng.choice(legal)
        response = await client.submit_move(mover, move, ply=ply)
        assert response.move == move
    final = await play_to_end(client, match_id, handles)
    assert final.view.HasField("outcome")
    assert guard.refusals > 80


async def test_move_after_the_end_is_game_over(server: RunningServer, client: ZigguratClient) -> None:
    match_id, handles = await started_match(client, kabaleo_config(2))
    await play_to_end(client, match_id, handles)
    guard = Guard(client, match_id, handles)
    for handle in handles:
        for text in ("R1", "B7", "zz", "O16"):
            await guard.refused(client.submit_move(handle, text), PRECONDITION, "GAME_OVER")
        await guard.refused(client.resign(handle), PRECONDITION, "GAME_OVER")
    # The record of the finished match is unaffected by the refused moves.
    record = await client.record(match_id)
    assert len(record.moves) == 24


async def test_pylos_after_resignation_is_game_over(server: RunningServer, client: ZigguratClient) -> None:
    match_id, handles = await started_match(client, pylos_config())
    await client.resign(handles[0])
    guard = Guard(client, match_id, handles)
    await guard.refused(client.submit_move(handles[1], "1a1"), PRECONDITION, "GAME_OVER")
    await guard.refused(client.submit_move(handles[0], "1a1"), PRECONDITION, "GAME_OVER")
    await guard.refused(client.resign(handles[1]), PRECONDITION, "GAME_OVER")


async def test_move_before_the_start_is_not_started(server: RunningServer, client: ZigguratClient) -> None:
    match = await client.create_match(kabaleo_config(3))
    first = await client.join(match.match_id, "early")
    guard = Guard(client, match.match_id, [first])
    for text in ("R1", "B7", "garbage"):
        await guard.refused(client.submit_move(first, text), PRECONDITION, "NOT_STARTED")
    await guard.refused(client.resign(first), PRECONDITION, "NOT_STARTED")
    waiting = await client.get_match(match.match_id)
    assert waiting.status == match_pb2.MATCH_STATUS_WAITING
    await guard.refused(client.record(match.match_id), PRECONDITION, "NOT_FINISHED")
    rest = [await client.join(match.match_id, f"late{i}") for i in range(2)]
    handles = sorted([first, *rest], key=lambda h: h.seat)
    final = await play_to_end(client, match.match_id, handles)
    assert final.status == match_pb2.MATCH_STATUS_FINISHED


async def test_unknown_match_is_not_found(server: RunningServer, client: ZigguratClient) -> None:
    match_id, handles = await started_match(client, pylos_config())
    before = await snapshot(client, match_id, handles)
    not_found = grpc.StatusCode.NOT_FOUND
    for unknown in (
        "",
        "0000000000000000",
        match_id[:-1],
        match_id + "0",
        match_id.upper(),
        "x" * 10_000,
        "'; DROP TABLE matches; --",
        "\x00",
    ):
        stranger = MatchHandle(unknown, 1, handles[0].token)  # a real token, but of another match
        error = await expect_error(client.get_match(unknown), not_found, "MATCH_NOT_FOUND")
        assert len(error.message) < 200
        await expect_error(client.submit_move(stranger, "1a1"), not_found, "MATCH_NOT_FOUND")
        await expect_error(client.resign(stranger), not_found, "MATCH_NOT_FOUND")
        await expect_error(client.join(unknown, "bot"), not_found, "MATCH_NOT_FOUND")
        await expect_error(client.record(unknown), not_found, "MATCH_NOT_FOUND")
        with pytest.raises(ZigguratError) as caught:
            async for _ in client.watch(unknown):
                pass
        assert (caught.value.code, caught.value.reason) == (not_found, "MATCH_NOT_FOUND")
    assert await snapshot(client, match_id, handles) == before
    await play_to_end(client, match_id, handles)


# --------------------------------------------------------------------------- configurations


@pytest.mark.parametrize(
    "config",
    [
        pytest.param(kabaleo_config(4, game_pb2.KABALEO_DEAL_EQUAL), id="kabaleo-equal-4"),
        pytest.param(game_pb2.GameConfig(game=game_pb2.GAME_PYLOS, seats=3), id="pylos-3"),
        pytest.param(game_pb2.GameConfig(game=game_pb2.GAME_PYLOS, seats=1), id="pylos-1"),
        pytest.param(game_pb2.GameConfig(seats=2), id="game-unspecified"),
        pytest.param(game_pb2.GameConfig(game=99, seats=2), id="game-unknown"),
        pytest.param(kabaleo_config(5), id="kabaleo-5"),
        pytest.param(game_pb2.GameConfig(game=game_pb2.GAME_KABALEO), id="kabaleo-seats-0"),
        pytest.param(game_pb2.GameConfig(game=game_pb2.GAME_PYLOS), id="pylos-seats-0"),
        pytest.param(kabaleo_config(1), id="kabaleo-1"),
        pytest.param(game_pb2.GameConfig(game=game_pb2.GAME_KABALEO, seats=4_000_000_000), id="kabaleo-huge"),
        pytest.param(
            game_pb2.GameConfig(game=game_pb2.GAME_KABALEO, seats=2, pylos=game_pb2.PylosConfig()),
            id="kabaleo-with-pylos-options",
        ),
        pytest.param(
            game_pb2.GameConfig(
                game=game_pb2.GAME_KABALEO, seats=2, kabaleo=game_pb2.KabaleoConfig(colours="RRGB")
            ),
            id="colours-repeat",
        ),
        pytest.param(
            game_pb2.GameConfig(
                game=game_pb2.GAME_KABALEO, seats=2, kabaleo=game_pb2.KabaleoConfig(colours="RGBX")
            ),
            id="colours-unknown",
        ),
        pytest.param(
            game_pb2.GameConfig(
                game=game_pb2.GAME_KABALEO, seats=2, kabaleo=game_pb2.KabaleoConfig(colours="RGB")
            ),
            id="colours-too-few",
        ),
        pytest.param(
            game_pb2.GameConfig(game=game_pb2.GAME_KABALEO, seats=2, kabaleo=game_pb2.KabaleoConfig(deal=7)),
            id="deal-unknown",
        ),
        pytest.param(
            game_pb2.GameConfig(game=game_pb2.GAME_PYLOS, seats=2, pylos=game_pb2.PylosConfig(variant=9)),
            id="variant-unknown",
        ),
    ],
)
async def test_invalid_config_is_refused(
    server: RunningServer, client: ZigguratClient, config: game_pb2.GameConfig
) -> None:
    before = await client.list_matches()
    await expect_error(client.create_match(config), INVALID, "INVALID_CONFIG")
    assert await client.list_matches() == before, "a refused configuration creates no match"


@pytest.mark.parametrize(
    "time_control",
    [
        pytest.param(match_pb2.TimeControl(increment_ms=1000), id="increment-without-base"),
        pytest.param(match_pb2.TimeControl(on_timeout=42), id="unknown-policy"),
        pytest.param(match_pb2.TimeControl(per_move_ms=4_000_000_000), id="per-move-too-long"),
    ],
)
async def test_invalid_time_control_is_refused(
    server: RunningServer, client: ZigguratClient, time_control: match_pb2.TimeControl
) -> None:
    await expect_error(
        client.create_match(pylos_config(), time_control=time_control), INVALID, "INVALID_CONFIG"
    )
    assert await client.list_matches() == []


async def test_unknown_seat_assignment_is_refused(server: RunningServer, client: ZigguratClient) -> None:
    for assignment in (3, 99):
        await expect_error(
            client.create_match(pylos_config(), seat_assignment=assignment), INVALID, "INVALID_CONFIG"
        )
    assert await client.list_matches() == []


# --------------------------------------------------------------------------- seats and names


async def test_joining_a_full_match(server: RunningServer, client: ZigguratClient) -> None:
    match_id, handles = await started_match(client, pylos_config())
    guard = Guard(client, match_id, handles)
    await guard.refused(client.join(match_id, "latecomer"), PRECONDITION, "MATCH_FULL")
    chosen = await client.create_match(kabaleo_config(2), seat_assignment=match_pb2.SEAT_ASSIGNMENT_CHOSEN)
    chosen_handles = [await client.join(chosen.match_id, "a", 2), await client.join(chosen.match_id, "b")]
    assert [h.seat for h in chosen_handles] == [2, 1]
    chosen_guard = Guard(client, chosen.match_id, chosen_handles)
    await chosen_guard.refused(client.join(chosen.match_id, "c", 1), PRECONDITION, "MATCH_FULL")
    await chosen_guard.refused(client.join(chosen.match_id, "c"), PRECONDITION, "MATCH_FULL")
    await play_to_end(client, match_id, handles)
    await guard.refused(client.join(match_id, "after the end"), PRECONDITION, "GAME_OVER")


async def test_chosen_seat_taken_and_out_of_range(server: RunningServer, client: ZigguratClient) -> None:
    match = await client.create_match(kabaleo_config(3), seat_assignment=match_pb2.SEAT_ASSIGNMENT_CHOSEN)
    second = await client.join(match.match_id, "second", 2)
    assert second.seat == 2
    guard = Guard(client, match.match_id, [second])
    error = await guard.refused(client.join(match.match_id, "again", 2), PRECONDITION, "SEAT_TAKEN")
    assert "2" in error.message
    for seat in (4, 5, 1000, 2**32 - 1):
        await guard.refused(client.join(match.match_id, "far", seat), INVALID, "BAD_SEAT")
    seats = (await client.get_match(match.match_id)).seats
    assert [s.state for s in seats] == [
        match_pb2.SEAT_STATE_OPEN,
        match_pb2.SEAT_STATE_JOINED,
        match_pb2.SEAT_STATE_OPEN,
    ]
    first = await client.join(match.match_id, "first")  # lowest free seat
    third = await client.join(match.match_id, "third", 3)
    assert (first.seat, third.seat) == (1, 3)
    await play_to_end(client, match.match_id, [first, second, third])


async def test_naming_a_seat_in_a_lot_match(server: RunningServer, client: ZigguratClient) -> None:
    for assignment in (match_pb2.SEAT_ASSIGNMENT_LOT, match_pb2.SEAT_ASSIGNMENT_UNSPECIFIED):
        match = await client.create_match(pylos_config(), seat_assignment=assignment)
        guard = Guard(client, match.match_id, [])
        for seat in (1, 2, 3):
            await guard.refused(client.join(match.match_id, "picky", seat), INVALID, "SEAT_BY_LOT")
        handles = sorted(
            [await client.join(match.match_id, f"bot{i}") for i in range(2)], key=lambda h: h.seat
        )
        await play_to_end(client, match.match_id, handles)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("", id="empty"),
        pytest.param("   ", id="blank"),
        pytest.param("x" * 65, id="too-long"),
        pytest.param("é" * 65, id="too-long-unicode"),
        pytest.param("x" * 100_000, id="very-long"),
        pytest.param("bad\x00name", id="nul"),
        pytest.param("bad\nname", id="newline"),
        pytest.param("bad\tname", id="tab"),
        pytest.param("\x1b[31mred\x1b[0m", id="ansi-escape"),
        pytest.param("bad\x7fname", id="del"),
        pytest.param("evil\u202ename", id="bidi-override"),
        pytest.param("zero\u200bwidth", id="zero-width"),
    ],
)
async def test_bad_player_name(server: RunningServer, client: ZigguratClient, name: str) -> None:
    match = await client.create_match(pylos_config())
    guard = Guard(client, match.match_id, [])
    if len(name.encode()) > 64 * 1024:
        await guard.refused(client.join(match.match_id, name), grpc.StatusCode.RESOURCE_EXHAUSTED, None)
    else:
        error = await guard.refused(client.join(match.match_id, name), INVALID, "BAD_NAME")
        assert not name.strip() or name not in error.message, "the message does not echo the name"
    handles = sorted([await client.join(match.match_id, f"bot{i}") for i in range(2)], key=lambda h: h.seat)
    public = await client.get_match(match.match_id)
    assert sorted(s.player_name for s in public.seats) == ["bot0", "bot1"]
    await play_to_end(client, match.match_id, handles)


# --------------------------------------------------------------------------- sizes


async def test_oversized_messages(server: RunningServer, client: ZigguratClient) -> None:
    match_id, handles = await started_match(client, kabaleo_config(2))
    guard = Guard(client, match_id, handles)
    mover, view = await turn(client, match_id, handles)
    exhausted = grpc.StatusCode.RESOURCE_EXHAUSTED
    for size in (65 * 1024, 100 * 1024, 1024 * 1024):
        await guard.refused(client.submit_move(mover, "B" * size), exhausted, None)
        await guard.refused(client.get_match("x" * size), exhausted, None)
    for length in (65, 64 * 1000, 60_000):
        await guard.refused(client.submit_move(mover, "R" * length), INVALID, "MALFORMED_MOVE")
    # An oversized message on the Play stream ends that call; nothing is played.
    call = client.stub.Play(metadata=mover.metadata)
    await call.write(spb.PlayRequest(match_id=match_id, move="R" * (100 * 1024)))
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        async for _ in call:
            pass
    assert caught.value.code() == exhausted
    assert (await client.get_match(match_id, mover)).view == view
    # The connection is still good for the next call.
    await client.submit_move(mover, view.legal_moves[0], ply=view.ply)
    await play_to_end(client, match_id, handles)


# --------------------------------------------------------------------------- the Play stream


async def _responses(call: Any) -> AsyncIterator[Any]:
    async for response in play_items(call):
        yield response


async def test_play_stream_rejects_bad_moves_and_continues(
    server: RunningServer, client: ZigguratClient
) -> None:
    match_id, handles = await started_match(client, pylos_config())
    bot, other = handles
    rng = random.Random(5)
    opponent = asyncio.create_task(client.play(other, lambda t: rng.choice(list(t.legal_moves))))
    # The opponent's stream connects (a public seat event) before this test counts events.
    while (await client.get_match(match_id)).seats[other.seat - 1].state != match_pb2.SEAT_STATE_CONNECTED:
        await asyncio.sleep(0.01)
    call = client.stub.Play(metadata=bot.metadata)
    await call.write(spb.PlayRequest(match_id=match_id))
    stream = _responses(call)
    rejected: list[spb.MoveRejected] = []
    ended = None
    pending: list[tuple[str, str]] = []  # moves sent, awaiting a verdict: (move, expected reason)
    seen_seq = 0
    turns = 0
    async for response in stream:
        kind = response.WhichOneof("kind")
        if kind == "move_rejected":
            move, reason = pending.pop(0)
            assert response.move_rejected.move == move[:64]
            assert response.move_rejected.reason == reason
            assert response.move_rejected.message
            rejected.append(response.move_rejected)
            if not pending:
                # Nothing changed: the next event is still to come and the position is the same.
                public = await client.get_match(match_id)
                assert public.last_seq == seen_seq
                mine = await client.get_match(match_id, bot)
                assert mine.view.to_move == bot.seat
                await call.write(
                    spb.PlayRequest(move=rng.choice(list(mine.view.legal_moves)), ply=mine.view.ply)
                )
            continue
        event = response.event
        assert event.seq == seen_seq + 1, "events arrive in order, without gaps"
        seen_seq = event.seq
        which = event.WhichOneof("kind")
        if which == "turn_started" and event.turn_started.seat == bot.seat:
            legal = list(event.turn_started.legal_moves)
            ply = event.turn_started.ply
            turns += 1
            if turns <= 3:
                illegal = [
                    m for m in illegal_candidates(game_pb2.GAME_PYLOS, event.turn_started) if m not in legal
                ]
                bad = [
                    (illegal[0], "ILLEGAL_MOVE"),
                    ("9z9", "MALFORMED_MOVE"),
                    ("x" * 500, "MALFORMED_MOVE"),
                    (legal[0], "STALE_PLY"),
                ]
                for move, reason in bad:
                    pending.append((move, reason))
                    await call.write(
                        spb.PlayRequest(move=move, ply=ply + 1 if reason == "STALE_PLY" else ply)
                    )
            else:
                await call.write(spb.PlayRequest(move=rng.choice(legal), ply=ply))
        elif which == "move_played" and event.move_played.seat == bot.seat:
            assert not event.move_played.substituted
        elif which == "match_ended":
            ended = event.match_ended
    assert ended is not None, "the stream went on to the end of the match"
    assert len(rejected) == 12
    assert await asyncio.wait_for(opponent, 10) is not None
    record = await client.record(match_id)
    assert not any(m.substituted for m in record.moves)


async def test_play_stream_move_out_of_turn(server: RunningServer, client: ZigguratClient) -> None:
    match_id, handles = await started_match(client, kabaleo_config(2))
    mover, view = await turn(client, match_id, handles)
    waiter = next(h for h in handles if h.seat != mover.seat)
    call = client.stub.Play(metadata=waiter.metadata)
    start = (await client.get_match(match_id)).last_seq
    await call.write(spb.PlayRequest(match_id=match_id, after_seq=start, move=view.legal_moves[0]))
    stream = _responses(call)
    response = await asyncio.wait_for(anext(stream), 5)
    # Opening the stream connects the seat (a public seat event); the move itself is refused.
    while response.WhichOneof("kind") == "event":
        assert response.event.WhichOneof("kind") == "seat_changed"
        response = await asyncio.wait_for(anext(stream), 5)
    assert response.move_rejected.reason == "NOT_YOUR_TURN"
    assert response.move_rejected.move == view.legal_moves[0]
    after = await client.get_match(match_id, mover)
    assert after.view == view, "the game did not move"
    call.cancel()
    await play_to_end(client, match_id, handles)


# --------------------------------------------------------------------------- hidden information


async def test_kabaleo_refusals_never_reveal_objectives(
    server: RunningServer, client: ZigguratClient
) -> None:
    match_id, handles = await started_match(client, kabaleo_config(4))
    rng = random.Random(11)
    messages: list[tuple[int, str]] = []  # (seat that got it, message)

    async def collect(handle: MatchHandle, move: str, ply: int = 0) -> None:
        with pytest.raises(ZigguratError) as caught:
            await client.submit_move(handle, move, ply)
        messages.append((handle.seat, caught.value.message))

    while (await client.get_match(match_id)).status == match_pb2.MATCH_STATUS_ACTIVE:
        mover, view = await turn(client, match_id, handles)
        illegal = illegal_candidates(game_pb2.GAME_KABALEO, view)
        for move in [*rng.sample(illegal, 4), rng.choice(MALFORMED_KABALEO), "Z" * 70]:
            await collect(mover, move)
        await collect(mover, view.legal_moves[0], view.ply + 1)
        for other in handles:
            if other.seat != mover.seat:
                await collect(other, rng.choice(list(view.legal_moves)))
        await client.submit_move(mover, rng.choice(list(view.legal_moves)))
    for handle in handles:
        await collect(handle, "R1")
    final = await client.get_match(match_id)
    objectives = list(final.view.kabaleo.objectives)
    assert "?" not in objectives and len(objectives) == 4
    for seat, message in messages:
        assert "objective" not in message.lower()
        assert any(t.fullmatch(message) for t in KABALEO_TEMPLATES), f"unexpected message {message!r}"
        for other_seat, colour in enumerate(objectives, start=1):
            if other_seat != seat:
                # A refusal never names another seat together with its secret colour.
                assert f"seat {other_seat} holds" not in message
                assert not re.search(rf"seat {other_seat}\b.*\b{colour}\b", message)
    assert len(messages) > 36 * 7


# --------------------------------------------------------------------------- flooding


@pytest.fixture
async def slow_server(tmp_path: Path) -> AsyncIterator[RunningServer]:
    """A server with a low per-seat rate: 5 requests/s, bursts of 5."""
    db = tmp_path / "limited.db"
    options = ServeOptions(
        host="127.0.0.1", port=0, db_path=str(db), grace_seconds=0.5, rate_per_seat=5, burst_per_seat=5
    )
    running = ZigguratServer(options)
    port = await running.start()
    yield RunningServer(running, f"127.0.0.1:{port}", db)
    await running.stop()


async def test_flood_is_rate_limited_per_seat(slow_server: RunningServer) -> None:
    async with ZigguratClient(slow_server.address) as client:
        flooded_id, flooded = await started_match(client, kabaleo_config(2))
        calm_id, calm = await started_match(client, kabaleo_config(2))
        guard = Guard(client, flooded_id, flooded)
        mover, view = await turn(client, flooded_id, flooded)
        waiter = next(h for h in flooded if h.seat != mover.seat)
        before = await snapshot(client, flooded_id, flooded)
        results = await asyncio.gather(
            *(client.submit_move(waiter, view.legal_moves[0]) for _ in range(40)), return_exceptions=True
        )
        assert all(isinstance(r, ZigguratError) for r in results)
        reasons = [r.reason for r in results if isinstance(r, ZigguratError)]
        codes = {r.code for r in results if isinstance(r, ZigguratError) and r.reason == "RATE_LIMITED"}
        assert reasons.count("NOT_YOUR_TURN") <= 6
        assert reasons.count("RATE_LIMITED") >= 30
        assert codes == {grpc.StatusCode.RESOURCE_EXHAUSTED}
        assert await snapshot(client, flooded_id, flooded) == before
        await guard.refused(
            client.submit_move(waiter, view.legal_moves[0]),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            "RATE_LIMITED",
        )
        # Every seat of another match is unaffected, and so is the other seat of this one.
        calm_mover, calm_view = await turn(client, calm_id, calm)
        await client.submit_move(calm_mover, calm_view.legal_moves[0])
        await client.submit_move(mover, view.legal_moves[0], ply=view.ply)
        # The flooding seat gets its rate back after a pause, and both matches finish.
        await asyncio.sleep(0.5)
        await asyncio.gather(_paced_play(client, flooded_id, flooded), _paced_play(client, calm_id, calm))


async def _paced_play(client: ZigguratClient, match_id: str, handles: list[MatchHandle]) -> None:
    """Play to the end, waiting out RATE_LIMITED refusals (which change nothing)."""
    while True:
        public = await client.get_match(match_id)
        if public.status == match_pb2.MATCH_STATUS_FINISHED:
            return
        mover, view = await turn(client, match_id, handles)
        try:
            await client.submit_move(mover, view.legal_moves[0], ply=view.ply)
        except ZigguratError as error:
            assert error.reason == "RATE_LIMITED"
            assert (await client.get_match(match_id)).last_seq == public.last_seq
            await asyncio.sleep(0.1)


# --------------------------------------------------------------------------- resume points


async def test_bad_resume_point(server: RunningServer, client: ZigguratClient) -> None:
    match_id, handles = await started_match(client, pylos_config())
    last_seq = (await client.get_match(match_id)).last_seq
    before = await snapshot(client, match_id, handles)
    out_of_range = grpc.StatusCode.OUT_OF_RANGE
    for after_seq in (last_seq + 1, 10**9, 2**64 - 1):
        for handle in (None, handles[0]):
            with pytest.raises(ZigguratError) as caught:
                async for _ in client.watch(match_id, handle=handle, after_seq=after_seq):
                    pass
            assert (caught.value.code, caught.value.reason) == (out_of_range, "BAD_SEQ")
        call = client.stub.Play(metadata=handles[0].metadata)
        await call.write(spb.PlayRequest(match_id=match_id, after_seq=after_seq))
        with pytest.raises(grpc.aio.AioRpcError) as raw:
            async for _ in call:
                pass
        assert raw.value.code() == out_of_range, raw.value
        assert error_reason(raw.value) == "BAD_SEQ"
    await asyncio.sleep(0.05)
    assert await snapshot(client, match_id, handles) == before
    await play_to_end(client, match_id, handles)


async def test_play_stream_every_refusal_gets_its_own_verdict(
    server: RunningServer, client: ZigguratClient
) -> None:
    """A burst of bad moves on the Play stream gets one MoveRejected per move, in order."""
    match_id, handles = await started_match(client, pylos_config())
    mover, view = await turn(client, match_id, handles)
    call = client.stub.Play(metadata=mover.metadata)
    await call.write(spb.PlayRequest(match_id=match_id))
    sent = [f"bad{i}" for i in range(300)]
    for move in sent:
        await call.write(spb.PlayRequest(move=move))
    verdicts: list[str] = []

    async def read() -> None:
        async for item in play_items(call):
            if item.WhichOneof("kind") == "move_rejected":
                assert item.move_rejected.reason == "MALFORMED_MOVE"
                verdicts.append(item.move_rejected.move)
                if len(verdicts) == len(sent):
                    return

    await asyncio.wait_for(read(), 10)
    assert verdicts == sent
    assert (await client.get_match(match_id, mover)).view == view
    call.cancel()
    await play_to_end(client, match_id, handles)


async def test_unknown_list_filters_are_refused(server: RunningServer, client: ZigguratClient) -> None:
    for request in (spb.ListMatchesRequest(status=99), spb.ListMatchesRequest(game=42)):  # type: ignore[arg-type]
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await client.stub.ListMatches(request)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert error_reason(refused.value) == "BAD_FILTER"
