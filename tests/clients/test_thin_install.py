"""The thin client on its own: clients/python/README.md's quick start, word for word.

A bot author's machine has no server code. In a copy of the repository's ``clients/python``
this runs the README's commands: a fresh venv, ``pip install ./clients/python`` (grpcio,
protobuf and the build backend come, with no index, from the wheels scripts/bootstrap put in
.venv/wheelhouse: the versions requirements/dev.lock pins, within the client's ranges; no test
downloads anything), then the README's ``mybot.py`` twice — one creates a match, the other joins it — on a
real ``ziggurat serve`` subprocess, each in isolated mode from outside the repository. It also
checks what got installed, that no server module was loaded, and the remote-bot loop.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import processes
from tests.cli.test_bot_invite import _connected, _play_human
from tests.servers import ServerProcess
from ziggurat_client import ZigguratClient, game_config

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "clients" / "python" / "README.md"
DOCUMENTED_ADDRESS = "127.0.0.1:50051"
# What a clean install may contain besides the client: its two dependencies and theirs
# (grpcio needs typing-extensions), plus what `python -m venv` itself puts there.
ALLOWED = {"ziggurat-client", "grpcio", "protobuf", "typing-extensions", "pip", "setuptools"}

pytestmark = pytest.mark.slow


def _readme_blocks() -> tuple[list[list[str]], str]:
    """(the README's sh blocks as command lines, the quick start's mybot.py)."""
    # The "Enter a standing arena" blocks are tests/arena/test_arena_polyglot.py's.
    text = re.sub(
        r"<!-- arena-test: [^>]*-->\n( *)```\w+\n.*?^\1```", "", README.read_text(), flags=re.M | re.S
    )
    blocks = re.findall(r"^( *)```(\w+)\n(.*?)^\1```", text, re.M | re.S)
    commands = [
        [line.strip() for line in body.splitlines() if line.strip()]
        for _, lang, body in blocks
        if lang == "sh"
    ]
    marked = re.search(r"<!-- quickstart: mybot.py -->\n( *)```python\n(.*?)^\1```", text, re.M | re.S)
    assert marked is not None, "the quick start's python block is marked <!-- quickstart: mybot.py -->"
    return commands, textwrap.dedent(marked.group(2))


WHEELHOUSE = Path(sys.prefix) / "wheelhouse"  # scripts/bootstrap fills it


def _env() -> dict[str, str]:
    """The environment of a bot author's shell: none of this repository's Python settings; its
    ``python3`` is the one running the tests (the wheelhouse's wheels are for it), and pip
    installs from the wheelhouse only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_"))}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return {**env, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(WHEELHOUSE)}


def _shell(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    result = processes.run(
        ["bash", "-euo", "pipefail", "-c", command],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A bot author's checkout after step 2 of the quick start (the venv is bot-venv/)."""
    commands, mybot = _readme_blocks()
    serve, install, first, second = commands
    assert serve == [f"./scripts/serve --port {DOCUMENTED_ADDRESS.split(':')[1]} --db /tmp/ziggurat.db"]
    assert install == ["python3 -m venv bot-venv", "bot-venv/bin/pip install ./clients/python"]
    assert first == [f"bot-venv/bin/python mybot.py {DOCUMENTED_ADDRESS}"]
    assert second == [f"bot-venv/bin/python mybot.py {DOCUMENTED_ADDRESS} MATCH_ID"]
    if not any(WHEELHOUSE.glob("grpcio-*.whl")):
        pytest.fail(f"{WHEELHOUSE} has no wheels: run scripts/bootstrap")
    root = tmp_path_factory.mktemp("checkout")
    # The client's sources as a checkout has them (a build writes build/ and *.egg-info there).
    shutil.copytree(
        ROOT / "clients" / "python",
        root / "clients" / "python",
        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"),
    )
    for command in install:
        _shell(command, root)
    (root / "mybot.py").write_text(mybot)
    return root


def test_only_grpcio_and_protobuf_come_with_it(checkout: Path) -> None:
    listed = _shell("bot-venv/bin/pip list --format=json --disable-pip-version-check", checkout)
    names = {entry["name"].lower().replace("_", "-") for entry in json.loads(listed.stdout)}
    assert {"ziggurat-client", "grpcio", "protobuf"} <= names
    assert names <= ALLOWED, f"unexpected packages in a thin install: {sorted(names - ALLOWED)}"
    probe = processes.run(
        [str(checkout / "bot-venv" / "bin" / "python"), "-I", "-c", "import ziggurat"],
        capture_output=True,
        cwd=checkout,
        env=_env(),
    )
    assert probe.returncode != 0, "the server package must not be importable in the bot's venv"


def test_the_quick_start_bots_play_a_match_on_a_real_server(checkout: Path, tmp_path: Path) -> None:
    commands, _ = _readme_blocks()
    server = ServerProcess(tmp_path / "z.db")
    address = server.start()
    try:
        first = commands[2][0].replace(DOCUMENTED_ADDRESS, address)
        creator = processes.popen(
            ["bash", "-c", first],
            cwd=checkout,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert creator.stdout is not None
        line = creator.stdout.readline()
        assert line.startswith("created match "), line + (creator.stderr.read() if creator.stderr else "")
        match_id = line.split()[2]
        second = commands[3][0].replace(DOCUMENTED_ADDRESS, address).replace("MATCH_ID", match_id)
        joiner = _shell(second, checkout)
        out, err = creator.communicate(timeout=120)
        assert creator.returncode == 0, err
    finally:
        server.stop()
    for output in (out, joiner.stdout):
        assert re.search(r"ranks by seat: \[\d, \d\] - mine: \d", output), output


REMOTE = textwrap.dedent(
    """
    import asyncio, sys
    from ziggurat_client import RandomBot, RemoteBot, ZigguratClient

    async def main(address):
        async with ZigguratClient(address) as client:
            bot = RemoteBot(
                client, lambda assignment: RandomBot(assignment.bot_seed), name="thin", token="thin-secret",
                games=["pylos"], max_matches=2, on_registered=lambda: print("registered", flush=True),
            )
            serving = asyncio.create_task(bot.run())
            while len(bot.played) < 2 or bot.busy:
                await asyncio.sleep(0.05)
            serving.cancel()
            print("played", len(bot.played))

    asyncio.run(main(sys.argv[1]))
    server_modules = sorted(m for m in sys.modules if m == "ziggurat" or m.startswith("ziggurat."))
    print("server modules", server_modules)
    """
)


async def test_the_remote_bot_loop_plays_two_invitations_at_once(checkout: Path, tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "z.db")
    address = server.start()
    script = tmp_path / "remote.py"
    script.write_text(REMOTE)
    python = str(checkout / "bot-venv" / "bin" / "python")
    bot = processes.popen(
        [python, "-I", str(script), address], cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, text=True
    )
    try:
        async with ZigguratClient(address) as client:
            await _connected(client, "thin")
            humans = []
            for _ in range(2):
                match = await client.create_match(game_config("pylos"))
                humans.append(await client.join(match.match_id, "human"))
                await client.invite_bot(match.match_id, "thin")
            ended = await asyncio.wait_for(asyncio.gather(*(_play_human(client, h) for h in humans)), 120)
            assert len(ended) == 2
        out, _ = bot.communicate(timeout=60)
    finally:
        processes.stop(bot)
        server.stop()
    assert "played 2" in out and "server modules []" in out, out
