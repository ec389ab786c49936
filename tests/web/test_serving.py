"""The web port's listening socket: every accepted connection has Nagle's algorithm off.

With Nagle on, uvicorn's two writes per response (head, then body) met the client's delayed
ACK and every call after the first on a kept-alive connection took 40-50 ms
(benchmarks/web_vs_grpc.py prints the figure). asyncio turns TCP_NODELAY on for an accepted
socket only when the listening socket says it is TCP, so that is what is checked here, on
the sockets asyncio hands to the protocol, for both address families.
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from ziggurat.web.serving import bind


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
async def test_accepted_web_connections_have_tcp_nodelay(host: str) -> None:
    try:
        listening = bind(host, 0)
    except OSError:
        pytest.skip(f"no {host} on this machine")
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    server = await asyncio.get_running_loop().create_server(Probe, sock=listening)
    try:
        port = listening.getsockname()[1]
        _, writer = await asyncio.open_connection(host, port)
        assert await asyncio.wait_for(accepted, 5) != 0
        writer.close()
    finally:
        server.close()
        await server.wait_closed()
