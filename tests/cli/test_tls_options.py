"""``--ca FILE`` and ``--tls`` on the commands that call a server: a real ``ziggurat serve
--tls-cert`` with the certificate ``ziggurat tls init`` makes, the commands as subprocesses."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import processes
from tests.servers import ServerProcess

CLI = [sys.executable, "-m", "ziggurat.cli.main"]


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[ServerProcess, Path]]:
    made = processes.run(
        [*CLI, "tls", "init", "--dir", str(tmp_path / "tls")], capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr
    tls = tmp_path / "tls"
    server = ServerProcess(
        tmp_path / "z.db",
        ["--no-web", "--tls-cert", str(tls / "server.pem"), "--tls-key", str(tls / "server.key")],
    )
    server.start()
    yield server, tls / "ca.pem"
    server.stop()


@pytest.mark.slow
def test_bot_and_verify_play_and_check_a_match_over_tls_with_the_ca(
    tls_server: tuple[ServerProcess, Path], tmp_path: Path
) -> None:
    server, ca = tls_server
    bot = [*CLI, "bot", "random", "--server", server.address, "--ca", str(ca)]
    creator = processes.popen(
        [*bot, "--create", "pylos"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert creator.stdout is not None
    first = creator.stdout.readline()
    assert first.startswith("created match "), first + (creator.stderr.read() if creator.stderr else "")
    match_id = first.split()[2]
    joiner = processes.run([*bot, "--match", match_id], capture_output=True, text=True, timeout=120)
    _, err = creator.communicate(timeout=120)
    assert joiner.returncode == 0 and creator.returncode == 0, joiner.stderr[-2000:] + err[-2000:]
    verify = processes.run(
        [*CLI, "verify", match_id, "--server", server.address, "--ca", str(ca)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert verify.returncode == 0 and verify.stdout.startswith(f"verified: match {match_id}"), verify.stderr
    # Plain text is not answered by a TLS server: the command says so and fails.
    plain = processes.run(
        [*CLI, "verify", match_id, "--server", server.address], capture_output=True, text=True, timeout=60
    )
    assert plain.returncode == 2 and plain.stderr.startswith("error: UNAVAILABLE"), plain.stderr
    # --tls trusts the system's authorities, which never signed ziggurat tls init's CA.
    system = processes.run(
        [*CLI, "verify", match_id, "--server", server.address, "--tls"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    said = system.stderr.strip().splitlines()[-1]  # after gRPC core's own line about the handshake
    assert system.returncode == 2 and said.startswith("error: UNAVAILABLE"), system.stderr
    assert "CERTIFICATE_VERIFY_FAILED" in said


@pytest.mark.parametrize(
    ("command", "exit_code"),
    [
        (["verify", "0123456789abcdef"], 2),
        (["bot", "random", "--match", "0123456789abcdef"], 2),
        (["bot", "invite", "someone", "--match", "0123456789abcdef"], 2),
        (["bridge", "--match", "0123456789abcdef", "--token", "t", "CA", "--", "true"], 2),
        (["watch", "0123456789abcdef", "--server", "127.0.0.1:1"], 2),
    ],
)
def test_a_ca_file_that_cannot_be_used_is_one_line(
    tmp_path: Path, command: list[str], exit_code: int
) -> None:
    not_pem = tmp_path / "ca.pem"
    not_pem.write_text("not a certificate\n")
    for ca, says in (
        (tmp_path / "missing.pem", f"cannot read --ca {tmp_path / 'missing.pem'}: No such file or directory"),
        (not_pem, f"--ca {not_pem} holds no PEM certificate (-----BEGIN CERTIFICATE-----)"),
    ):
        where = command.index("CA") if "CA" in command else len(command)
        line = [*command[:where], "--ca", str(ca), *command[where + 1 :]]
        done = processes.run([*CLI, *line], capture_output=True, text=True, timeout=60)
        assert done.returncode == exit_code, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].endswith(says), done.stderr
