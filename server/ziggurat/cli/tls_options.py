"""``--tls`` and ``--ca FILE``: how the commands that call a server (``bot``, ``bridge``,
``verify``, ``watch``, ``play``) speak TLS to one started with ``--tls-cert``.

Why: such a server speaks TLS only, on every port, so a command that can only speak plain
text cannot reach it at all; and a LAN server's certificate comes from the CA that
``ziggurat tls init`` made, which no system trusts, so the command must be told which CA to
trust (``--ca``), as every client library is (docs/operations.md, "TLS").

>>> import argparse
>>> parser = argparse.ArgumentParser()
>>> add_tls_arguments(parser)
>>> tls_from_args(parser.parse_args([]))
Tls(enabled=False, root=None)
>>> tls_from_args(parser.parse_args(["--tls"])).enabled
True
>>> tls_from_args(parser.parse_args(["--ca", "/nowhere/ca.pem"]))
Traceback (most recent call last):
...
ziggurat.cli.tls_options.TlsOptionError: cannot read --ca /nowhere/ca.pem: No such file or directory
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc


class TlsOptionError(Exception):
    """A CA file that cannot be read or is not PEM: one line for the user."""


@dataclass(frozen=True, slots=True)
class Tls:
    """Whether to speak TLS, and the CA certificates to trust (None: the system's)."""

    enabled: bool
    root: bytes | None

    def client_options(self) -> dict[str, Any]:
        """The keyword arguments of ``ZigguratClient`` for this choice."""
        return {"tls": self.enabled, "root_certificates": self.root}

    def channel(self, address: str) -> grpc.Channel:
        """A blocking gRPC channel to ``address`` spoken this way."""
        if not self.enabled:
            return grpc.insecure_channel(address)
        return grpc.secure_channel(address, grpc.ssl_channel_credentials(root_certificates=self.root))


def add_tls_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--tls`` and ``--ca FILE`` to a command that connects to ``--server``."""
    parser.add_argument(
        "--tls",
        action="store_true",
        help=(
            "speak TLS to the server (one started with --tls-cert), trusting the system's "
            "certificate authorities"
        ),
    )
    parser.add_argument(
        "--ca",
        metavar="FILE",
        help=(
            "speak TLS, trusting the certificate authority in FILE (PEM), e.g. the ca.pem that "
            "`ziggurat tls init` wrote for a LAN server"
        ),
    )


def tls_from_args(args: argparse.Namespace) -> Tls:
    """The choice the options make; raises :class:`TlsOptionError` for a CA file it cannot use."""
    ca: str | None = getattr(args, "ca", None)
    if ca is None:
        return Tls(enabled=bool(getattr(args, "tls", False)), root=None)
    try:
        root = Path(ca).read_bytes()
    except OSError as error:
        raise TlsOptionError(f"cannot read --ca {ca}: {error.strerror or error}") from None
    if b"-----BEGIN CERTIFICATE-----" not in root:
        raise TlsOptionError(f"--ca {ca} holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
    return Tls(enabled=True, root=root)
