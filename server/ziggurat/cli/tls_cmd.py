"""``ziggurat tls init``: a certificate authority and a server certificate for a LAN server.

Why a CA and not one self-signed certificate: rustls (the Rust client) refuses a certificate
that is its own authority as a server's (``CaUsedAsEndEntity``), and a browser can trust an
authority once where it would have to accept every self-signed certificate anew. Why the CA's
private key is never written: it signs this one server certificate and is forgotten, so a
client that trusts ``ca.pem`` trusts nothing else with it, even if the directory leaks; a new
host is a new ``init`` (and a new ``ca.pem`` for the clients). ECDSA P-256 keys: every client
(Go, rustls, Java, Node, gRPC core, browsers) accepts them.
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ziggurat.cli.commands import summary_of

FILES = ("ca.pem", "server.pem", "server.key")
DEFAULT_DAYS = 365
# Always in the certificate: a client on the server's own machine connects to these.
ALWAYS = ("localhost", "127.0.0.1", "::1")
_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def register(commands: Any) -> None:
    """Add ``tls`` (``tls init``)."""
    parser = commands.add_parser(
        "tls",
        help=summary_of("tls"),
        description="TLS files for `ziggurat serve --tls-cert/--tls-key` (docs/operations.md, 'TLS').",
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    init = actions.add_parser(
        "init",
        help="write ca.pem, server.pem and server.key (0600) into a directory",
        description=(
            "Make a certificate authority (ca.pem, for the clients to trust) and a server certificate "
            "it signs (server.pem and its key server.key, mode 0600, for `ziggurat serve`), valid for "
            "the names and addresses given plus localhost, 127.0.0.1 and ::1. The CA's own key is never "
            "written: ca.pem vouches for this server certificate and nothing else."
        ),
    )
    init.add_argument("--dir", required=True, type=Path, help="where to write the files (made if missing)")
    init.add_argument(
        "--host",
        action="append",
        default=[],
        metavar="NAME_OR_IP",
        help="a name or IP address clients will connect to (repeat for more), e.g. the LAN address",
    )
    init.add_argument(
        "--days", type=_days, default=DEFAULT_DAYS, help=f"validity in days (default {DEFAULT_DAYS})"
    )
    init.add_argument("--force", action="store_true", help="replace files already there")
    init.set_defaults(handler=_init)


def _days(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of days") from None
    if not 1 <= value <= 3650:
        raise argparse.ArgumentTypeError("must be 1 to 3650 days")
    return value


@dataclass(frozen=True, slots=True)
class Subjects:
    """What the server certificate names: DNS names and IP addresses, in the order given."""

    names: tuple[str, ...]
    addresses: tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, ...]


def subjects(hosts: list[str]) -> Subjects:
    """The hosts given plus :data:`ALWAYS`, each once; ValueError names one that is neither a
    DNS name nor an IP address."""
    names: list[str] = []
    addresses: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for host in [*hosts, *ALWAYS]:
        text = host.strip().strip("[]")
        try:
            address = ipaddress.ip_address(text)
        except ValueError:
            name = text.rstrip(".").lower()
            if not name or len(name) > 253 or not all(_LABEL.fullmatch(label) for label in name.split(".")):
                raise ValueError(f"--host {host!r} is neither a host name nor an IP address") from None
            if name not in names:
                names.append(name)
            continue
        if address not in addresses:
            addresses.append(address)
    return Subjects(tuple(names), tuple(addresses))


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """PEM bytes of the three files."""

    ca_pem: bytes
    server_pem: bytes
    server_key: bytes


def make(hosts: list[str], days: int = DEFAULT_DAYS, now: datetime.datetime | None = None) -> TlsFiles:
    """A new CA (its key forgotten on return) and a server certificate it signs for ``hosts``."""
    sans = subjects(hosts)
    start = (now or datetime.datetime.now(datetime.UTC)) - datetime.timedelta(minutes=5)  # clock skew
    end = start + datetime.timedelta(days=days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "ziggurat"),
            x509.NameAttribute(
                NameOID.COMMON_NAME, f"ziggurat LAN CA for {hosts[0] if hosts else 'localhost'}"
            ),
        ]
    )
    ca_ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .add_extension(ca_ski, critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    general: list[x509.GeneralName] = [x509.DNSName(name) for name in sans.names]
    general += [x509.IPAddress(address) for address in sans.addresses]
    common = hosts[0].strip().strip("[]") if hosts else "localhost"
    server = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(general), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    return TlsFiles(
        ca_pem=ca.public_bytes(pem),
        server_pem=server.public_bytes(pem),
        server_key=key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )


def _usage(*, cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not cert_sign,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def write(directory: Path, files: TlsFiles, *, force: bool = False) -> None:
    """Write the files (the key 0600 from its creation on); FileExistsError unless ``force``."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, data, mode in (
        ("server.key", files.server_key, 0o600),
        ("server.pem", files.server_pem, 0o644),
        ("ca.pem", files.ca_pem, 0o644),
    ):
        path = directory / name
        flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
        descriptor = os.open(path, flags, mode)
        with os.fdopen(descriptor, "wb") as out:
            os.fchmod(out.fileno(), mode)  # a replaced file keeps no wider mode it had
            out.write(data)


def _init(args: argparse.Namespace) -> int:
    directory: Path = args.dir
    try:
        files = make(args.host, args.days)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not args.force:
        there = [name for name in FILES if (directory / name).exists()]
        if there:
            print(
                f"error: {directory / there[0]} exists: keep it, or replace all three with --force "
                "(clients must then trust the new ca.pem)",
                file=sys.stderr,
            )
            return 2
    try:
        write(directory, files, force=args.force)
    except OSError as error:
        print(f"error: cannot write the TLS files: {error}", file=sys.stderr)
        return 1
    named = ", ".join([*subjects(args.host).names, *map(str, subjects(args.host).addresses)])
    print(_guide(directory, named, args.days))
    return 0


def _guide(directory: Path, named: str, days: int) -> str:
    ca, cert, key = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    return f"""wrote {ca} (the CA: give it to clients), {cert} and {key} (0600: the server's only)
server certificate for: {named}; valid {days} days

serve (gRPC and the web port, both with TLS):
  ziggurat serve --tls-cert {cert} --tls-key {key}

clients trust {ca}:
  Python      ZigguratClient(address, root_certificates=open("{ca}", "rb").read())
  Go          pool := x509.NewCertPool(); pool.AppendCertsFromPEM(pem)
              ziggurat.Dial(address, ziggurat.WithTLS(&tls.Config{{RootCAs: pool}}))
  Rust        Client::connect_with(address, ConnectOptions {{ ca_pem: Some(pem), ..Default::default() }})
  TypeScript  new ZigguratClient(address, {{ ca: readFileSync("{ca}") }})
  Java        ZigguratClient.connectTls(address, Files.readAllBytes(Path.of("{ca}")))
  grpcurl     grpcurl -cacert {ca} HOST:PORT list
  curl        curl --cacert {ca} https://HOST:HTTP_PORT/
  browsers    import {ca} as a trusted authority (Firefox: Settings > Privacy & Security >
              Certificates > View Certificates > Authorities > Import; Chrome and Edge on Linux:
              chrome://certificate-manager > Local certificates > Custom > Import; Windows and
              macOS: the system's certificate store, as a trusted root)"""
