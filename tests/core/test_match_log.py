"""The match log of a real server: moves only at DEBUG, the match's milestones at INFO."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.servers import ServerProcess, pylos_config, random_chooser
from ziggurat_client import ZigguratClient


async def _play_one(address: str) -> tuple[str, int]:
    """A whole Pylos match between two random bots; its id and the number of moves played."""
    async with ZigguratClient(address) as client:
        match = await client.create_match(pylos_config())
        handles = [await client.join(match.match_id, name) for name in ("a", "b")]
        await asyncio.gather(*(client.play(h, random_chooser(h.seat)) for h in handles))
        final = await client.get_match(match.match_id)
        return match.match_id, final.view.ply


@pytest.mark.parametrize("level", ["info", "debug"])
async def test_moves_are_logged_only_at_debug(tmp_path: Path, level: str) -> None:
    server = ServerProcess(tmp_path / "z.db", ["--no-web", "--log-level", level])
    server.start()
    try:
        match_id, plies = await _play_one(server.address)
        assert server.terminate() == 0
        assert server.proc is not None and server.proc.stderr is not None
        lines = [line for line in server.proc.stderr.read().splitlines() if f"match {match_id}" in line]
    finally:
        server.stop()
    played = [line for line in lines if " played " in line]
    assert any(" started: " in line for line in lines), lines
    assert any(" ended: " in line for line in lines), lines
    assert len(played) == (plies if level == "debug" else 0), played
