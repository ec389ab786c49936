"""Which client a call comes from, also when ``ziggurat-gate`` forwarded it (``serve --gate``).

Behind the gate (docs/operations.md, "The gate") every call reaches Python over one private
Unix socket, so gRPC's own ``context.peer()`` names the socket, not the client: the
per-address caps, the per-address create rate and the logs would all see one address. The
gate therefore adds two metadata entries to each call it forwards: ``x-ziggurat-peer`` (the
client's address in gRPC's peer form, ``ipv4:1.2.3.4:5678`` / ``ipv6:[::1]:5678``) and
``x-ziggurat-gate`` (a secret only this server and its gate know). The gate drops both keys
from what clients send, but a client connecting straight to Python (``--unix-socket``, or a
server without the gate) could still send them, so :class:`Peers` believes ``x-ziggurat-peer``
only next to the right secret, compared in constant time. Without a secret (no ``--gate``)
nothing is trusted and every call is ``context.peer()``.

Every reader of a call's address goes through :meth:`Peers.of`, so that no path counts or
logs the socket in place of the client.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from typing import Any, Protocol

GATE_KEY = "x-ziggurat-gate"
PEER_KEY = "x-ziggurat-peer"
# Metadata a client must never be believed for: the gate drops every key that starts with one
# of these from its calls (x-ziggurat-peer-bin too), and the web port (which the gate does not
# front) drops them from its requests' headers.
GATE_PREFIXES = ("x-ziggurat-gate", "x-ziggurat-peer")


class CallContext(Protocol):
    """What :meth:`Peers.of` reads of a call: gRPC's servicer context, or the web port's."""

    def peer(self) -> str: ...  # noqa: D102 - gRPC's own

    def invocation_metadata(self) -> Any: ...  # noqa: D102 - gRPC's own


def new_secret() -> str:
    """A fresh secret for one server and its gate (256 bits, URL-safe text, 43 characters)."""
    return secrets.token_urlsafe(32)


def is_gate_key(key: str) -> bool:
    """True for the metadata keys only the gate may set (never believed from a client)."""
    return key.startswith(GATE_PREFIXES)


DEFAULT_IPV6_PREFIX_LENGTH = 64


def address_group(address: str, ipv6_prefix_length: int = DEFAULT_IPV6_PREFIX_LENGTH) -> str:
    """The "one address" a client address is counted as by every per-address limit.

    One IPv6 client commonly has a whole /64 (2^64 addresses), so counting each IPv6 address
    alone would let one client past every per-address cap and the per-address create rate:
    an IPv6 address counts by its first ``ipv6_prefix_length`` bits (``--ipv6-prefix-length``;
    128: each address alone), as the gate counts it (server/gate/src/admission.rs, the same
    text). An IPv4 client counts by its address, also when it reaches a dual-stack port as
    ``::ffff:a.b.c.d``; a zone (link-local addresses) stays in the group.

    >>> address_group("ipv4:10.0.0.5")
    'ipv4:10.0.0.5'
    >>> address_group("ipv6:[2001:db8:1:2:aaaa::1]")
    'ipv6:[2001:db8:1:2::]/64'
    >>> address_group("ipv6:[2001:db8:1:2:aaaa::1]", 48)
    'ipv6:[2001:db8:1::]/48'
    >>> address_group("ipv6:[::ffff:10.1.2.3]")
    'ipv4:10.1.2.3'
    >>> address_group("ipv6:[::1]", 128)
    'ipv6:[::1]'
    >>> address_group("ipv6:[fe80::1%eth0]")
    'ipv6:[fe80::%eth0]/64'
    >>> address_group("unix:/run/z.sock")
    'unix:/run/z.sock'
    """
    if not address.startswith("ipv6:[") or not address.endswith("]"):
        return address
    host, _, zone = address[len("ipv6:[") : -1].partition("%")
    try:
        ip = ipaddress.IPv6Address(host)
    except ValueError:
        return address
    if ip.ipv4_mapped is not None:
        return f"ipv4:{ip.ipv4_mapped}"
    zone = f"%{zone}" if zone else ""
    prefix = min(max(ipv6_prefix_length, 0), 128)
    if prefix == 128:
        return f"ipv6:[{ip}{zone}]"
    network = ipaddress.IPv6Network((int(ip) >> (128 - prefix) << (128 - prefix), prefix))
    return f"ipv6:[{network.network_address}{zone}]/{prefix}"


def split_peer(peer: str, ipv6_prefix_length: int = DEFAULT_IPV6_PREFIX_LENGTH) -> tuple[str, str]:
    """(address group, connection) of a gRPC peer string, the group as :func:`address_group`.

    >>> split_peer("ipv4:10.0.0.5:51234")
    ('ipv4:10.0.0.5', 'ipv4:10.0.0.5:51234')
    >>> split_peer("ipv6:[2001:db8::7]:443")
    ('ipv6:[2001:db8::]/64', 'ipv6:[2001:db8::7]:443')
    """
    if peer.startswith(("ipv4:", "ipv6:")):
        return address_group(peer.rsplit(":", 1)[0], ipv6_prefix_length), peer
    return peer, peer  # unix sockets and unknown forms: one address per peer


def grpc_peer(host_port: str) -> str:
    """A ``HOST:PORT`` (an ASGI client, an IPv6 host unbracketed) in gRPC's peer spelling, so that
    the web port's clients are grouped as the gRPC port's are (:func:`split_peer`).

    >>> grpc_peer("127.0.0.1:5000")
    'ipv4:127.0.0.1:5000'
    >>> grpc_peer("2001:db8::7:443")
    'ipv6:[2001:db8::7]:443'
    >>> split_peer(grpc_peer("::ffff:10.1.2.3:80"))[0]
    'ipv4:10.1.2.3'
    """
    host, _, port = host_port.rpartition(":")
    host = host.strip("[]")
    return f"ipv6:[{host}]:{port}" if ":" in host else f"ipv4:{host}:{port}"


class Peers:
    """Decides each call's client address; ``secret`` is the gate's (None: no gate, trust nothing),
    ``ipv6_prefix_length`` how much of an IPv6 address makes one address (:func:`address_group`)."""

    __slots__ = ("_secret", "ipv6_prefix_length")

    def __init__(
        self, secret: str | None = None, ipv6_prefix_length: int = DEFAULT_IPV6_PREFIX_LENGTH
    ) -> None:
        self._secret = secret.encode() if secret else None
        self.ipv6_prefix_length = ipv6_prefix_length

    @property
    def trusting(self) -> bool:
        """True when calls forwarded by this server's gate are believed."""
        return self._secret is not None

    def of(self, context: CallContext) -> str:
        """The client's peer (``ipv4:HOST:PORT``): the gate's word for a call it forwarded, else
        gRPC's own; ``"unknown"`` when neither knows."""
        if self._secret is not None:
            forwarded = self._forwarded_peer(context)
            if forwarded:
                return forwarded
        return context.peer() or "unknown"

    def address_of(self, context: CallContext) -> str:
        """The client's address group without its port (``ipv4:1.2.3.4``, an IPv6 client's
        /64): what per-address limits count."""
        return split_peer(self.of(context), self.ipv6_prefix_length)[0]

    def _forwarded_peer(self, context: CallContext) -> str:
        assert self._secret is not None
        secret = b""
        peer = ""
        for key, value in context.invocation_metadata() or ():
            if key == GATE_KEY:
                secret = value.encode() if isinstance(value, str) else bytes(value)
            elif key == PEER_KEY:
                peer = value if isinstance(value, str) else bytes(value).decode(errors="replace")
        if secret and hmac.compare_digest(secret, self._secret):
            return peer
        return ""
