"""Commit-reveal: the published commitment, the reveal at the end, and record verification."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from google.protobuf import json_format

from tests import processes
from tests.servers import ServerProcess, kabaleo_config, pylos_config, random_chooser
from ziggurat.rules.seeding import commitment
from ziggurat.v1 import game_pb2, match_service_pb2
from ziggurat.verify import verify_record
from ziggurat_client import ZigguratClient


async def _finished_record(address: str, config: game_pb2.GameConfig) -> match_service_pb2.MatchRecord:
    async with ZigguratClient(address) as client:
        match = await client.create_match(config)
        assert len(match.seed_commitment) == 64 and not match.revealed_seed
        handles = [await client.join(match.match_id, f"p{i}") for i in range(config.seats)]
        try:
            await client.record(match.match_id)
        except Exception as error:
            assert getattr(error, "reason", None) == "NOT_FINISHED"
        else:
            raise AssertionError("a running match's record (with its seed) was served")
        await asyncio.gather(*(client.play(h, random_chooser(h.seat)) for h in handles))
        record = await client.record(match.match_id)
        assert record.seed_commitment == match.seed_commitment
        assert commitment(bytes.fromhex(record.revealed_seed)) == match.seed_commitment
        return record


def _tampered(record: match_service_pb2.MatchRecord) -> dict[str, match_service_pb2.MatchRecord]:
    out = {}
    seed = match_service_pb2.MatchRecord()
    seed.CopyFrom(record)
    seed.revealed_seed = ("00" if record.revealed_seed[:2] != "00" else "11") + record.revealed_seed[2:]
    out["seed"] = seed
    move = match_service_pb2.MatchRecord()
    move.CopyFrom(record)
    move.moves[3].move = "R99"  # no such stack / not Pylos notation
    out["move"] = move
    swapped = match_service_pb2.MatchRecord()
    swapped.CopyFrom(record)
    swapped.moves[4].seat, swapped.moves[5].seat = swapped.moves[5].seat, swapped.moves[4].seat
    out["swapped seats"] = swapped
    outcome = match_service_pb2.MatchRecord()
    outcome.CopyFrom(record)
    outcome.outcome.ranks[:] = (
        list(reversed(outcome.outcome.ranks)) if len(set(outcome.outcome.ranks)) > 1 else [1, 2]
    )
    out["outcome"] = outcome
    truncated = match_service_pb2.MatchRecord()
    truncated.CopyFrom(record)
    del truncated.moves[-1]
    out["truncated"] = truncated
    return out


async def test_records_verify_and_tampering_is_caught(server_process: ServerProcess) -> None:
    address = server_process.start()
    for config in (pylos_config(), kabaleo_config(4)):
        record = await _finished_record(address, config)
        assert verify_record(record).ok
        for what, bad in _tampered(record).items():
            verdict = verify_record(bad)
            assert not verdict.ok, what
            assert verdict.problem


async def test_verify_command_against_a_server_and_a_file(
    server_process: ServerProcess, tmp_path: Path
) -> None:
    address = server_process.start()
    record = await _finished_record(address, kabaleo_config(3))
    saved = tmp_path / "record.json"
    cli = [sys.executable, "-m", "ziggurat.cli.main", "verify"]
    ok = processes.run(
        [*cli, record.match_id, "--server", address, "--save", str(saved)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("verified:")
    assert saved.exists()
    again = processes.run([*cli, "--file", str(saved)], capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stdout + again.stderr
    bad = _tampered(json_format.Parse(saved.read_text(), match_service_pb2.MatchRecord()))["move"]
    saved.write_text(json_format.MessageToJson(bad))
    refused = processes.run([*cli, "--file", str(saved)], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1
    assert "NOT verified" in refused.stdout and "not legal" in refused.stdout
