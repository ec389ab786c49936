"""End-to-end tournaments of program participants: per-game gRPC programs, keep-alive programs,
stdio programs (the shell and C examples) and remote bots that connect by themselves.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import sys
from pathlib import Path

import grpc
import pytest

from tests import processes
from tests.tournament.fixtures.harness import (
    FIXTURES,
    PYTHON,
    REPO,
    make_runner,
    run_tournament,
    stored_games,
    toml_list,
    verify_matches,
    write_config,
)
from ziggurat.bots import make_bot
from ziggurat.tournament.results import standings
from ziggurat.v1 import bot_service_pb2 as bpb
from ziggurat.v1 import bot_service_pb2_grpc as bgrpc
from ziggurat_client.client import ZigguratClient
from ziggurat_client.remote import RemoteBot

HEADER = """
name = "{name}"
seed = "{name}-seed"
game = "pylos"
concurrency = 2

[options]
max_moves = 40

[time_control]
per_move_ms = 5000
max_illegal_moves = 3
"""


def participant(name: str, kind: str, argv: list[str], extra: str = "") -> str:
    return f"\n[[participants]]\nname = '{name}'\n{kind} = {toml_list(argv)}\n{extra}"


@pytest.fixture(scope="module")
def c_bot(tmp_path_factory: pytest.TempPathFactory) -> Path:
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("cbot") / "random_bot"
    out.parent.chmod(0o755)  # sandboxed programs run as users of their own
    processes.run([compiler, "-O2", "-o", str(out), str(REPO / "examples/stdio/random_bot.c")], check=True)
    return out


async def test_program_participants(tmp_path: Path, c_bot: Path) -> None:
    body = HEADER.format(name="programs")
    body += participant("grpc-script", "command", [PYTHON, str(FIXTURES / "grpc_bot.py"), "random"])
    body += participant("cli-bot", "command", [PYTHON, "-m", "ziggurat.cli.main", "bot", "random"])
    body += participant(
        "keeper",
        "command",
        [PYTHON, "-m", "ziggurat.cli.main", "bot", "greedy", "--remote"],
        "keep_alive = true",
    )
    body += participant("shell", "stdio", ["sh", str(REPO / "examples/stdio/random_bot.sh")])
    body += participant("c", "stdio", [str(c_bot)])
    config = write_config(tmp_path, body)
    db = tmp_path / "t.db"
    done = await run_tournament(config, db, timeout=80)
    assert done.reason == "completed"
    results = done.results()
    assert len(results) == 20  # 10 pairings, colours swapped
    for result in results:
        assert result["verdicts"] == ["finished", "finished"], result
        assert result["termination"] in ("move_limit", "normal", "pyramid_complete", "no_legal_move")
    names = ["grpc-script", "cli-bot", "keeper", "shell", "c"]
    table = standings(names, results)
    assert {row.name: row.games for row in table} == dict.fromkeys(names, 8)
    assert not any(row.failures for row in table)
    verify_matches(db, [r["match_id"] for r in results])
    logs = done.runner.log_dir
    assert (logs / "keeper.log").exists()  # the keep-alive program's output
    # a log per seat of a per-game program: a gRPC program's output, a stdio program's stderr
    per_game = {
        f"{r['match_id']}-seat{seat + 1}.log"
        for r in results
        for seat, name in enumerate(r["seats"])
        if name in ("grpc-script", "cli-bot")
    }
    assert len(per_game) == 16 and per_game <= {path.name for path in logs.glob("*-seat*.log")}


async def test_remote_participants_connect_by_themselves(tmp_path: Path) -> None:
    body = HEADER.format(name="remote")
    # admitted by the tokens the organiser issued (their hashes are in the configuration)
    sdk_hash, cli_hash = (hashlib.sha256(t).hexdigest() for t in (b"sdk-secret", b"cli-secret"))
    body += f"\n[[participants]]\nname = 'lan-sdk'\nremote = true\ntoken_sha256 = '{sdk_hash}'\n"
    body += f"\n[[participants]]\nname = 'lan-cli'\nremote = true\ntoken_sha256 = '{cli_hash}'\n"
    body += "\n[[participants]]\nname = 'house'\nbuiltin = 'random'\n"
    config = write_config(tmp_path, body)
    db = tmp_path / "t.db"
    runner = make_runner(config, db)
    task = asyncio.create_task(runner.run())
    process: asyncio.subprocess.Process | None = None
    sdk_task: asyncio.Task[None] | None = None
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        while runner.address is None:
            assert not task.done(), task
            assert loop.time() < deadline
            await asyncio.sleep(0.02)
        address = runner.address
        # a squatter cannot take a participant's name first, under any spelling of it
        async with ZigguratClient(address) as rogue:
            stub = bgrpc.BotServiceStub(rogue.channel)
            for name in ("lan-sdk", "LAN-SDK ", "lan-cli"):
                call = stub.ConnectBot(
                    bpb.ConnectBotRequest(name=name), metadata=(("authorization", "Bearer guess"),)
                )
                with pytest.raises(grpc.aio.AioRpcError) as refused:
                    await call.read()
                assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
        process = await processes.exec_async(
            sys.executable, "-m", "ziggurat.cli.main", "bot", "random", "--remote",
            "--server", address, "--name", "lan-cli", "--bot-token", "cli-secret", "--max-matches", "2",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        client = ZigguratClient(address)
        remote = RemoteBot(
            client,
            lambda a: make_bot("random", seed=a.bot_seed),
            name="lan-sdk",
            token="sdk-secret",
            max_matches=2,
        )
        sdk_task = asyncio.create_task(remote.run())
        reason = await asyncio.wait_for(task, 60)
        assert reason == "completed"
        assert len(remote.played) == 4  # it sat in every game it was scheduled for
    finally:
        if sdk_task is not None:
            sdk_task.cancel()
            await asyncio.gather(sdk_task, return_exceptions=True)
            await client.close()
        if process is not None and process.returncode is None:
            process.terminate()
            await process.wait()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    games = stored_games(db, runner.tournament_id)
    results = [g.result for g in games if g.result is not None]
    assert len(results) == 6
    for result in results:
        assert result["verdicts"] == ["finished", "finished"], result
    table = standings(["lan-sdk", "lan-cli", "house"], results)
    assert all(row.games == 4 for row in table)
    verify_matches(db, [r["match_id"] for r in results])


@pytest.mark.slow
async def test_a_slow_starting_bot_does_not_lose_on_time(tmp_path: Path) -> None:
    """The clock starts once every participant is ready: 3 s of start-up under a 1 s per-move clock."""
    body = """
name = "slow-start"
seed = "slow-start"
game = "pylos"
format = "gauntlet"
concurrency = 2

[gauntlet]
champion = "house"

[options]
max_moves = 30

[time_control]
per_move_ms = 1000

[[participants]]
name = "house"
builtin = "random"
"""
    body += participant("slow-grpc", "command", [PYTHON, str(FIXTURES / "grpc_bot.py"), "slow-start:3"])
    body += participant("slow-stdio", "stdio", [PYTHON, str(FIXTURES / "stdio_slow_start.py")])
    done = await run_tournament(write_config(tmp_path, body), tmp_path / "t.db", timeout=90)
    assert done.reason == "completed"
    results = done.results()
    assert len(results) == 4
    for result in results:
        assert result["verdicts"] == ["finished", "finished"], result
        assert result["termination"] != "timeout"
