"""The log's hash chain finds a history rewritten after it was written, one legal move for another.

Real ``ziggurat serve`` processes, real database files, real ``ziggurat check`` and ``ziggurat
verify`` runs. The rewrite is *consistent*: the replaced move is legal where it stands and
leaves the same seat to move, so replaying the log through the rules accepts it; each test
shows that (the same rewrite without the chain passes) before showing that the chain does not.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format

from tests import processes
from tests.servers import ServerProcess, pylos_config
from ziggurat.rules.registry import get_rules
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat_client import ZigguratError
from ziggurat_client.client import MatchHandle
from ziggurat_client.sync import SyncClient

PLIES = 4


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "ziggurat.cli.main", *args]
    return processes.run(command, capture_output=True, text=True, timeout=120)


def _rules_and_start(db: Path, match_id: str) -> tuple[Any, Any]:
    """The rules and the starting position of a stored match (the operator reads the seed)."""
    with sqlite3.connect(db) as conn:
        game, seats, options, seed = conn.execute(
            "SELECT game, seats, options_json, seed FROM matches WHERE match_id=?", (match_id,)
        ).fetchone()
    rules = get_rules(game)
    return rules, rules.new_game(rules.parse_config(json.loads(options), seats), bytes(seed))


def _play(client: SyncClient, db: Path) -> tuple[str, list[MatchHandle], list[str]]:
    """A Pylos match of two players with PLIES moves played (the first legal move each time)."""
    match = client.create_match(pylos_config())
    handles = [client.join(match.match_id, f"p{i}") for i in range(2)]
    by_seat = {h.seat - 1: h for h in handles}
    rules, state = _rules_and_start(db, match.match_id)
    moves = []
    for _ in range(PLIES):
        move = rules.legal_moves(state)[0]
        client.submit_move(by_seat[rules.to_move(state)], move)
        state = rules.apply(state, move)
        moves.append(move)
    return match.match_id, handles, moves


def _other_legal_move(db: Path, match_id: str, moves: list[str]) -> str:
    """A legal move, not the last one played, that leaves the same seat to move after it."""
    rules, state = _rules_and_start(db, match_id)
    for move in moves[:-1]:
        state = rules.apply(state, move)
    after = rules.to_move(rules.apply(state, moves[-1]))
    return next(
        m
        for m in rules.legal_moves(state)
        if m != moves[-1] and rules.to_move(rules.apply(state, m)) == after
    )


def _rewrite_last_move(db: Path, match_id: str, move: str) -> int:
    """Put ``move`` in place of the match's last stored move, as a rewrite with SQL would."""
    with sqlite3.connect(db) as conn:
        seq, data_json = conn.execute(
            "SELECT seq, data_json FROM events WHERE match_id=? AND kind='move' ORDER BY seq DESC LIMIT 1",
            (match_id,),
        ).fetchone()
        data = json.loads(data_json)
        data["move"] = move
        conn.execute(
            "UPDATE events SET data_json=? WHERE match_id=? AND seq=?",
            (json.dumps(data, separators=(",", ":")), match_id, seq),
        )
    return int(seq)


def test_a_rewritten_legal_move_of_a_live_match_is_found_by_check(tmp_path: Path) -> None:
    db = tmp_path / "z.db"
    server = ServerProcess(db, ["--no-web"])
    server.start()
    try:
        with SyncClient(server.address) as client:
            match_id, _, moves = _play(client, db)
    finally:
        server.kill9()  # the match is live: its log is what a restart would rebuild it from
    assert _cli("check", "--db", str(db), "--quiet").returncode == 0
    seq = _rewrite_last_move(db, match_id, _other_legal_move(db, match_id, moves))
    checked = _cli("check", "--db", str(db), "--quiet")
    assert checked.returncode == 1, checked
    assert f"DAMAGED match {match_id}: the log's hash chain breaks at seq {seq}:" in checked.stdout
    # the server, restarted on it, does not resume the rewritten history: the match is damaged
    again = ServerProcess(db, ["--no-web"])
    again.start()
    try:
        with SyncClient(again.address) as client, pytest.raises(ZigguratError) as refused:
            client.get_match(match_id)
    finally:
        again.stop()
    assert (refused.value.code, refused.value.reason) == (grpc.StatusCode.DATA_LOSS, "MATCH_DAMAGED")
    # the control: the same rewrite in a log without links (unchained) replays as legal
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE events SET chain=NULL WHERE match_id=?", (match_id,))
    unchained = _cli("check", "--db", str(db), "--quiet")
    assert unchained.returncode == 0, unchained


def test_a_rewritten_legal_move_of_a_finished_match_is_found_by_verify(tmp_path: Path) -> None:
    db = tmp_path / "z.db"
    server = ServerProcess(db, ["--no-web"])
    server.start()
    try:
        with SyncClient(server.address) as client:
            match_id, handles, moves = _play(client, db)
            client.resign(handles[0])
            record = client.record(match_id)
        saved = tmp_path / "record.json"
        fetched = _cli("verify", match_id, "--server", server.address, "--save", str(saved))
    finally:
        server.stop()
    assert fetched.returncode == 0, fetched
    assert f"log of {len(record.log)} events chained from the commitment" in fetched.stdout
    assert [e.seq for e in record.log] == list(range(1, len(record.log) + 1))
    # The rewrite, in the record as in the database: the move and the log's text agree.
    other = _other_legal_move(db, match_id, moves)
    tampered = json_format.Parse(saved.read_text(), spb.MatchRecord())
    tampered.moves[-1].move = other
    entry = [e for e in tampered.log if e.kind == "move"][-1]
    data = json.loads(entry.data_json)
    data["move"] = other
    entry.data_json = json.dumps(data, separators=(",", ":"))
    unchained = spb.MatchRecord()
    unchained.CopyFrom(tampered)
    del unchained.log[:]
    (tmp_path / "unchained.json").write_text(json_format.MessageToJson(unchained))
    control = _cli("verify", "--file", str(tmp_path / "unchained.json"))
    assert control.returncode == 0 and "unchained" in control.stdout, control  # replay alone misses it
    (tmp_path / "tampered.json").write_text(json_format.MessageToJson(tampered))
    refused = _cli("verify", "--file", str(tmp_path / "tampered.json"))
    assert refused.returncode == 1, refused
    assert (
        f"NOT verified: match {match_id}: the log's hash chain breaks at event {entry.seq}" in refused.stdout
    )


def _drop_chain_column(db: Path) -> None:
    """Make ``db`` what an older version wrote: an events table without the chain column."""
    with sqlite3.connect(db) as conn:
        conn.executescript(
            """
            CREATE TABLE old_events (match_id TEXT NOT NULL, seq INTEGER NOT NULL, time_ms INTEGER NOT NULL,
                kind TEXT NOT NULL, data_json TEXT NOT NULL, PRIMARY KEY (match_id, seq)) WITHOUT ROWID;
            INSERT INTO old_events SELECT match_id, seq, time_ms, kind, data_json FROM events;
            DROP TABLE events;
            ALTER TABLE old_events RENAME TO events;
            """
        )


def test_an_older_database_goes_on_unchained_and_new_matches_are_chained(tmp_path: Path) -> None:
    db = tmp_path / "z.db"
    server = ServerProcess(db, ["--no-web"])
    server.start()
    with SyncClient(server.address) as client:
        old_id, handles, _ = _play(client, db)
    assert server.terminate() == 0
    _drop_chain_column(db)
    assert _cli("check", "--db", str(db), "--quiet").returncode == 0  # read-only, as it is
    again = ServerProcess(db, ["--no-web"])
    again.start()
    try:
        with SyncClient(again.address) as client:
            client.resign(handles[0])  # the older match goes on after the upgrade
            old = client.record(old_id)
            new_id, new_handles, _ = _play(client, db)
            client.resign(new_handles[1])
            new = client.record(new_id)
        old_verified = _cli("verify", old_id, "--server", again.address)
        new_verified = _cli("verify", new_id, "--server", again.address)
    finally:
        again.stop()
    assert not old.log and old_verified.returncode == 0 and "unchained" in old_verified.stdout, old_verified
    assert new.log and new_verified.returncode == 0 and "chained from the commitment" in new_verified.stdout
    with sqlite3.connect(db) as conn:
        links = dict(conn.execute("SELECT match_id, COUNT(chain) FROM events GROUP BY match_id"))
    assert links == {old_id: 0, new_id: len(new.log)}
    assert _cli("check", "--db", str(db), "--quiet").returncode == 0
