"""The thin client installs on its own (grpcio + protobuf only) and plays against a real server.

A bot author's machine has no server code: this builds the ``ziggurat-client`` wheel from
``clients/python``, installs it into a fresh venv (versions constrained to the lock; pip's
own cache makes the second run offline and quick), checks what got installed, and runs a
program in that venv, in isolated mode from a directory outside the repository, that plays
a whole Pylos match on a ``ziggurat serve`` subprocess.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.service.conftest import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
CLIENT_SOURCE = ROOT / "clients" / "python"
# What a clean install may contain besides the client: its two dependencies and theirs
# (grpcio needs typing-extensions), plus what `python -m venv` itself puts there.
ALLOWED = {"ziggurat-client", "grpcio", "protobuf", "typing-extensions", "pip", "setuptools"}

pytestmark = pytest.mark.slow


def _run(cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kwargs)  # type: ignore[call-overload]
    assert result.returncode == 0, f"{cmd} failed:\n{result.stdout}\n{result.stderr}"
    return result  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def thin_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with only the thin client installed (from a wheel built here)."""
    work = tmp_path_factory.mktemp("thin")
    source = work / "source"
    # Build from a copy: a build writes build/ and *.egg-info next to the sources.
    shutil.copytree(
        CLIENT_SOURCE, source, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    )
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", str(source)],
        cwd=work,
    )
    (wheel,) = work.glob("ziggurat_client-*.whl")
    lock = (ROOT / "requirements" / "dev.lock").read_text()
    pins = re.findall(r"^([A-Za-z0-9_.-]+==[^ \\\n]+)", lock, re.M)
    constraints = work / "constraints.txt"
    constraints.write_text("\n".join(pins) + "\n")
    venv = work / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check"]
    _run([*pip, "-c", str(constraints), str(wheel)])
    return venv


def test_only_grpcio_and_protobuf_come_with_it(thin_venv: Path) -> None:
    listed = _run([str(thin_venv / "bin" / "pip"), "list", "--format=json", "--disable-pip-version-check"])
    names = {entry["name"].lower().replace("_", "-") for entry in json.loads(listed.stdout)}
    assert {"ziggurat-client", "grpcio", "protobuf"} <= names
    assert names <= ALLOWED, f"unexpected packages in a thin install: {sorted(names - ALLOWED)}"


PLAY = textwrap.dedent(
    """
    import asyncio, sys
    from ziggurat_client import ZigguratClient
    from ziggurat_client.random_bot import RandomBot
    from ziggurat_client.runner import SeatRunner
    from ziggurat_client.v1 import game_pb2

    async def main(address):
        async with ZigguratClient(address) as client:
            match = await client.create_match(game_pb2.GameConfig(game=game_pb2.GAME_PYLOS, seats=2))
            light = await client.join(match.match_id, "light")
            dark = await client.join(match.match_id, "dark")
            results = await asyncio.gather(
                SeatRunner(client, light, RandomBot(seed=1)).run(),
                SeatRunner(client, dark, RandomBot(seed=2)).run(),
            )
            record = await client.record(match.match_id)
            print("ranks", list(results[0].outcome.ranks), "moves", len(record.moves))

    asyncio.run(main(sys.argv[1]))
    server_modules = sorted(m for m in sys.modules if m == "ziggurat" or m.startswith("ziggurat."))
    print("server modules", server_modules)
    """
)


def test_plays_a_whole_match_on_a_real_server(thin_venv: Path, tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "z.db")
    address = server.start()
    try:
        script = tmp_path / "play.py"
        script.write_text(PLAY)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        out = _run([str(thin_venv / "bin" / "python"), "-I", str(script), address], cwd=tmp_path, env=env)
    finally:
        server.stop()
    ranks = re.search(r"ranks \[(\d), (\d)\] moves (\d+)", out.stdout)
    assert ranks is not None, out.stdout
    assert sorted(int(r) for r in ranks.groups()[:2]) in ([1, 2], [1, 1])
    assert int(ranks.group(3)) > 10
    assert "server modules []" in out.stdout
    # The venv really is separate: the server package is not importable there.
    probe = subprocess.run(
        [str(thin_venv / "bin" / "python"), "-I", "-c", "import ziggurat"], capture_output=True, cwd=tmp_path
    )
    assert probe.returncode != 0
