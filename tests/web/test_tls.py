"""TLS on every listener: ``ziggurat tls init`` makes a CA and a server certificate, and
``ziggurat serve --tls-cert/--tls-key`` encrypts the gRPC port and the web port with them.

Real processes where it matters (the CLI, ``ziggurat serve``, a gRPC client and an HTTPS
client that trust only the CA, raw sockets that speak plain HTTP or nothing at all), and an
in-process server for the web port's limits under TLS.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import ssl
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

from tests import processes
from tests.servers import ServerProcess, pylos_config, random_chooser
from ziggurat.hosting.mdns import HTTPS_SERVICE_TYPE
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat_client import ZigguratClient, ZigguratError

ZIGGURAT = [sys.executable, "-m", "ziggurat.cli.main"]


def tls_init(directory: Path, *hosts: str, force: bool = False) -> subprocess.CompletedProcess[str]:
    command = [*ZIGGURAT, "tls", "init", "--dir", str(directory)]
    for host in hosts:
        command.append(f"--host={host}")
    if force:
        command.append("--force")
    return processes.run(command, capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("tls")
    done = tls_init(directory, "ziggurat.lan", "192.0.2.7")
    assert done.returncode == 0, done.stderr
    return directory


@pytest.fixture(scope="module")
def served(certs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """A real ``ziggurat serve`` with TLS, both ports on loopback."""
    extra = [
        "--tls-cert",
        str(certs / "server.pem"),
        "--tls-key",
        str(certs / "server.key"),
        "--http-port",
        "0",
    ]
    process = ServerProcess(tmp_path_factory.mktemp("served") / "z.db", extra)
    process.start()
    yield process
    process.stop()


def trusting(certs: Path) -> ssl.SSLContext:
    """An HTTPS client's context that trusts the CA and nothing else."""
    return ssl.create_default_context(cafile=str(certs / "ca.pem"))


def connect_json(url: str, method: str, body: dict[str, Any], context: ssl.SSLContext | None) -> Any:
    """One Connect unary call with a JSON body over urllib (HTTPS with ``context``)."""
    request = urllib.request.Request(
        f"{url}ziggurat.v1.MatchService/{method}",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10, context=context) as response:
        return json.loads(response.read())


def port_of(url: str) -> int:
    return int(url.rstrip("/").rsplit(":", 1)[1])


def read_all(sock: socket.socket, timeout: float = 10) -> bytes:
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data


# --- ziggurat tls init -------------------------------------------------------------------


def test_tls_init_writes_a_ca_and_a_server_certificate_it_signs(certs: Path) -> None:
    assert sorted(p.name for p in certs.iterdir()) == ["ca.pem", "server.key", "server.pem"]  # no CA key
    assert stat.S_IMODE((certs / "server.key").stat().st_mode) == 0o600
    assert stat.S_IMODE((certs / "ca.pem").stat().st_mode) == 0o644
    ca = x509.load_pem_x509_certificate((certs / "ca.pem").read_bytes())
    server = x509.load_pem_x509_certificate((certs / "server.pem").read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    constraints = server.extensions.get_extension_for_class(x509.BasicConstraints).value
    assert not constraints.ca  # an end entity: rustls refuses a CA as the server's certificate
    assert server.issuer == ca.subject
    server.verify_directly_issued_by(ca)
    usage = server.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in usage
    san = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["ziggurat.lan", "localhost"]
    assert [str(a) for a in san.get_values_for_type(x509.IPAddress)] == ["192.0.2.7", "127.0.0.1", "::1"]


def test_tls_init_keeps_files_already_there_unless_forced(certs: Path, tmp_path: Path) -> None:
    first = tls_init(tmp_path, "a.lan")
    assert first.returncode == 0, first.stderr
    assert "ca.pem" in first.stdout and "root_certificates" in first.stdout  # how clients trust it
    before = (tmp_path / "ca.pem").read_bytes()
    again = tls_init(tmp_path, "a.lan")
    assert again.returncode == 2 and "exists" in again.stderr and "--force" in again.stderr
    assert (tmp_path / "ca.pem").read_bytes() == before
    (tmp_path / "server.key").chmod(0o644)
    forced = tls_init(tmp_path, "a.lan", force=True)
    assert forced.returncode == 0, forced.stderr
    assert (tmp_path / "ca.pem").read_bytes() != before
    assert stat.S_IMODE((tmp_path / "server.key").stat().st_mode) == 0o600


@pytest.mark.parametrize("host", ["bad host", "-x.lan", "a..b", "x" * 64 + ".lan"])
def test_tls_init_refuses_a_host_that_is_neither_a_name_nor_an_address(host: str, tmp_path: Path) -> None:
    done = tls_init(tmp_path / "d", host)
    assert done.returncode == 2
    assert done.stderr.startswith("error: --host") and "Traceback" not in done.stderr
    assert not (tmp_path / "d").exists()


# --- a real server with TLS on both ports ---------------------------------------------------


def test_the_banner_gives_the_web_port_as_https(served: ServerProcess) -> None:
    assert served.web_url.startswith("https://127.0.0.1:"), served.web_url


def test_plain_http_to_the_web_port_gets_no_answer(served: ServerProcess) -> None:
    body = b"{}"
    request = (
        b"POST /ziggurat.v1.MatchService/ListBuiltinBots HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        b"content-type: application/json\r\ncontent-length: 2\r\n\r\n" + body
    )
    with socket.create_connection(("127.0.0.1", port_of(served.web_url)), timeout=10) as sock:
        sock.sendall(request)
        answer = read_all(sock)
    assert not answer.startswith(b"HTTP/") and b"bots" not in answer, answer[:200]
    plain = served.web_url.replace("https://", "http://")
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        connect_json(plain, "ListBuiltinBots", {}, None)


def test_https_connect_calls_work_with_the_ca_and_only_with_it(served: ServerProcess, certs: Path) -> None:
    created = connect_json(
        served.web_url, "CreateMatch", {"config": {"game": "GAME_PYLOS", "seats": 2}}, trusting(certs)
    )
    match_id = created["match"]["matchId"]
    joined = connect_json(
        served.web_url, "JoinMatch", {"matchId": match_id, "playerName": "web"}, trusting(certs)
    )
    assert joined["token"]  # a seat token, which now never crosses the network in the clear
    by_name = served.web_url.replace("127.0.0.1", "localhost")  # the DNS name in the certificate
    assert (
        connect_json(by_name, "GetMatch", {"matchId": match_id}, trusting(certs))["match"]["matchId"]
        == match_id
    )
    with pytest.raises(urllib.error.URLError) as refused:
        connect_json(served.web_url, "GetMatch", {"matchId": match_id}, ssl.create_default_context())
    assert isinstance(refused.value.reason, ssl.SSLCertVerificationError)


async def test_the_grpc_client_plays_with_the_ca_and_plain_text_is_refused(
    served: ServerProcess, certs: Path
) -> None:
    ca = (certs / "ca.pem").read_bytes()
    async with ZigguratClient(served.address, root_certificates=ca) as client:
        match = await client.create_match(pylos_config(max_moves=20))
        seats = [await client.join(match.match_id, f"p{i}") for i in range(2)]
        ended = await asyncio.wait_for(
            asyncio.gather(*(client.play(seat, random_chooser(i)) for i, seat in enumerate(seats))), 60
        )
        assert all(e.HasField("outcome") for e in ended)
    async with ZigguratClient(served.address) as plain:
        with pytest.raises(ZigguratError) as refused:
            await plain.list_builtin_bots()
        assert refused.value.code.name == "UNAVAILABLE"


# --- the flags ------------------------------------------------------------------------------


def test_insecure_web_serves_plain_http_beside_tls_and_says_so(certs: Path, tmp_path: Path) -> None:
    tls = ["--tls-cert", str(certs / "server.pem"), "--tls-key", str(certs / "server.key")]
    process = ServerProcess(tmp_path / "z.db", [*tls, "--http-port", "0", "--insecure-web"])
    process.start()
    try:
        assert process.web_url.startswith("http://127.0.0.1:"), process.web_url
        bots = connect_json(process.web_url, "ListBuiltinBots", {}, None)
        assert bots["bots"]
        process.stop()  # the warning was logged before the web client's line was printed
        assert process.proc is not None and process.proc.stderr is not None
        log = process.proc.stderr.read()
        warnings = [line for line in log.splitlines() if "WARNING" in line and "--insecure-web" in line]
        assert len(warnings) == 1 and "plain HTTP" in warnings[0], log
    finally:
        process.stop()


def _serve_command(tmp_path: Path, *extra: str) -> list[str]:
    command = [*ZIGGURAT, "serve", "--host", "127.0.0.1", "--port", "0", "--no-mdns"]
    return [*command, "--db", str(tmp_path / "z.db"), *extra]


@pytest.mark.parametrize("workers", [[], ["--workers", "2"]])
def test_insecure_web_without_tls_is_refused(workers: list[str], tmp_path: Path) -> None:
    command = _serve_command(tmp_path, *workers, "--insecure-web")
    done = processes.run(command, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2
    assert "--insecure-web only applies with --tls-cert" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
async def test_with_workers_the_shared_web_port_speaks_https_too(certs: Path, tmp_path: Path) -> None:
    """``--workers 2`` with TLS: every worker serves the shared web port as HTTPS (a call about
    the other worker's match forwarded there), their own gRPC ports with TLS; plain HTTP to the
    web port gets nothing."""
    tls = ["--tls-cert", str(certs / "server.pem"), "--tls-key", str(certs / "server.key")]
    command = _serve_command(tmp_path, "--workers", "2", "--http-port", "0", "--grace", "1", *tls)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = processes.popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(3)]
        assert lines[2].startswith("ziggurat web client on https://127.0.0.1:"), lines
        web = lines[2].split()[-1]
        ports = lines[1].split("own ports ", 1)[1].rstrip(")\n").split(", ")
        ca = (certs / "ca.pem").read_bytes()
        made: dict[str, str] = {}
        for address in [f"127.0.0.1:{port}" for port in ports]:
            async with ZigguratClient(address, root_certificates=ca) as client:
                made[(await client.create_match(pylos_config())).match_id] = address
        for match_id, owner in made.items():
            for _ in range(4):  # a fresh connection each time: the kernel picks either worker
                got = await asyncio.to_thread(
                    connect_json, web, "GetMatch", {"matchId": match_id}, trusting(certs)
                )
                assert got["match"]["matchId"] == match_id and got["match"]["serverAddress"] == owner
        with socket.create_connection(("127.0.0.1", port_of(web)), timeout=10) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
            assert not read_all(sock).startswith(b"HTTP/")
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(30)
        processes.stop(proc)


def test_a_key_that_is_not_the_certificates_is_refused_at_start(certs: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    assert tls_init(other).returncode == 0
    command = [
        *ZIGGURAT,
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--no-mdns",
        "--db",
        str(tmp_path / "z.db"),
    ]
    command += ["--tls-cert", str(certs / "server.pem"), "--tls-key", str(other / "server.key")]
    done = processes.run(command, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 1, done.stderr
    (line,) = done.stderr.strip().splitlines()  # one line: gRPC's own lines never come
    assert line.startswith("error: cannot use the TLS files (--tls-cert, --tls-key)"), line
    assert "KEY_VALUES_MISMATCH" in line


# --- the web port's limits under TLS (in process) ------------------------------------------


async def _tls_server(tmp_path: Path, certs: Path, **options: Any) -> ZigguratServer:
    base = ServeOptions(
        host="127.0.0.1",
        port=0,
        http_port=0,
        db_path=str(tmp_path / "z.db"),
        grace_seconds=0.3,
        tls_cert=str(certs / "server.pem"),
        tls_key=str(certs / "server.key"),
    )
    server = ZigguratServer(replace(base, **options))
    await server.start()
    return server


async def _https_ok(port: int, certs: Path) -> bool:
    url = f"https://127.0.0.1:{port}/"
    return bool(
        await asyncio.to_thread(connect_json, url, "ListBuiltinBots", {}, trusting(certs)) is not None
    )


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> float:
    """Seconds until the server closed the connection (reading EOF or a reset)."""
    started = time.monotonic()
    with contextlib.suppress(ConnectionResetError):
        await asyncio.wait_for(reader.read(), seconds)
    return time.monotonic() - started


async def test_silent_connections_are_counted_from_accept_before_any_tls_handshake(
    tmp_path: Path, certs: Path
) -> None:
    server = await _tls_server(tmp_path, certs, max_web_connections_per_address=3, handshake_timeout=30)
    assert server.http_port
    try:
        silent = [await asyncio.open_connection("127.0.0.1", server.http_port) for _ in range(3)]
        await asyncio.sleep(0.2)
        reader, _ = await asyncio.open_connection("127.0.0.1", server.http_port)
        assert await _closed_within(reader, 5) < 5  # one more, closed at once, nothing read
        with pytest.raises(urllib.error.URLError):
            await _https_ok(server.http_port, certs)
        for _, writer in silent:
            writer.close()
        await asyncio.sleep(0.3)
        assert await _https_ok(server.http_port, certs)
    finally:
        await server.stop()


async def test_the_handshake_timeout_covers_the_tls_handshake_and_the_first_request(
    tmp_path: Path, certs: Path
) -> None:
    server = await _tls_server(tmp_path, certs, handshake_timeout=0.5)
    assert server.http_port
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.http_port)  # no ClientHello
        assert await _closed_within(reader, 10) < 5
        writer.close()
        # A TLS connection that completes its handshake and sends no request is closed too.
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", server.http_port, ssl=trusting(certs), server_hostname="localhost"
        )
        assert await _closed_within(reader, 10) < 5
        writer.close()
        assert await _https_ok(server.http_port, certs)
    finally:
        await server.stop()


async def test_a_handshake_under_way_does_not_hold_up_shutdown(tmp_path: Path, certs: Path) -> None:
    server = await _tls_server(tmp_path, certs, handshake_timeout=60)
    assert server.http_port
    _, writer = await asyncio.open_connection("127.0.0.1", server.http_port)
    await asyncio.sleep(0.2)
    started = time.monotonic()
    await asyncio.wait_for(server.stop(), 20)
    assert time.monotonic() - started < 10
    writer.close()


async def test_the_web_client_is_announced_as_an_https_site(tmp_path: Path, certs: Path) -> None:
    server = await _tls_server(tmp_path, certs, mdns=True)
    try:
        assert server.advertiser is not None and server.advertiser.http_info is not None
        await server.advertiser.wait_announced()
        zc = AsyncZeroconf(interfaces=["127.0.0.1"])
        try:
            https = AsyncServiceInfo(HTTPS_SERVICE_TYPE, server.advertiser.http_info.name)
            assert await https.async_request(zc.zeroconf, 3000)
            assert https.port == server.http_port
            grpc_info = AsyncServiceInfo(server.advertiser.info.type, server.advertiser.info.name)
            assert await grpc_info.async_request(zc.zeroconf, 3000)
            assert grpc_info.properties[b"tls"] == b"1"
            assert grpc_info.properties[b"https"] == str(server.http_port).encode()
            assert b"http" not in grpc_info.properties  # a reader of `http` would talk in the clear
        finally:
            await zc.async_close()
    finally:
        await server.stop()
