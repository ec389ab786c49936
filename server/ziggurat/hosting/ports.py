"""Asking the OS whether a TCP port can be bound, before gRPC is asked to bind it.

gRPC says a failed bind in log lines of its own, and a server with SO_REUSEPORT (every worker
of ``ziggurat serve --workers N``) would even *share* a port another program of the same user
bound with it. A probe socket without SO_REUSEPORT answers plainly: free, or why not.
"""

from __future__ import annotations

import errno
import socket


def bind_failure(host: str, port: int) -> str:
    """Why ``host:port`` cannot be bound, asked of the OS ("" when it can be)."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        return f"unknown host ({error.strerror})"
    for family, kind, proto, _, sockaddr in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC does
            try:
                probe.bind(sockaddr)
            except OSError as error:
                if error.errno == errno.EADDRINUSE:
                    return "the port is already in use (another server?)"
                return error.strerror or str(error)
    return ""
