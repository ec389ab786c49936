"""Damaged databases: the server serves what is sound, quarantines the rest, `ziggurat check` finds it.

A real ``ziggurat serve`` subprocess builds a database with finished, active and waiting
matches; copies of that file are then damaged in several ways (a flipped header, a changed
move, a changed outcome, deleted rows, a truncated file) and a fresh server subprocess is
started on each copy. Every undamaged match must be served exactly as before, every damaged
one must answer DATA_LOSS (reason MATCH_DAMAGED), ListMatches must keep working, and
``ziggurat check`` must name every damaged match and exit 1.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest

from tests import processes
from tests.servers import ServerProcess, kabaleo_config, pylos_config
from ziggurat.v1 import match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.wire.errors import error_reason
from ziggurat_client import MatchHandle, ZigguratClient, ZigguratError


@dataclass
class Built:
    """The sound database and what a client saw of every match in it."""

    db: Path
    handles: dict[str, list[MatchHandle]]
    summaries: dict[str, bytes]  # GetMatch as a spectator
    records: dict[str, bytes]  # GetMatchRecord of the finished ones
    roles: dict[str, str] = field(default_factory=dict)  # role -> match id


async def _play(client: ZigguratClient, handles: list[MatchHandle], plies: int, rng: random.Random) -> None:
    by_seat = {h.seat: h for h in handles}
    for _ in range(plies):
        public = await client.get_match(handles[0].match_id)
        if public.status != match_pb2.MATCH_STATUS_ACTIVE:
            return
        mover = by_seat[public.view.to_move]
        view = (await client.get_match(mover.match_id, mover)).view
        await client.submit_move(mover, rng.choice(list(view.legal_moves)), ply=view.ply)


async def _build(address: str, built: Built) -> None:
    rng = random.Random(13)
    plan = {
        # role: (config, plies; 999 = to the end, -1 = nobody joins)
        "pylos_active_changed_move": (pylos_config(), 6),
        "pylos_finished_changed_move": (pylos_config(), 999),
        "kabaleo_finished_changed_outcome": (kabaleo_config(2), 999),
        "kabaleo_active_deleted_event": (kabaleo_config(2), 5),
        "kabaleo_active_deleted_seat": (kabaleo_config(2), 3),
        "pylos_finished_deleted_match_row": (pylos_config(), 999),
        "sound_pylos_active": (pylos_config(), 7),
        "sound_pylos_finished": (pylos_config(), 999),
        "sound_kabaleo_active": (kabaleo_config(3), 4),
        "sound_kabaleo_finished": (kabaleo_config(2), 999),
        "sound_waiting": (pylos_config(), -1),
    }
    async with ZigguratClient(address) as client:
        for role, (config, plies) in plan.items():
            match = await client.create_match(config)
            handles = []
            if plies >= 0:
                handles = [await client.join(match.match_id, f"{role[:20]}-{i}") for i in range(config.seats)]
                await _play(client, handles, plies, rng)
            built.roles[role] = match.match_id
            built.handles[match.match_id] = handles
        for match_id in built.roles.values():
            built.summaries[match_id] = (await client.get_match(match_id)).SerializeToString()
            if (await client.get_match(match_id)).status == match_pb2.MATCH_STATUS_FINISHED:
                built.records[match_id] = (await client.record(match_id)).SerializeToString()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    """A sound database, written by a real server that was then stopped cleanly."""
    db = tmp_path_factory.mktemp("sound") / "ziggurat.db"
    server = ServerProcess(db)
    result = Built(db, {}, {}, {})
    try:
        asyncio.run(_build(server.start(), result))
        assert server.terminate() == 0
    finally:
        server.stop()
    yield result


def _copy(built: Built, tmp_path: Path) -> Path:
    target = tmp_path / "damaged.db"
    shutil.copyfile(built.db, target)
    return target


def _check(db: Path) -> subprocess.CompletedProcess[str]:
    return processes.run(
        [sys.executable, "-m", "ziggurat.cli.main", "check", "--db", str(db), "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _serve_once(db: Path) -> subprocess.CompletedProcess[str]:
    """``ziggurat serve`` on ``db``, expected to refuse (a timeout fails the test)."""
    command = [
        sys.executable,
        "-m",
        "ziggurat.cli.main",
        "serve",
        "--port",
        "0",
        "--no-mdns",
        "--db",
        str(db),
    ]
    return processes.run(command, capture_output=True, text=True, timeout=60)


def _damaged_in_report(output: str) -> set[str]:
    return {line.split()[2].rstrip(":") for line in output.splitlines() if line.startswith("DAMAGED match ")}


async def _data_loss(call: object) -> None:
    """Await ``call``; it must fail with DATA_LOSS and the reason MATCH_DAMAGED."""
    try:
        await call  # type: ignore[misc]
    except ZigguratError as error:
        assert (error.code, error.reason) == (grpc.StatusCode.DATA_LOSS, "MATCH_DAMAGED"), error
        return
    except grpc.aio.AioRpcError as error:
        assert error.code() == grpc.StatusCode.DATA_LOSS, error
        assert error_reason(error) == "MATCH_DAMAGED", error
        return
    raise AssertionError("a damaged match was served")


async def _assert_served(address: str, built: Built, damaged: set[str]) -> None:
    """Damaged matches answer DATA_LOSS on every path; the others exactly as before."""
    async with ZigguratClient(address) as client:
        for match_id in built.summaries:
            if match_id in damaged:
                continue
            assert (await client.get_match(match_id)).SerializeToString() == built.summaries[match_id]
            if match_id in built.records:
                assert (await client.record(match_id)).SerializeToString() == built.records[match_id]
        sound = set(built.summaries) - damaged
        # ListMatches works for everyone; a finished match is listed from its stored summary
        # (no replay), so its damage shows once something reads it (next lines).
        assert sound <= {m.match_id for m in await client.list_matches()}
        for match_id in damaged:
            await _data_loss(client.get_match(match_id))
            await _data_loss(client.record(match_id))
            await _data_loss(client.join(match_id, "late"))
            watch = client.stub.WatchMatch(spb.WatchMatchRequest(match_id=match_id))
            await _data_loss(watch.read())
            handles = built.handles[match_id]
            if handles:
                await _data_loss(client.submit_move(handles[0], "1a1"))
                play = client.stub.Play(metadata=handles[0].metadata)
                await play.write(spb.PlayRequest(match_id=match_id))
                await _data_loss(play.read())
        listed = {m.match_id for m in await client.list_matches()}
        assert listed == sound, "once found, damaged matches are left out of the list"
        # A sound active match still plays on after the damaged ones were refused.
        active = built.roles["sound_pylos_active"]
        await _play(client, built.handles[active], 2, random.Random(1))


def _edit(db: Path, *statements: tuple[str, tuple[object, ...]]) -> None:
    con = sqlite3.connect(db, isolation_level=None)
    try:
        for sql, params in statements:
            assert con.execute(sql, params).rowcount == 1, sql
    finally:
        con.close()


def _move_events(db: Path, match_id: str) -> list[tuple[int, dict[str, object]]]:
    con = sqlite3.connect(db)
    try:
        rows = con.execute(
            "SELECT seq, data_json FROM events WHERE match_id=? AND kind='move' ORDER BY seq", (match_id,)
        ).fetchall()
    finally:
        con.close()
    return [(int(seq), json.loads(data)) for seq, data in rows]


def _damage_rows(db: Path, roles: dict[str, str]) -> set[str]:
    """A changed move in an unfinished and in a finished match, a changed outcome, three deleted
    rows (an event, a seat, a match). Returns the ids of the damaged matches."""
    edits: list[tuple[str, tuple[object, ...]]] = []
    for role in ("pylos_active_changed_move", "pylos_finished_changed_move"):
        moves = _move_events(db, roles[role])
        seq, data = moves[2]
        data["move"] = moves[0][1]["move"]  # the third ball on the square of the first: occupied
        edits.append(
            ("UPDATE events SET data_json=? WHERE match_id=? AND seq=?", (json.dumps(data), roles[role], seq))
        )
    outcome_id = roles["kabaleo_finished_changed_outcome"]
    con = sqlite3.connect(db)
    (ended,) = con.execute(
        "SELECT data_json FROM events WHERE match_id=? AND kind='ended'", (outcome_id,)
    ).fetchone()
    con.close()
    outcome = json.loads(ended)
    outcome["ranks"] = list(reversed(outcome["ranks"])) if len(set(outcome["ranks"])) > 1 else [1, 2]
    edits.append(
        ("UPDATE events SET data_json=? WHERE match_id=? AND kind='ended'", (json.dumps(outcome), outcome_id))
    )
    deleted_event = roles["kabaleo_active_deleted_event"]
    edits.append(
        (
            "DELETE FROM events WHERE match_id=? AND seq=?",
            (deleted_event, _move_events(db, deleted_event)[1][0]),
        )
    )
    edits.append(
        ("DELETE FROM seat_tokens WHERE match_id=? AND seat=1", (roles["kabaleo_active_deleted_seat"],))
    )
    edits.append(("DELETE FROM matches WHERE match_id=?", (roles["pylos_finished_deleted_match_row"],)))
    _edit(db, *edits)
    return {match_id for role, match_id in roles.items() if not role.startswith("sound_")}


@pytest.mark.slow
async def test_damaged_rows_are_quarantined_and_reported(built: Built, tmp_path: Path) -> None:
    db = _copy(built, tmp_path)
    damaged = _damage_rows(db, built.roles)
    server = ServerProcess(db)
    try:
        address = await asyncio.to_thread(server.start)
        await _assert_served(address, built, damaged)
        assert await asyncio.to_thread(server.terminate) == 0
        assert server.proc is not None and server.proc.stderr is not None
        log = server.proc.stderr.read()
    finally:
        server.stop()
    assert "Traceback" not in log, log
    for match_id in damaged:
        assert log.count(f"match {match_id} is damaged") == 1, f"{match_id} logged once:\n{log}"
    check = await asyncio.to_thread(_check, db)
    assert check.returncode == 1, check.stdout + check.stderr
    assert _damaged_in_report(check.stdout) == damaged, check.stdout
    assert "Traceback" not in check.stderr


async def test_check_passes_a_sound_database(built: Built, tmp_path: Path) -> None:
    check = await asyncio.to_thread(_check, _copy(built, tmp_path))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SQLite integrity check: ok" in check.stdout
    assert f"{len(built.records)} finished matches verified" in check.stdout
    assert ", 0 damaged" in check.stdout


async def test_flipped_header_refuses_to_start_in_one_line(built: Built, tmp_path: Path) -> None:
    db = _copy(built, tmp_path)
    with db.open("r+b") as file:
        header = bytearray(file.read(16))
        file.seek(0)
        file.write(bytes(b ^ 0xFF for b in header))  # "SQLite format 3\0" no more
    serve = await asyncio.to_thread(_serve_once, db)
    assert serve.returncode == 1
    assert serve.stderr.strip().count("\n") == 0, serve.stderr
    assert serve.stderr.startswith("error: ") and "not an SQLite database" in serve.stderr
    assert "listening" not in serve.stdout
    check = await asyncio.to_thread(_check, db)
    assert check.returncode == 1 and "cannot be opened" in check.stdout, check.stdout


async def test_truncated_file_refuses_to_start_in_one_line(built: Built, tmp_path: Path) -> None:
    # SQLite cannot use a truncated file at all (its schema points past the end): no server
    # can serve it, so it refuses in one line, and `ziggurat check` says it is damaged.
    db = _copy(built, tmp_path)
    with db.open("r+b") as file:
        file.truncate(db.stat().st_size * 2 // 3 // 4096 * 4096)
    serve = await asyncio.to_thread(_serve_once, db)
    assert serve.returncode == 1
    assert serve.stderr.strip().count("\n") == 0, serve.stderr
    assert serve.stderr.startswith("error: SQLite cannot use the database"), serve.stderr
    check = await asyncio.to_thread(_check, db)
    assert check.returncode == 1, check.stdout
    assert "DAMAGED" in check.stdout


def _events_leaf_page(db: Path) -> int:
    """A leaf page of the events table, in the middle of it."""
    con = sqlite3.connect(db)
    try:
        leaves = [
            int(page)
            for (page,) in con.execute(
                "SELECT pageno FROM dbstat WHERE name='events' AND pagetype='leaf' ORDER BY pageno"
            )
        ]
    except sqlite3.OperationalError:  # an SQLite built without dbstat: the events grew last
        (pages,) = con.execute("PRAGMA page_count").fetchone()
        leaves = [int(pages)]
    finally:
        con.close()
    return leaves[len(leaves) // 2]


@pytest.mark.slow
async def test_garbled_page_serves_what_it_can(built: Built, tmp_path: Path) -> None:
    db = _copy(built, tmp_path)
    page = _events_leaf_page(db)
    with db.open("r+b") as file:
        file.seek((page - 1) * 4096)
        file.write(bytes(4096))  # one page of the event log zeroed: SQLite still opens the file
    server = ServerProcess(db)
    try:
        address = await asyncio.to_thread(server.start)
        lost: set[str] = set()
        async with ZigguratClient(address) as client:
            for match_id in built.summaries:
                try:
                    served = (await client.get_match(match_id)).SerializeToString()
                except ZigguratError as error:
                    assert (error.code, error.reason) == (grpc.StatusCode.DATA_LOSS, "MATCH_DAMAGED"), error
                    lost.add(match_id)
                    continue
                assert served == built.summaries[match_id], "a served match is served as it was"
            listed = {m.match_id for m in await client.list_matches()}
            assert listed == set(built.summaries) - lost
        assert await asyncio.to_thread(server.terminate) == 0
        assert server.proc is not None and server.proc.stderr is not None
        log = server.proc.stderr.read()
    finally:
        server.stop()
    assert "Traceback" not in log, log
    assert "fails SQLite's integrity check" in log
    assert lost, "the matches whose events were on that page are reported"
    assert len(lost) < len(built.summaries), "the others are served"
    check = await asyncio.to_thread(_check, db)
    assert check.returncode == 1, check.stdout
    assert "DAMAGED: SQLite's integrity check found" in check.stdout
    assert lost <= _damaged_in_report(check.stdout), (lost, check.stdout)


NOT_UTF8 = b"\xff\xfe not text \xc3("


def _garble_text(db: Path, roles: dict[str, str]) -> set[str]:
    """Bytes that are not UTF-8 in a text column of five matches' rows (a finished match's
    ``time_control_json``, ``commitment`` and a seat's ``player_name``, an active match's
    ``options_json``, an event's ``kind``); the ids of those matches."""
    garbled = {
        "pylos_finished_changed_move": (
            "UPDATE matches SET time_control_json=CAST(? AS TEXT) WHERE match_id=?",
        ),
        "pylos_finished_deleted_match_row": (
            "UPDATE matches SET commitment=CAST(? AS TEXT) WHERE match_id=?",
        ),
        "kabaleo_finished_changed_outcome": (
            "UPDATE seat_tokens SET player_name=CAST(? AS TEXT) WHERE match_id=? AND seat=1",
        ),
        "pylos_active_changed_move": ("UPDATE matches SET options_json=CAST(? AS TEXT) WHERE match_id=?",),
        "kabaleo_active_deleted_event": (
            "UPDATE events SET kind=CAST(? AS TEXT) WHERE match_id=? AND seq=2",
        ),
    }
    _edit(db, *((sql, (NOT_UTF8, roles[role])) for role, (sql,) in garbled.items()))
    con = sqlite3.connect(db)
    try:  # the bytes are stored as they are: Python's sqlite3 cannot read them back as text
        with pytest.raises(sqlite3.OperationalError, match="Could not decode to UTF-8"):
            con.execute(
                "SELECT * FROM matches WHERE match_id=?", (roles["pylos_finished_changed_move"],)
            ).fetchall()
    finally:
        con.close()
    return {roles[role] for role in garbled}


@pytest.mark.slow
async def test_text_that_is_not_utf8_is_damage_not_unknown(built: Built, tmp_path: Path) -> None:
    """Undecodable text in a row is damage like any other: DATA_LOSS MATCH_DAMAGED on every
    call (it answered UNKNOWN before), the other matches served, ``ziggurat check`` names them."""
    db = _copy(built, tmp_path)
    damaged = _garble_text(db, built.roles)
    server = ServerProcess(db)
    try:
        address = await asyncio.to_thread(server.start)
        await _assert_served(address, built, damaged)
        assert await asyncio.to_thread(server.terminate) == 0
        assert server.proc is not None and server.proc.stderr is not None
        log = server.proc.stderr.read()
    finally:
        server.stop()
    assert "Traceback" not in log, log
    for match_id in damaged:
        assert log.count(f"match {match_id} is damaged") == 1, f"{match_id} logged once:\n{log}"
    check = await asyncio.to_thread(_check, db)
    assert check.returncode == 1, check.stdout + check.stderr
    assert _damaged_in_report(check.stdout) == damaged, check.stdout
    assert "Traceback" not in check.stderr
