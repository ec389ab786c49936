"""``--executor ray``: games as Ray tasks on a local cluster started here, results in the same standings.

The cluster is a head node started by a helper process (``ray.init`` with 2 CPUs, a
100 MB object store, no dashboard, no usage report, no token auth: nothing leaves the
machine) in a short private temp dir; it is shut down by closing the helper's stdin,
and its process group is killed as a backstop. Starting it takes ~10 s, so it starts
in the background while the local reference tournaments run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import processes
from tests.tournament.fixtures.harness import (
    REPO,
    cli,
    comparable,
    make_runner,
    run_tournament,
    stored_games,
    toml_list,
    verify_matches,
    write_config,
)
from ziggurat.cli.main import main as ziggurat_main
from ziggurat.tournament.executors import RAY_MISSING, require_ray
from ziggurat.tournament.results import standings

pytest.importorskip("ray")

RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled", "RAY_DISABLE_DOCKER_CPU_WARNING": "1"}

HEAD = """
import sys, ray
ray.init(num_cpus=2, object_store_memory=100_000_000, include_dashboard=False,
         _temp_dir=sys.argv[1], _node_ip_address="127.0.0.1", log_to_driver=False)
print(ray.get_runtime_context().gcs_address, flush=True)
sys.stdin.read()  # until the test closes our stdin
ray.shutdown()
"""

PYLOS = """
name = "ray-pylos"
seed = "ray-executor-1"
game = "pylos"
concurrency = 2

[[participants]]
name = "random-a"
builtin = "random"

[[participants]]
name = "random-b"
builtin = "random"

[[participants]]
name = "greedy"
builtin = "greedy"
"""

KABALEO = """
name = "ray-kabaleo"
seed = "ray-executor-2"
game = "kabaleo"
seats = 3
concurrency = 2

[[participants]]
name = "random-a"
builtin = "random"

[[participants]]
name = "random-b"
builtin = "random"

[[participants]]
name = "greedy"
builtin = "greedy"

[[participants]]
name = "random-sh"
stdio = {shell}
"""


class RayHead:
    """A local Ray head node in a helper process; :attr:`address` waits until it is up."""

    def __init__(self) -> None:
        self.temp_dir = tempfile.mkdtemp(prefix="zr")  # short: Ray's socket paths must fit 107 bytes
        self.process = processes.popen(
            [sys.executable, "-c", HEAD, self.temp_dir],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env={**os.environ, **RAY_ENV},
            start_new_session=True,
        )
        self._address: str | None = None

    @property
    def address(self) -> str:
        if self._address is None:
            assert self.process.stdout is not None
            line = self.process.stdout.readline().strip()
            assert line, "the Ray head did not start"
            self._address = line
        return self._address

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=20)
        # Ray's own processes share the helper's session: end any that outlived the shutdown.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        shutil.rmtree(self.temp_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def ray_head() -> Iterator[RayHead]:
    head = RayHead()
    try:
        yield head
    finally:
        head.stop()


@pytest.fixture
def ray_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in RAY_ENV.items():
        monkeypatch.setenv(key, value)


def _by_index(results: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {result["index"]: result for result in results}


async def test_ray_pylos_matches_local_and_records_verify(
    tmp_path: Path, ray_head: RayHead, ray_env: None
) -> None:
    config = write_config(tmp_path, PYLOS)
    local = await run_tournament(config, tmp_path / "local.db", seed_text="ray-1")
    started = time.monotonic()
    remote = await run_tournament(
        config, tmp_path / "ray.db", executor="ray", ray_address=ray_head.address, seed_text="ray-1"
    )
    print(f"ray: {len(remote.results())} games in {time.monotonic() - started:.1f}s")
    assert local.reason == remote.reason == "completed"
    local_results, ray_results = _by_index(local.results()), _by_index(remote.results())
    assert len(ray_results) == 6
    assert {i: comparable(r) for i, r in ray_results.items()} == {
        i: comparable(r) for i, r in local_results.items()
    }  # seeded bots, same set-up seeds: the very same games
    names = ["random-a", "random-b", "greedy"]
    assert standings(names, list(ray_results.values())) == standings(names, list(local_results.values()))
    # every match was imported into the tournament db: records verify from there
    verify_matches(tmp_path / "ray.db", [r["match_id"] for r in ray_results.values()])
    rows = stored_games(tmp_path / "ray.db", remote.tournament_id)
    assert all(row.status == "done" and row.match_id == row.result["match_id"] for row in rows if row.result)


def test_ray_kabaleo_with_stdio_program_via_cli(tmp_path: Path, ray_head: RayHead, ray_env: None) -> None:
    shell = toml_list(["sh", str(REPO / "examples" / "stdio" / "random_bot.sh")])
    config = write_config(tmp_path, KABALEO.format(shell=shell))
    local_db, ray_db = tmp_path / "local.db", tmp_path / "ray.db"
    local = cli(
        "tournament", "run", str(config), "--db", str(local_db), "--quiet", "--seed", "ray-2", cwd=tmp_path
    )
    assert local.returncode == 0, local.stderr
    remote = cli(
        "tournament", "run", str(config), "--db", str(ray_db), "--quiet", "--seed", "ray-2",
        "--executor", "ray", "--ray-address", ray_head.address, cwd=tmp_path,
    )  # fmt: skip
    assert remote.returncode == 0, remote.stderr
    assert "completed" in remote.stdout

    def results(db: Path) -> dict[int, dict[str, Any]]:
        (tournament,) = {row.tournament_id for row in _tournaments(db)}
        return _by_index([row.result for row in stored_games(db, tournament) if row.result])

    local_results, ray_results = results(local_db), results(ray_db)
    # 4 tables, one game each: duplicate deals take no program on Ray (they run unconfined there)
    assert sorted(ray_results) == sorted(local_results) == list(range(4))
    for index, result in ray_results.items():
        assert result["verdicts"] == ["finished"] * 3, result
        reference = local_results[index]
        if "random-sh" in result["seats"]:
            # the shell bot draws from /dev/urandom: same table and deal, its own moves
            for key in ("seats", "deal", "commitment", "revealed_seed"):
                assert result[key] == reference[key]
        else:
            assert comparable(result) == comparable(reference)
    verify_matches(ray_db, [r["match_id"] for r in ray_results.values()])


async def test_ray_resume_replays_the_games_cut_off(tmp_path: Path, ray_head: RayHead, ray_env: None) -> None:
    config = write_config(tmp_path, PYLOS)
    reference = _by_index((await run_tournament(config, tmp_path / "local.db", seed_text="ray-3")).results())
    db = tmp_path / "ray.db"
    seen: list[dict[str, Any]] = []
    first = make_runner(
        config, db, executor="ray", ray_address=ray_head.address, on_result=seen.append, seed_text="ray-3"
    )
    task = asyncio.create_task(first.run())
    while len(seen) < 2:
        await asyncio.sleep(0.02)
    task.cancel()  # as a Ctrl-C would: the games in flight are lost with their Ray tasks
    with contextlib.suppress(asyncio.CancelledError):
        await task
    cut = stored_games(db, first.tournament_id)
    assert 2 <= sum(row.status == "done" for row in cut) < 6
    resumed = await run_tournament(
        config, db, tournament_id=first.tournament_id, executor="ray", ray_address=ray_head.address
    )
    assert resumed.reason == "completed"
    results = _by_index(resumed.results())
    assert sorted(results) == sorted(reference)
    replayed = {i for i, r in results.items() if r["attempt"] > 0}
    assert replayed == {row.index for row in cut if row.status == "running"}
    for index, result in results.items():
        if index in replayed:  # a game cut off is played again with a fresh seed: a new deal
            assert result["revealed_seed"] != reference[index]["revealed_seed"]
            assert [a["attempt"] for a in result["replaced"]] == [0]
        else:
            assert comparable(result) == comparable(reference[index])
    verify_matches(db, [r["match_id"] for r in results.values()])


def _tournaments(db: Path) -> list[Any]:
    from ziggurat.tournament.store import TournamentStore

    store = TournamentStore(db)
    try:
        return store.all()
    finally:
        store.close()


def test_ray_refuses_remote_participants(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(
        tmp_path,
        PYLOS + f'\n[[participants]]\nname = "outsider"\nremote = true\ntoken_sha256 = "{"0" * 64}"\n',
    )
    code = ziggurat_main(
        ["tournament", "run", str(config), "--db", str(tmp_path / "t.db"), "--executor", "ray"]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "remote participants (outsider)" in err and "--executor local" in err
    assert not (tmp_path / "t.db").exists() or not _tournaments(tmp_path / "t.db")


def test_ray_refuses_duplicate_deals_with_programs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shell = toml_list(["sh", str(REPO / "examples" / "stdio" / "random_bot.sh")])
    body = KABALEO.format(shell=shell).replace("concurrency = 2\n", "concurrency = 2\nduplicate = true\n")
    config = write_config(tmp_path, body)
    code = ziggurat_main(
        ["tournament", "run", str(config), "--db", str(tmp_path / "t.db"), "--executor", "ray"]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "runs programs unconfined" in err and "(random-sh)" in err and "duplicate = false" in err
    assert not (tmp_path / "t.db").exists() or not _tournaments(tmp_path / "t.db")


def test_without_ray_the_cli_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    with pytest.raises(RuntimeError, match=r"ziggurat\[ray\]"):
        require_ray()
    config = write_config(tmp_path, PYLOS)
    code = ziggurat_main(
        ["tournament", "run", str(config), "--db", str(tmp_path / "t.db"), "--executor", "ray"]
    )
    assert code == 2
    assert RAY_MISSING in capsys.readouterr().err


async def test_a_ray_worker_plays_search_bots_in_worker_processes_of_one_kept_pool() -> None:
    """On a Ray worker, whose game server runs in the same process, a built-in search bot
    thinks in the worker process's search pool (kept from game to game); others in-process."""
    from ziggurat.bots.workers import PooledBot
    from ziggurat.tournament import executors
    from ziggurat.v1 import bot_service_pb2 as bpb

    pool = executors._search_pool()
    assert executors._search_pool() is pool
    assignment = bpb.Assignment(bot_seed=5)
    mcts = executors.Entrant(name="m", kind="builtin", builtin="mcts", options={"max_seconds": 0.1})
    searching = executors._builtin(mcts, assignment, pool)
    assert isinstance(searching, PooledBot) and searching.name == "mcts"
    await searching.start()  # built in a worker process with the organiser's seed
    assert searching.pid is not None and searching.pid != os.getpid()
    greedy = executors.Entrant(name="g", kind="builtin", builtin="greedy")
    assert not isinstance(executors._builtin(greedy, assignment, pool), PooledBot)
    searching.close()
