"""A real arena (``ziggurat arena run`` in a subprocess, a real database file, bots as separate
processes): who may act, versions, the operator's controls, registration, and kill -9."""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import sys
import time
from pathlib import Path

import grpc
import pytest

from tests.arena.harness import RunningArena, start_arena, wait_for
from ziggurat.arena.config import load_arena_config
from ziggurat.arena.runner import check_ratings
from ziggurat.arena.store import ArenaStore
from ziggurat.v1 import arena_service_pb2 as apb
from ziggurat.v1 import bot_service_pb2 as bpb
from ziggurat.v1 import bot_service_pb2_grpc as bgrpc
from ziggurat.v1 import game_pb2, match_service_pb2
from ziggurat.v1 import match_service_pb2_grpc as mgrpc
from ziggurat.verify import verify_record
from ziggurat.wire.errors import error_reason

pytestmark = pytest.mark.slow
ALICE_TOKEN = "alice-token-0123456789"
BOB_TOKEN = "bob-token-0123456789"


def _sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _config(tmp_path: Path, *, registration: str = "open", extra: str = "") -> Path:
    path = tmp_path / "arena.toml"
    path.write_text(
        f"""
name = "Test arena"
database = "arena.db"

[server]
listen = "127.0.0.1:0"

[time_control]
base_ms = 20000
increment_ms = 100

[pairing]
max_games = 3
games_per_entrant = 1
interval_seconds = 0.1
stop_grace_seconds = 20

[registration]
policy = "{registration}"
per_address_per_hour = 2

[[ladder]]
game = "pylos"

[[entrant]]
name = "alice"
token_sha256 = "{_sha(ALICE_TOKEN)}"

[[entrant]]
name = "bob"
token_sha256 = "{_sha(BOB_TOKEN)}"

[[entrant]]
name = "house"
builtin = "random"
{extra}
"""
    )
    return path


async def _verify_rated(arena: RunningArena) -> int:
    """Every rated game's match verifies, and its stored ranks are the record's."""
    from ziggurat_client import ZigguratClient

    rated = [g for g in arena.games() if g.status == "rated"]
    async with ZigguratClient(arena.address) as client:
        for game in rated:
            assert game.match_id and game.result is not None
            record = await client.record(game.match_id)
            verdict = verify_record(record)
            assert verdict.ok, (game.number, verdict)
            assert [s.player_name for s in record.seats] == list(game.seats)
            assert list(record.outcome.ranks) == game.result["ranks"]
    return len(rated)


def _starts_with(arena: RunningArena, line: str) -> list[int]:
    return [g.start_ms for g in arena.games() if line in g.seats]


async def test_entrants_versions_controls_and_least_privilege(tmp_path: Path) -> None:
    arena = start_arena(_config(tmp_path))
    try:
        arena.remote_bot("random", "alice", ALICE_TOKEN)
        arena.remote_bot("random", "bob", BOB_TOKEN)
        await wait_for(lambda: sum(g.status == "rated" for g in arena.games()) >= 4, 60, "4 rated games")
        async with grpc.aio.insecure_channel(arena.address) as channel:
            stub = arena.stub(channel)
            # Registration: open, names as bot names are (look-alikes taken), rate-limited.
            carol = await stub.RegisterEntrant(apb.RegisterEntrantRequest(name="carol"))
            assert carol.name == "carol" and len(carol.token) > 20 and not carol.pending_approval
            for name, reason in (("CAROL", "NAME_TAKEN"), ("caroI", "NAME_TAKEN"), ("al ice", "BAD_NAME"),
                                 ("alice", "NAME_TAKEN"), ("", "BAD_NAME")):  # fmt: skip
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await stub.RegisterEntrant(apb.RegisterEntrantRequest(name=name))
                assert error_reason(refused.value) == reason, name
            await stub.RegisterEntrant(apb.RegisterEntrantRequest(name="dave"))
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.RegisterEntrant(apb.RegisterEntrantRequest(name="erin"))
            assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert error_reason(refused.value) == "RATE_LIMITED"
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.GetEntrant(apb.GetEntrantRequest(name="nobody"))
            assert error_reason(refused.value) == "ENTRANT_NOT_FOUND"

            # A credential grants its own entrant's seats and nothing else.
            bots = bgrpc.BotServiceStub(channel)
            for name, token, reason in (
                ("mallory", "any", "NOT_ALLOWED_IN_COMPETITION"),  # not an entrant
                ("alice", BOB_TOKEN, "BAD_TOKEN"),  # another entrant's name
                ("alice@evil", BOB_TOKEN, "BAD_TOKEN"),  # a version of another entrant
                ("alice@no way", ALICE_TOKEN, "BAD_NAME"),  # a version that is not a version
            ):
                stream = bots.ConnectBot(
                    bpb.ConnectBotRequest(name=name), metadata=(("authorization", f"Bearer {token}"),)
                )
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await stream.read()
                assert error_reason(refused.value) == reason, name
            matches = mgrpc.MatchServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await matches.CreateMatch(
                    match_service_pb2.CreateMatchRequest(
                        config=game_pb2.GameConfig(game=game_pb2.GAME_PYLOS, seats=2)
                    ),
                    metadata=(("authorization", f"Bearer {ALICE_TOKEN}"),),
                )
            assert error_reason(refused.value) == "NOT_ALLOWED_IN_COMPETITION"

        # A new version: alice@2 connects with alice's token; the old line is never paired again.
        arena.remote_bot("random", "alice@2", ALICE_TOKEN)
        await wait_for(lambda: _starts_with(arena, "alice@2"), 60, "a game of alice@2")
        switched = min(_starts_with(arena, "alice@2"))  # its first game
        await wait_for(lambda: len(_starts_with(arena, "alice@2")) >= 2, 60, "two games of alice@2")
        assert all(start <= switched for start in _starts_with(arena, "alice"))
        ladder = (await arena.arena()).ladders[0]
        states = {(line.entrant, line.version): line.state for line in ladder.standings}

        async def rated_profile() -> apb.EntrantProfile | None:
            """alice's profile once five of her games are rated, one of them as alice@2 (a game
            that has started is rated only when it ends)."""
            async with grpc.aio.insecure_channel(arena.address) as channel:
                answer = await arena.stub(channel).GetEntrant(apb.GetEntrantRequest(name="alice@2"))
            entrant = answer.entrant
            versions = {point.version for point in entrant.history}
            return entrant if len(entrant.history) >= 5 and "2" in versions else None

        profile = await wait_for(rated_profile, 60, "five rated games of alice, one as alice@2")
        assert profile.name == "alice" and [(x.version, x.game) for x in profile.lines] == [
            ("2", game_pb2.GAME_PYLOS),
            ("", game_pb2.GAME_PYLOS),
        ]
        orders = [point.rated_order for point in profile.history]
        assert orders == sorted(orders) and len(set(orders)) == len(orders) >= 5
        assert {point.version for point in profile.history} == {"", "2"}
        assert states[("alice", "")] == apb.ENTRANT_STATE_SUPERSEDED
        assert states[("alice", "2")] == apb.ENTRANT_STATE_ACTIVE
        assert [line.rank for line in ladder.standings if line.state != apb.ENTRANT_STATE_ACTIVE] == [0] * (
            len(ladder.standings) - sum(line.state == apb.ENTRANT_STATE_ACTIVE for line in ladder.standings)
        )

        # Pause: nothing new is seated; resume: games again.
        assert "paused" in arena.cli("pause", str(arena.config_path)).stdout
        time.sleep(0.5)  # a round already under way may still seat one table
        await wait_for(lambda: not any(g.status == "playing" for g in arena.games()), 60, "games to end")
        before = len(arena.games())
        time.sleep(1.5)
        assert len(arena.games()) == before
        assert (await arena.arena()).status == apb.ARENA_STATUS_PAUSED
        arena.cli("resume", str(arena.config_path))
        await wait_for(lambda: len(arena.games()) > before, 30, "a game after resume")

        # Retire: never paired again.
        arena.cli("retire", str(arena.config_path), "house")
        time.sleep(0.5)
        retired_at = int(time.time() * 1000)
        count = len(arena.games())
        await wait_for(lambda: len(arena.games()) >= count + 3, 60, "three more games")
        assert not [g for g in arena.games() if "house" in g.seats and g.start_ms > retired_at]
        assert arena.cli("retire", str(arena.config_path), "nobody", check=False).returncode == 1

        rated = await _verify_rated(arena)
        assert rated >= 6
        assert "stopping" in arena.cli("stop", str(arena.config_path)).stdout
        assert arena.process.wait(60) == 0
    finally:
        arena.stop()
    store = ArenaStore(load_arena_config(arena.config_path).database)
    try:
        games = store.games()
        assert not [g for g in games if g.status == "playing"]
        orders = sorted(g.rated_order for g in games if g.status == "rated")
        assert orders == list(range(1, len(orders) + 1))
        match_ids = [g.match_id for g in games if g.status == "rated"]
        assert len(match_ids) == len(set(match_ids))
        assert check_ratings(load_arena_config(arena.config_path), store) == []
    finally:
        store.close()
    standings = json.loads(arena.cli("standings", str(arena.config_path), "--json").stdout)
    lines = {row["line"]: row for row in standings["ladders"][0]["standings"]}
    assert lines["house"]["state"] == "retired" and lines["alice"]["state"] == "superseded"
    exported = arena.cli("export", str(arena.config_path), "ratings", "--format", "csv").stdout.splitlines()
    assert exported[0].startswith("rated_order,number,game,line,mu,sigma,rating,change")
    assert len(exported) - 1 == 2 * len(orders)


async def test_closed_and_approval_registration(tmp_path: Path) -> None:
    arena = start_arena(_config(tmp_path, registration="approval"))
    try:
        async with grpc.aio.insecure_channel(arena.address) as channel:
            stub = arena.stub(channel)
            frank = await stub.RegisterEntrant(apb.RegisterEntrantRequest(name="frank"))
            assert frank.pending_approval
            arena.remote_bot("random", "frank", frank.token)
            arena.remote_bot("random", "bob", BOB_TOKEN)
            time.sleep(2.0)
            assert not _starts_with(arena, "frank")  # pending: connected, never paired
            profile = (await stub.GetEntrant(apb.GetEntrantRequest(name="frank"))).entrant
            assert profile.lines[0].state == apb.ENTRANT_STATE_PENDING
            arena.cli("approve", str(arena.config_path), "frank")
            await wait_for(lambda: _starts_with(arena, "frank"), 30, "frank's first game")
    finally:
        assert arena.stop() == 0
    closed = tmp_path / "closed"
    closed.mkdir()
    arena = start_arena(_config(closed, registration="closed"))
    try:
        async with grpc.aio.insecure_channel(arena.address) as channel:
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await arena.stub(channel).RegisterEntrant(apb.RegisterEntrantRequest(name="gina"))
            assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert error_reason(refused.value) == "REGISTRATION_CLOSED"
    finally:
        assert arena.stop() == 0


def _frozen_mid_game(arena: RunningArena) -> bool:
    """Stop (SIGSTOP) every bot, let the moves already sent land, then look for a game in
    progress; thaw them if there is none.

    With every seat's program frozen, a game still in progress half a second later stays so (its
    clock has 20 s) until the kill: a game seen playing by a plain poll could end before the kill
    lands (random bots play fast), and then nothing was cut off. Freezing the remote bots alone
    was not enough on a loaded machine: the built-in entrant (house2) played on, and a move sent
    just before the freeze still lands, either of which can end the game between the look and
    the kill.
    """
    arena.signal_bots(signal.SIGSTOP)
    time.sleep(0.5)
    if any(g.status == "playing" and g.match_id for g in arena.games()):
        return True
    arena.signal_bots(signal.SIGCONT)
    return False


async def test_kill_9_mid_arena_keeps_ratings_and_records_and_the_arena_carries_on(tmp_path: Path) -> None:
    extra = '\n[[entrant]]\nname = "house2"\nbuiltin = "random"\n'
    config = _config(tmp_path, extra=extra)
    arena = start_arena(config)
    arena.remote_bot("random", "alice", ALICE_TOKEN)
    arena.remote_bot("random", "bob", BOB_TOKEN)
    try:
        await wait_for(lambda: sum(g.status == "rated" for g in arena.games()) >= 5, 90, "5 rated games")
        await wait_for(lambda: _frozen_mid_game(arena), 90, "a game in progress with every bot frozen")
        arena.kill9()
    finally:
        arena.signal_bots(signal.SIGCONT)
        arena.kill_bots()
    before = {g.number: g for g in arena.games()}
    cut_off = [n for n, g in before.items() if g.status == "playing"]
    assert cut_off
    arena = start_arena(config, log_name="arena2.log")
    arena.remote_bot("random", "alice", ALICE_TOKEN)
    arena.remote_bot("random", "bob", BOB_TOKEN)
    try:
        await wait_for(
            lambda: (
                sum(g.status == "rated" for g in arena.games())
                >= sum(g.status == "rated" for g in before.values()) + 3
            ),
            90,
            "three more rated games after the restart",
        )
        after = {g.number: g for g in arena.games()}
        for number, game in before.items():
            if game.status == "rated":  # nothing rated before the crash moved
                assert after[number] == game
            else:  # cut off: rated from the log if it had ended, else void; never playing
                assert after[number].status in ("rated", "void")
        store = arena.store()
        try:
            assert check_ratings(load_arena_config(config), store) == []
        finally:
            store.close()
        await _verify_rated(arena)
        assert "cut off" in arena.log() or "rated now" in arena.log()
    finally:
        assert arena.stop() == 0
    games = arena.games()
    match_ids = [g.match_id for g in games if g.status == "rated"]
    assert len(match_ids) == len(set(match_ids))
    orders = sorted(g.rated_order for g in games if g.status == "rated")
    assert orders == list(range(1, len(orders) + 1))


async def test_a_kabaleo_ladder_seats_tables_of_each_size_and_shows_no_secret(tmp_path: Path) -> None:
    path = tmp_path / "kabaleo.toml"
    entrants = "".join(f'\n[[entrant]]\nname = "k{i}"\nbuiltin = "random"\n' for i in range(4))
    path.write_text(
        f"""
name = "Kabaleo arena"
database = "k.db"
[server]
listen = "127.0.0.1:0"
[time_control]
base_ms = 20000
increment_ms = 100
[pairing]
max_games = 2
interval_seconds = 0.1
stop_grace_seconds = 20
[[ladder]]
game = "kabaleo"
tables = [3, 4]
{entrants}"""
    )
    arena = start_arena(path)
    try:
        await wait_for(
            lambda: {len(g.seats) for g in arena.games() if g.status == "rated"} >= {3, 4},
            90,
            "tables of 3 and 4",
        )
        async with grpc.aio.insecure_channel(arena.address) as channel:
            matches = mgrpc.MatchServiceStub(channel)

            async def a_live_game_hides_its_secrets() -> bool:
                """A live game on the ladder shows no ranks; its match, read as anyone reads it,
                hides every objective, the unheld colours and the seed while it is played."""
                shown = (await arena.stub(channel).GetArena(apb.GetArenaRequest())).arena
                for game in shown.live_games:
                    assert not game.ranks and not game.rating_changes and not game.rated_order
                    if not game.match_id:
                        continue
                    answer = await matches.GetMatch(match_service_pb2.GetMatchRequest(match_id=game.match_id))
                    if answer.match.status == 2:  # active
                        kabaleo = answer.match.view.kabaleo
                        assert set(kabaleo.objectives) == {"?"} and set(kabaleo.unheld) == {"?"}
                        assert not answer.match.revealed_seed
                        return True
                return False

            await wait_for(a_live_game_hides_its_secrets, 60, "an active game to read")
        assert await _verify_rated(arena) >= 2
    finally:
        assert arena.stop() == 0


WRAPPER = """
import os, sys
print("server", os.environ["ZIGGURAT_SERVER"], flush=True)
try:
    open(sys.argv[1], "rb").read(1)
    print("database readable", flush=True)
except OSError:
    print("database hidden", flush=True)
os.execv(sys.executable, [sys.executable, "-m", "ziggurat.cli.main", "bot", "greedy", "--remote"])
"""


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
async def test_a_submitted_program_entrant_plays_confined(tmp_path: Path) -> None:
    """A program the operator runs (Kaggle's way) is launched in a sandbox of its own: it reaches
    the server through the socket bound into it, cannot read the arena's database, and plays."""
    (tmp_path / "entry.py").write_text(WRAPPER)
    program = [sys.executable, str(tmp_path / "entry.py"), str(tmp_path / "arena.db")]
    extra = f'\n[[entrant]]\nname = "submitted"\ncommand = {json.dumps(program)}\n'
    arena = start_arena(_config(tmp_path, extra=extra))
    try:
        await wait_for(
            lambda: sum(g.status == "rated" and "submitted" in g.seats for g in arena.games()) >= 2,
            90,
            "two rated games of the program",
        )
        assert await _verify_rated(arena) >= 2
        log = (tmp_path / "arena-logs" / "submitted.log").read_text()
        assert "server unix:" in log and "database hidden" in log, log
        assert "database readable" not in log
    finally:
        assert arena.stop() == 0
