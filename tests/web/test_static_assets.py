"""The built browser client shipped in the package: fresh, served, and announced.

``clients/web/build.mjs`` writes ``build-info.json`` with a SHA-256 over every build input;
recomputing it here (no Node needed) makes a source edit without a rebuild fail the suite.
``clients/web/test.sh`` additionally rebuilds and compares byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

from tests import processes
from ziggurat.hosting.mdns import HTTP_SERVICE_TYPE
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.web.app import load_static

REPO = Path(__file__).resolve().parents[2]
WEB = REPO / "clients" / "web"
STATIC = REPO / "server" / "ziggurat" / "web" / "static"
INPUTS = ["src", "public", "package-lock.json", "build.mjs", "tsconfig.json"]


def _files(path: Path) -> list[Path]:
    """Every file under ``path``, through symbolic links (``src/gen`` is one) as Node's statSync does."""
    if not path.is_dir():
        return [path]
    found = []
    for top, _, names in os.walk(path, followlinks=True):
        found.extend(Path(top) / name for name in names)
    return found


def _inputs_digest() -> str:
    """The same digest as build.mjs's inputsDigest()."""
    files: list[Path] = []
    for name in INPUTS:
        files.extend(_files(WEB / name))
    digest = hashlib.sha256()
    for path in sorted(files, key=lambda p: str(p)):
        digest.update(f"{path.relative_to(WEB).as_posix()}\n".encode())
        digest.update(path.read_bytes())
        digest.update(b"\n")
    return digest.hexdigest()


def test_built_assets_match_the_sources() -> None:
    info = json.loads((STATIC / "build-info.json").read_text())
    assert info["inputs_sha256"] == _inputs_digest(), (
        "clients/web changed: run `npm run build` in clients/web"
    )
    assert {"index.html", "app.js", "app.css"} <= {p.name for p in STATIC.iterdir()}


def test_the_package_ships_the_assets() -> None:
    static = load_static()
    assert static["/index.html"][1] == "text/html; charset=utf-8"
    assert static["/app.js"][1].startswith(("application/javascript", "text/javascript"))
    assert b'<script type="module" src="/app.js">' in static["/index.html"][0]


@pytest.fixture
async def web(tmp_path: Path) -> AsyncIterator[ZigguratServer]:
    server = ZigguratServer(
        ServeOptions(host="127.0.0.1", port=0, http_port=0, db_path=str(tmp_path / "z.db"), grace_seconds=0.2)
    )
    await server.start()
    yield server
    await server.stop()


def _get(url: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


async def test_static_files_and_client_routes(web: ZigguratServer) -> None:
    import asyncio

    base = f"http://127.0.0.1:{web.http_port}"
    index = (STATIC / "index.html").read_bytes()
    status, headers, body = await asyncio.to_thread(_get, base + "/")
    assert (status, body) == (200, index)
    assert headers["content-type"] == "text/html; charset=utf-8"
    status, headers, body = await asyncio.to_thread(_get, base + "/app.js")
    assert status == 200 and body == (STATIC / "app.js").read_bytes()
    # A client-side route loads the UI; a missing file is a 404; only GET/HEAD are served.
    assert (await asyncio.to_thread(_get, base + "/match/abc"))[2] == index
    assert (await asyncio.to_thread(_get, base + "/missing.js"))[0] == 404
    assert (await asyncio.to_thread(_get, base + "/server.py"))[0] == 404
    assert (await asyncio.to_thread(_get, base + "/", "POST"))[0] == 405
    status, headers, body = await asyncio.to_thread(_get, base + "/app.css", "HEAD")
    assert status == 200 and body == b"" and int(headers["content-length"]) > 0


@pytest.mark.slow
async def test_the_web_client_is_announced_over_mdns(tmp_path: Path) -> None:
    server = ZigguratServer(
        ServeOptions(
            host="127.0.0.1",
            port=0,
            http_port=0,
            db_path=str(tmp_path / "z.db"),
            grace_seconds=0.2,
            mdns=True,
        )
    )
    await server.start()
    try:
        assert server.advertiser is not None and server.advertiser.http_info is not None
        await server.advertiser.wait_announced()
        zc = AsyncZeroconf(interfaces=["127.0.0.1"])
        try:
            http = AsyncServiceInfo(HTTP_SERVICE_TYPE, server.advertiser.http_info.name)
            assert await http.async_request(zc.zeroconf, 3000)
            assert http.port == server.http_port
            assert http.properties[b"path"] == b"/"
            grpc_info = AsyncServiceInfo(server.advertiser.info.type, server.advertiser.info.name)
            assert await grpc_info.async_request(zc.zeroconf, 3000)
            assert grpc_info.properties[b"http"] == str(server.http_port).encode()
        finally:
            await zc.async_close()
    finally:
        await server.stop()


SERVE = [sys.executable, "-m", "ziggurat.cli.main", "serve", "--host", "127.0.0.1", "--no-mdns"]


def _serve(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    command = [*SERVE, "--db", str(tmp_path / "z.db"), *extra]
    return processes.run(command, capture_output=True, text=True, timeout=30, check=False)


def test_serve_prints_the_web_address_and_stops_cleanly(tmp_path: Path) -> None:
    process = processes.popen(
        [*SERVE, "--port", "0", "--db", str(tmp_path / "z.db"), "--grace", "0.2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        second = process.stdout.readline()
        assert first.startswith("ziggurat listening on 127.0.0.1:")
        assert second.startswith("ziggurat web client on http://127.0.0.1:"), second
        url = second.split()[-1]
        assert _get(url)[0] == 200
    finally:
        process.terminate()
        assert process.wait(20) == 0


def test_no_web_and_a_taken_http_port(tmp_path: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = _serve(tmp_path, "--port", "0", "--http-port", str(port))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("error:"), result.stderr
    assert "Traceback" not in result.stderr


def test_cli_defaults() -> None:
    from ziggurat.cli.main import build_parser
    from ziggurat.cli.serve_cmd import _http_port

    parser = build_parser()
    assert _http_port(parser.parse_args(["serve"])) == 8080
    assert _http_port(parser.parse_args(["serve", "--port", "0"])) == 0
    assert _http_port(parser.parse_args(["serve", "--port", "6000"])) == 0
    assert _http_port(parser.parse_args(["serve", "--http-port", "9000"])) == 9000
    assert _http_port(parser.parse_args(["serve", "--no-web"])) is None
