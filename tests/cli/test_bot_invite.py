"""Invite a bot, end to end: a real server, a real remote bot process (``ziggurat bot --remote``,
ConnectBot), a human seat, ``ziggurat bot invite``, and the match played to its end."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests import processes
from tests.servers import ServerProcess
from ziggurat.verify import verify_record
from ziggurat_client import MatchHandle, ZigguratClient, ZigguratError, game_config
from ziggurat_client.v1 import game_pb2, match_pb2

CLI = [sys.executable, "-m", "ziggurat.cli.main", "bot"]


async def _connected(client: ZigguratClient, name: str) -> None:
    for _ in range(300):
        if any(bot.name == name for bot in await client.list_bots()):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"bot {name} never connected")


async def _play_human(client: ZigguratClient, handle: MatchHandle) -> match_pb2.MatchEndedEvent:
    """A person at the keyboard: reads the stream, plays the first legal move on each turn."""
    async for event in client.follow(handle.match_id, handle=handle):
        kind = event.WhichOneof("kind")
        if kind == "turn_started" and event.turn_started.seat == handle.seat:
            turn = event.turn_started
            await asyncio.sleep(0.1)  # a person takes a moment (and restarts land mid-game)
            for _ in range(200):  # a person presses the key again while the server restarts
                try:
                    await client.submit_move(handle, turn.legal_moves[0], turn.ply)
                    break
                except ZigguratError as error:
                    if not error.retryable:
                        raise
                    await asyncio.sleep(0.05)
        elif kind == "match_ended":
            return event.match_ended
    raise AssertionError("the stream ended before the match")


async def _ply(client: ZigguratClient, match_id: str) -> int:
    """The match's ply, asked again while the channel reconnects after a restart."""
    for _ in range(200):
        try:
            return (await client.get_match(match_id)).view.ply
        except ZigguratError as error:
            if not error.retryable:
                raise
            await asyncio.sleep(0.05)
    raise AssertionError("the server did not come back")


def _remote_bot(address: str, name: str, token: str) -> subprocess.Popen[str]:
    """``ziggurat bot random --remote`` playing Pylos only, one match at a time."""
    remote = ["--remote", "--server", address, "--name", name, "--bot-token", token]
    return processes.popen(
        [*CLI, "random", *remote, "--games", "pylos", "--max-matches", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _invite(
    address: str, name: str, match_id: str, *, token_file: Path | None = None, env_token: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``ziggurat bot invite`` with the creator token in a file or in ZIGGURAT_CREATOR_TOKEN."""
    env = {k: v for k, v in os.environ.items() if k != "ZIGGURAT_CREATOR_TOKEN"}
    if env_token is not None:
        env["ZIGGURAT_CREATOR_TOKEN"] = env_token
    creator = ["--creator-token-file", str(token_file)] if token_file is not None else []
    return processes.run(
        [*CLI, "invite", name, "--match", match_id, "--server", address, *creator],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def _token_file(client: ZigguratClient, match_id: str, folder: Path) -> Path:
    """The creator token the client received for ``match_id``, in a file of its own."""
    path = folder / f"{match_id}.creator"
    path.write_text(client.creator_tokens[match_id] + "\n")
    return path


@asynccontextmanager
async def _server_and_remote_bot(
    tmp_path: Path, name: str, token: str, port: int = 0
) -> AsyncIterator[tuple[ServerProcess, ZigguratClient, subprocess.Popen[str]]]:
    """A ``ziggurat serve`` subprocess, a remote bot process connected to it, and a client."""
    server = ServerProcess(tmp_path / "z.db", ["--port", str(port)])
    server.start()
    bot = _remote_bot(server.address, name, token)
    try:
        async with ZigguratClient(server.address) as client:
            await _connected(client, name)
            yield server, client, bot
    finally:
        bot.terminate()
        bot.wait(10)
        server.stop()


@pytest.mark.slow
async def test_an_invited_remote_bot_plays_a_human_to_the_end(tmp_path: Path) -> None:
    async with _server_and_remote_bot(tmp_path, "robo", "secret-robo") as (server, client, _):
        match = await client.create_match(game_config("pylos"))
        human = await client.join(match.match_id, "human")
        token_file = _token_file(client, match.match_id, tmp_path)
        invited = await asyncio.to_thread(
            _invite, server.address, "robo", match.match_id, token_file=token_file
        )
        assert invited.returncode == 0, invited.stderr
        assert f"took seat {3 - human.seat} of match {match.match_id}" in invited.stdout
        ended = await asyncio.wait_for(_play_human(client, human), 120)
        assert sorted(ended.outcome.ranks) in ([1, 2], [1, 1])
        record = await client.record(match.match_id)
        assert verify_record(record).ok
        assert {s.player_name for s in record.seats} == {"human", "robo"}
        # The bot is free again once the match is over (max_matches respected, then released).
        for _ in range(100):
            (robo,) = [b for b in await client.list_bots() if b.name == "robo"]
            if robo.active_matches == 0:
                break
            await asyncio.sleep(0.05)
        assert robo.active_matches == 0


async def test_invitations_respect_the_bots_games_and_max_matches(tmp_path: Path) -> None:
    async with _server_and_remote_bot(tmp_path, "solo", "t") as (server, client, _):
        kabaleo = await client.create_match(game_config("kabaleo", 3))
        first = await client.create_match(game_config("pylos"))
        second = await client.create_match(game_config("pylos"))
        refusals = {}
        for label, match_id, name in [
            ("game", kabaleo.match_id, "solo"),
            ("unknown", first.match_id, "nobody"),
        ]:
            try:
                await client.invite_bot(match_id, name)
            except ZigguratError as error:
                refusals[label] = (error.code.name, error.reason)
        assert refusals == {
            "game": ("FAILED_PRECONDITION", "BOT_GAME"),
            "unknown": ("FAILED_PRECONDITION", "BOT_NOT_CONNECTED"),
        }
        assert await client.invite_bot(first.match_id, "solo") in (1, 2)
        token = client.creator_tokens[second.match_id]
        busy = await asyncio.to_thread(_invite, server.address, "solo", second.match_id, env_token=token)
        assert busy.returncode == 1 and "BOT_BUSY" in busy.stderr
        # Refusals changed nothing: every seat of the refused matches is still open.
        for match_id in (kabaleo.match_id, second.match_id):
            seats = (await client.get_match(match_id)).seats
            assert all(s.state == match_pb2.SEAT_STATE_OPEN for s in seats), seats


async def test_an_invited_bot_plays_on_through_server_restarts(tmp_path: Path) -> None:
    """The remote bot's seat uses the same runner as ``ziggurat bot``: it reconnects (ConnectBot and
    Play) after a kill -9 and a SIGTERM of the server and the match still ends normally."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with _server_and_remote_bot(tmp_path, "sturdy", "sturdy-token", port) as (server, client, bot):
        match = await client.create_match(game_config("pylos"))
        human = await client.join(match.match_id, "human")
        await client.invite_bot(match.match_id, "sturdy")
        playing = asyncio.create_task(_play_human(client, human))
        for stop in (server.kill9, server.terminate):
            ply = await _ply(client, match.match_id)
            for _ in range(600):
                await asyncio.sleep(0.05)
                if playing.done() or await _ply(client, match.match_id) >= ply + 3:
                    break
            else:
                raise AssertionError(f"no move since ply {ply}")
            assert not playing.done(), f"the restart must land mid-game: {playing.result()}"
            stop()
            server.start()
        ended = await asyncio.wait_for(playing, 120)
        assert ended.outcome.termination != game_pb2.TERMINATION_ABORTED
        assert verify_record(await client.record(match.match_id)).ok
        assert bot.poll() is None, "the remote bot gave up"


async def test_the_invite_command_sends_the_creator_token_and_never_takes_it_as_an_argument(
    tmp_path: Path,
) -> None:
    async with _server_and_remote_bot(tmp_path, "guarded", "g") as (server, client, _):
        match = await client.create_match(game_config("pylos"))
        other = await client.create_match(game_config("pylos"))
        # No token at all: a usage error, one line, before any call.
        missing = await asyncio.to_thread(_invite, server.address, "guarded", match.match_id)
        assert missing.returncode == 2
        assert missing.stderr.splitlines() == [
            "error: inviting a bot needs the match's creator token: --creator-token-file FILE "
            "or the ZIGGURAT_CREATOR_TOKEN environment variable"
        ]
        unreadable = await asyncio.to_thread(
            _invite, server.address, "guarded", match.match_id, token_file=tmp_path / "absent"
        )
        assert unreadable.returncode == 2
        assert unreadable.stderr.startswith("error: cannot read the creator token file ")
        # Another match's creator token: the server refuses, one line, exit 1.
        wrong = await asyncio.to_thread(
            _invite,
            server.address,
            "guarded",
            match.match_id,
            token_file=_token_file(client, other.match_id, tmp_path),
        )
        assert wrong.returncode == 1 and len(wrong.stderr.splitlines()) == 1
        assert wrong.stderr.startswith("error: ") and "BAD_TOKEN" in wrong.stderr, wrong.stderr
        assert all(
            s.state == match_pb2.SEAT_STATE_OPEN for s in (await client.get_match(match.match_id)).seats
        )
        # The right one, from the environment.
        token = client.creator_tokens[match.match_id]
        invited = await asyncio.to_thread(_invite, server.address, "guarded", match.match_id, env_token=token)
        assert invited.returncode == 0, invited.stderr
        assert f"of match {match.match_id}" in invited.stdout


async def test_bot_create_writes_the_creator_token_that_bot_invite_reads(tmp_path: Path) -> None:
    """``ziggurat bot random --create pylos --creator-token-file F`` then ``ziggurat bot invite NAME
    --match ID --creator-token-file F``: the token goes from one command to the other in an
    owner-only file, never through the command line, and the invited bot plays the match out."""
    async with _server_and_remote_bot(tmp_path, "cli-robo", "cli-secret") as (server, client, _):
        token_file = tmp_path / "creator.token"
        creator = processes.popen(
            [
                *CLI,
                "random",
                "--server",
                server.address,
                "--create",
                "pylos",
                "--creator-token-file",
                str(token_file),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert creator.stdout is not None
            first = await asyncio.to_thread(creator.stdout.readline)
            assert first.startswith("created match "), first
            match_id = first.split()[2]
            assert token_file.stat().st_mode & 0o777 == 0o600
            assert token_file.read_text().strip() not in first
            invited = await asyncio.to_thread(
                _invite, server.address, "cli-robo", match_id, token_file=token_file
            )
            assert invited.returncode == 0, invited.stderr
            out, err = await asyncio.to_thread(creator.communicate, timeout=120)
            assert creator.returncode == 0, err
            assert f"match {match_id} over" in out
        finally:
            processes.stop(creator)
        assert {s.player_name for s in (await client.record(match_id)).seats} == {"random", "cli-robo"}
        # A file that cannot be written stops --create before any match exists.
        nowhere = ["--creator-token-file", str(tmp_path / "missing" / "t")]
        unwritable = processes.run(
            [*CLI, "random", "--server", server.address, "--create", "pylos", *nowhere],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert unwritable.returncode == 2
        assert unwritable.stderr.startswith("error: cannot write the creator token file "), unwritable.stderr
