"""``ziggurat serve --workers 2``: real processes, loopback ports, real database files.

Two workers, each the one writer of its own shard, serve one public address; every match is
reachable through any of them (MATCH_ELSEWHERE names the owner, the shipped clients follow),
ListMatches shows every worker's matches as their owner renders them, a worker killed with
kill -9 is started again by the supervisor and its matches resume exactly, SIGTERM drains.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import grpc
import pytest
from connectrpc.client import ConnectClient
from connectrpc.compat import google_protobuf_binary_codec
from connectrpc.errors import ConnectError
from google.rpc import error_details_pb2

from tests import processes
from tests.servers import kabaleo_config, pylos_config
from ziggurat.hosting.shards import shard_path
from ziggurat.v1 import match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as rpc
from ziggurat.web.connect import method_infos
from ziggurat.wire.errors import error_reason
from ziggurat_client import ZigguratClient
from ziggurat_client.bot import Turn
from ziggurat_client.errors import error_info
from ziggurat_client.runner import SeatRunner

pytestmark = pytest.mark.slow
CLI = [sys.executable, "-m", "ziggurat.cli.main"]


class Workers:
    """``ziggurat serve --workers N`` as a subprocess: its public address and the workers' own."""

    def __init__(
        self, db: Path, count: int = 2, port: int = 0, log: Path | None = None, extra: Sequence[str] = ()
    ) -> None:
        """``log``: the file the supervisor's and workers' stderr go to (appended; default a pipe,
        read by the tests that stop the server soon); ``extra``: more ``serve`` options."""
        self.db = db
        self.count = count
        self.port = port
        self.log = log
        self.extra = list(extra)
        self.proc: subprocess.Popen[str] | None = None
        self.address = ""
        self.own: list[str] = []
        self.web = ""  # the shared web port's base URL

    def start(self) -> str:
        command = [
            *CLI,
            "serve",
            "--workers",
            str(self.count),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--db",
            str(self.db),
            "--grace",
            "1",
            "--no-mdns",
            *self.extra,
        ]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        if self.log is None:
            self.proc = processes.popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
            )
        else:
            with self.log.open("a") as log:
                self.proc = processes.popen(command, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
        assert self.proc.stdout is not None
        first = self.proc.stdout.readline()
        if not first.startswith("ziggurat listening on "):
            said = self.proc.stderr.read() if self.proc.stderr else self.log.read_text() if self.log else ""
            raise RuntimeError(f"no listening line: {first!r} {said}")
        self.address = first.split()[-1]
        second = self.proc.stdout.readline()  # ziggurat workers: 2 (own ports A, B)
        assert second.startswith(f"ziggurat workers: {self.count} (own ports "), second
        ports = second.split("own ports ", 1)[1].rstrip(")\n").split(", ")
        self.own = [f"127.0.0.1:{port}" for port in ports]
        third = self.proc.stdout.readline()  # ziggurat web client on http://HOST:PORT/
        assert third.startswith(("ziggurat web client on http://", "ziggurat web client on https://")), third
        self.web = third.split()[-1].rstrip("/")
        return self.address

    def worker_pid(self, index: int) -> int:
        """The pid that holds shard ``index``'s owner lock (the one process writing it)."""
        text = Path(f"{shard_path(self.db, index)}.lock").read_text()
        return int(text.split()[1].rstrip(":"))

    def stop(self) -> None:
        """kill -9 of the supervisor (the workers die with it: see the fixture)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture
def workers(tmp_path: Path) -> Iterator[Workers]:
    running = Workers(tmp_path / "z.db")
    running.start()
    yield running
    pids = [running.worker_pid(i) for i in range(running.count)]
    running.stop()
    for pid in pids:  # the workers die with the supervisor
        _wait_gone(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in _state(pid)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:", 1)[1].split("\n", 1)[0].lower()
    except (OSError, IndexError):
        return "zombie"


def _wait_gone(pid: int, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), f"worker {pid} outlived its supervisor"


def _shard_ids(db: Path) -> set[str]:
    with sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True) as conn:
        return {row[0] for row in conn.execute("SELECT match_id FROM matches")}


def _bearer(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


async def test_two_workers_serve_every_match_through_any_address(workers: Workers) -> None:
    own0, own1 = workers.own
    made: dict[str, str] = {}  # match id -> the own address of the worker that created it
    for own in (own0, own1, own0, own1):
        async with ZigguratClient(own) as client:
            match = await client.create_match(pylos_config())
        assert match.server_address == own, "a Match names the worker that owns it"
        made[match.match_id] = own
    assert _shard_ids(workers.db) == {m for m, a in made.items() if a == own0}
    assert _shard_ids(shard_path(workers.db, 1)) == {m for m, a in made.items() if a == own1}

    on1 = next(m for m, a in made.items() if a == own1)
    async with grpc.aio.insecure_channel(own0) as channel:
        stub = rpc.MatchServiceStub(channel)
        # A call for another worker's match: refused, naming the owner; nothing changes.
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await stub.JoinMatch(spb.JoinMatchRequest(match_id=on1, player_name="lost"))
        assert caught.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        info = error_info(caught.value.trailing_metadata())
        assert info == ("MATCH_ELSEWHERE", {"address": own1})
        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await stub.GetMatch(spb.GetMatchRequest(match_id="0123456789abcdef"))
        assert error_reason(missing.value) == "MATCH_NOT_FOUND"

        # ListMatches on either worker (and the public address) lists every match, each exactly
        # as its owner shows it, in pages that cover each match once.
        for address in (own0, own1, workers.address):
            async with grpc.aio.insecure_channel(address) as listing:
                lister = rpc.MatchServiceStub(listing)
                seen: list[str] = []
                token = ""
                while True:
                    page = await lister.ListMatches(spb.ListMatchesRequest(page_size=3, page_token=token))
                    for listed in page.matches:
                        async with grpc.aio.insecure_channel(made[listed.match_id]) as owner:
                            got = await rpc.MatchServiceStub(owner).GetMatch(
                                spb.GetMatchRequest(match_id=listed.match_id)
                            )
                        assert listed == got.match
                    seen += [m.match_id for m in page.matches]
                    token = page.next_page_token
                    if not token:
                        break
                assert sorted(seen) == sorted(made), address
                with pytest.raises(grpc.aio.AioRpcError) as bad:
                    await lister.ListMatches(spb.ListMatchesRequest(page_token="bm90LWEtdG9rZW4"))
                assert error_reason(bad.value) == "BAD_PAGE_TOKEN"

    # The Python client follows MATCH_ELSEWHERE by itself: join on worker 0, a match of worker 1.
    async with ZigguratClient(own0) as client:
        handle = await client.join(on1, "follower")
        assert client.routes[on1] == own1
        assert (await client.get_match(on1, handle)).seats[handle.seat - 1].player_name == "follower"


async def test_the_web_port_serves_every_worker_s_matches(workers: Workers) -> None:
    """Every worker serves the public web port; a browser cannot follow MATCH_ELSEWHERE, so the
    worker that took a call about another worker's match makes it there: unary calls, a
    WatchMatch stream and a refusal all come back as the owner gave them, whichever worker the
    kernel handed the connection to (a fresh connection each time)."""
    own0, own1 = workers.own
    made: dict[str, str] = {}
    for own in (own0, own1):
        async with ZigguratClient(own) as client:
            made[(await client.create_match(pylos_config())).match_id] = own
    infos = method_infos()
    codec = google_protobuf_binary_codec()
    for match_id, owner in made.items():
        for attempt in range(6):
            client = ConnectClient(workers.web, codec=codec)
            try:
                got = await client.execute_unary(
                    request=spb.GetMatchRequest(match_id=match_id), method=infos["GetMatch"]
                )
                assert got.match.match_id == match_id and got.match.server_address == owner
                if attempt == 0:
                    joined = await client.execute_unary(
                        request=spb.JoinMatchRequest(match_id=match_id, player_name=f"web{attempt}"),
                        method=infos["JoinMatch"],
                    )
                    assert joined.token
                stream = client.execute_server_stream(
                    request=spb.WatchMatchRequest(match_id=match_id), method=infos["WatchMatch"]
                )
                async with asyncio.timeout(10):
                    async for update in stream:
                        assert update.events[0].seq == 1
                        break
                await stream.aclose()  # type: ignore[attr-defined]
                with pytest.raises(ConnectError) as refused:
                    await client.execute_unary(
                        request=spb.SubmitMoveRequest(match_id=match_id, move="a1"),
                        method=infos["SubmitMove"],
                        headers={"authorization": "Bearer not-a-token"},
                    )
                reasons = [
                    error_details_pb2.ErrorInfo.FromString(d.message_bytes).reason
                    for d in refused.value.details
                    if d.type_name == "google.rpc.ErrorInfo"
                ]
                assert reasons == ["BAD_TOKEN"], refused.value
            finally:
                await client.close()
    # Both joins landed in their owners' shards, nowhere else.
    assert _shard_ids(workers.db) == {m for m, a in made.items() if a == own0}
    assert _shard_ids(shard_path(workers.db, 1)) == {m for m, a in made.items() if a == own1}


async def test_a_seat_sees_its_secret_only_through_any_worker(workers: Workers) -> None:
    """Secrecy on the merged listing: the token's own match as that seat sees it, others as a
    spectator does (as their owner renders them), the same through either worker."""
    own0, own1 = workers.own
    async with grpc.aio.insecure_channel(own1) as channel:
        owner = rpc.MatchServiceStub(channel)
        created = await owner.CreateMatch(spb.CreateMatchRequest(config=kabaleo_config(2)))
        match_id = created.match.match_id
        tokens = []
        for name in ("a", "b"):
            joined = await owner.JoinMatch(spb.JoinMatchRequest(match_id=match_id, player_name=name))
            tokens.append(joined.token)
        public = (await owner.GetMatch(spb.GetMatchRequest(match_id=match_id))).match
        seen = [
            (await owner.GetMatch(spb.GetMatchRequest(match_id=match_id), metadata=_bearer(t))).match
            for t in tokens
        ]
    assert seen[0] != public and seen[1] != public and seen[0] != seen[1], "each seat has its own secret"
    for address in (own0, own1):
        async with grpc.aio.insecure_channel(address) as channel:
            stub = rpc.MatchServiceStub(channel)
            anonymous = await stub.ListMatches(spb.ListMatchesRequest())
            assert {m.match_id: m for m in anonymous.matches}[match_id] == public
            for token, view in zip(tokens, seen, strict=True):
                listed = await stub.ListMatches(spb.ListMatchesRequest(), metadata=_bearer(token))
                assert {m.match_id: m for m in listed.matches}[match_id] == view
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.ListMatches(spb.ListMatchesRequest(), metadata=_bearer("forged"))
            assert error_reason(caught.value) == "BAD_TOKEN"


def test_a_bot_pair_plays_through_the_public_address_and_verifies(workers: Workers, tmp_path: Path) -> None:
    bot = [*CLI, "bot", "random", "--server", workers.address]
    creator = processes.popen(
        [*bot, "--create", "pylos"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert creator.stdout is not None
    first = creator.stdout.readline()
    assert first.startswith("created match "), first
    match_id = first.split()[2]
    joiner = processes.run([*bot, "--match", match_id], capture_output=True, text=True, timeout=120)
    out, err = creator.communicate(timeout=120)
    assert joiner.returncode == 0 and creator.returncode == 0, joiner.stderr[-2000:] + err[-2000:]
    assert f"match {match_id} over" in joiner.stdout and f"match {match_id} over" in out
    for address in (workers.address, *workers.own):  # from any worker: followed to the owner
        verify = processes.run(
            [*CLI, "verify", match_id, "--server", address], capture_output=True, text=True, timeout=60
        )
        assert verify.returncode == 0, verify.stdout + verify.stderr
        assert verify.stdout.startswith(f"verified: match {match_id}")


async def _play_pair(address: str, match_id: str, delay: float) -> tuple[list[SeatRunner], list[str]]:
    """Both seats of a match played by SeatRunners through ``address``; (runners, record moves)."""
    rng = random.Random(7)

    async def choose(turn: Turn) -> str:
        await asyncio.sleep(delay)
        return rng.choice(turn.legal_moves)

    from ziggurat_client.runner import Backoff, FunctionBot

    async with ZigguratClient(address) as one, ZigguratClient(address) as two:
        handles = [await one.join(match_id, "one"), await two.join(match_id, "two")]
        runners = [
            SeatRunner(client, handle, FunctionBot(choose), backoff=Backoff(maximum=1.0))
            for client, handle in zip((one, two), handles, strict=True)
        ]
        await asyncio.gather(*(r.run() for r in runners))
        record = await one.record(match_id)
    return runners, [m.move for m in record.moves]


def test_kill9_of_the_supervisor_ends_every_worker(tmp_path: Path) -> None:
    """Nothing tells an orphaned worker to stop but its death signal (PR_SET_PDEATHSIG, set by
    the supervisor between fork and exec): it must drain and exit, not serve on for ever."""
    running = Workers(tmp_path / "z.db")
    running.start()
    try:
        pids = [running.worker_pid(i) for i in range(running.count)]
        assert running.proc is not None
        os.kill(running.proc.pid, signal.SIGKILL)
        assert running.proc.wait(10) == -signal.SIGKILL
        for pid in pids:
            _wait_gone(pid, 10)
    finally:
        running.stop()


async def test_kill9_of_a_worker_restarts_it_and_its_match_resumes_exactly(workers: Workers) -> None:
    own1 = workers.own[1]
    async with ZigguratClient(own1) as creator:
        match_id = (await creator.create_match(pylos_config())).match_id
    victim = workers.worker_pid(1)
    play = asyncio.create_task(_play_pair(workers.address, match_id, delay=0.05))
    async with ZigguratClient(workers.address) as watcher:
        while (await watcher.get_match(match_id)).view.ply < 6:
            await asyncio.sleep(0.05)
        os.kill(victim, signal.SIGKILL)
        runners, moves = await asyncio.wait_for(play, timeout=240)
        final = await watcher.get_match(match_id)
    assert final.status == match_pb2.MATCH_STATUS_FINISHED
    restarted = workers.worker_pid(1)
    assert restarted != victim and not _alive(victim), "the supervisor started a new worker 1"
    assert any(r.sessions > 1 for r in runners), "the seats reconnected after the kill"
    for runner in runners:  # exact resume: each seat saw every move once, in order; answered each turn once
        assert runner.history == moves
        assert len(runner.answered) == len(set(runner.answered))
    assert final.server_address == own1, "the restarted worker kept its own address"
    verify = processes.run(
        [*CLI, "verify", match_id, "--server", workers.address], capture_output=True, text=True, timeout=60
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    # One writer per match: the match is in worker 1's shard only, whose lock one process holds.
    assert match_id in _shard_ids(shard_path(workers.db, 1)) and match_id not in _shard_ids(workers.db)
    second = processes.run(
        [*CLI, "serve", "--db", str(shard_path(workers.db, 1)), "--port", "0", "--no-mdns", "--no-web"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert second.returncode == 1 and f"pid {restarted}" in second.stderr, second.stderr


def test_sigterm_drains_every_worker_and_fewer_workers_than_shards_is_refused(tmp_path: Path) -> None:
    running = Workers(tmp_path / "z.db")
    running.start()
    try:
        with grpc.insecure_channel(running.own[1]) as channel:
            created = rpc.MatchServiceStub(channel).CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
        pids = [running.worker_pid(i) for i in range(2)]
        assert running.proc is not None
        running.proc.send_signal(signal.SIGTERM)
        assert running.proc.wait(60) == 0
        for pid in pids:
            _wait_gone(pid, 5)
        assert "stopped" in (running.proc.stderr.read() if running.proc.stderr else "")
    finally:
        running.stop()
    fewer = processes.run(
        [*CLI, "serve", "--workers", "1", "--db", str(tmp_path / "z.db"), "--port", "0", "--no-mdns"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert fewer.returncode == 2 and "z.shard1.db" in fewer.stderr, fewer.stderr
    # A public port that another server holds (one that bound it with SO_REUSEPORT too) is
    # refused, not shared.
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        command = [*CLI, "serve", "--workers", "2", "--db", str(tmp_path / "z.db"), "--host", "127.0.0.1"]
        shared = processes.run(
            [*command, "--port", str(taken), "--no-mdns"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert shared.returncode == 1 and "already in use" in shared.stderr, shared.stderr
    # TLS files that cannot be read stop the workers at start, saying so, exit 1.
    refused = processes.run(
        [*command, "--port", "0", "--tls-cert", "c.pem", "--tls-key", "k.pem", "--no-mdns"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1 and "cannot read the TLS files" in refused.stderr, refused.stderr
    # Started again with two workers, the match is back, served by its owner.
    again = Workers(tmp_path / "z.db")
    again.start()
    try:
        with grpc.insecure_channel(again.address) as channel:
            try:
                got = rpc.MatchServiceStub(channel).GetMatch(
                    spb.GetMatchRequest(match_id=created.match.match_id)
                )
                assert got.match.server_address == again.own[1]
            except grpc.RpcError as error:
                info = error_info(error.trailing_metadata())  # type: ignore[attr-defined]
                assert info == ("MATCH_ELSEWHERE", {"address": again.own[1]})
    finally:
        again.stop()


async def test_a_listing_that_needs_a_stopped_worker_answers_worker_unavailable(workers: Workers) -> None:
    """A page with a live match of a worker that does not answer (here: frozen by SIGSTOP)
    is refused UNAVAILABLE WORKER_UNAVAILABLE, never left hanging; it works again after."""
    own0, own1 = workers.own
    async with ZigguratClient(own1) as owner:
        match = await owner.create_match(pylos_config())
    frozen = workers.worker_pid(1)
    os.kill(frozen, signal.SIGSTOP)
    try:
        async with grpc.aio.insecure_channel(own0) as channel:
            stub = rpc.MatchServiceStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await stub.ListMatches(spb.ListMatchesRequest(), timeout=30)
            assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
            assert error_reason(caught.value) == "WORKER_UNAVAILABLE"
    finally:
        os.kill(frozen, signal.SIGCONT)
    async with ZigguratClient(own0) as client:
        listed = await client.list_matches()
    assert [m.match_id for m in listed] == [match.match_id]
    assert workers.worker_pid(1) == frozen, "a stopped worker is not restarted (it did not exit)"


def test_a_single_server_database_becomes_shard_0(tmp_path: Path) -> None:
    """Growing from one process to two: the matches of the old database are served by worker 0."""
    db = tmp_path / "z.db"
    single = processes.popen(
        [*CLI, "serve", "--host", "127.0.0.1", "--port", "0", "--db", str(db), "--no-mdns", "--no-web"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert single.stdout is not None
        address = single.stdout.readline().split()[-1]
        with grpc.insecure_channel(address) as channel:
            old = rpc.MatchServiceStub(channel).CreateMatch(spb.CreateMatchRequest(config=pylos_config()))
        single.send_signal(signal.SIGTERM)
        assert single.wait(60) == 0
    finally:
        processes.stop(single)
    grown = Workers(db)
    grown.start()
    try:
        with grpc.insecure_channel(grown.own[1]) as channel:
            stub = rpc.MatchServiceStub(channel)
            with pytest.raises(grpc.RpcError) as caught:
                stub.GetMatch(spb.GetMatchRequest(match_id=old.match.match_id))
            info = error_info(caught.value.trailing_metadata())  # type: ignore[attr-defined]
            assert info == ("MATCH_ELSEWHERE", {"address": grown.own[0]})
            listed = stub.ListMatches(spb.ListMatchesRequest())
            assert [m.match_id for m in listed.matches] == [old.match.match_id]
            assert listed.matches[0].server_address == grown.own[0]
    finally:
        grown.stop()
