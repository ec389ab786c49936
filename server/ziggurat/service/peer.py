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


def split_peer(peer: str) -> tuple[str, str]:
    """(address, connection) of a gRPC peer string: ``ipv4:10.0.0.5:51234`` -> ``ipv4:10.0.0.5``."""
    if peer.startswith(("ipv4:", "ipv6:")):
        return peer.rsplit(":", 1)[0], peer
    return peer, peer  # unix sockets and unknown forms: one address per peer


class Peers:
    """Decides each call's client address; ``secret`` is the gate's (None: no gate, trust nothing)."""

    __slots__ = ("_secret",)

    def __init__(self, secret: str | None = None) -> None:
        self._secret = secret.encode() if secret else None

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
        """The client's address without its port (``ipv4:1.2.3.4``): what per-address limits count."""
        return split_peer(self.of(context))[0]

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
