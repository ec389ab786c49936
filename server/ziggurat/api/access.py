"""Who may do what beyond a seat: the operator token and the optional create token.

Both are secrets an operator puts in files (``ziggurat serve --admin-token-file``,
``--create-token-file``) so they never appear on a command line or in ``ps``. The
server keeps only their SHA-256 digests and compares in constant time.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from ziggurat.core.match import hash_token
from ziggurat.core.tokens import read_token_file
from ziggurat.wire import errors
from ziggurat.wire.reasons import Reason


@dataclass(frozen=True, slots=True)
class Access:
    """The hashed operator and create tokens (None: not configured)."""

    admin_hash: str | None = None
    create_hash: str | None = None

    @classmethod
    def from_files(cls, admin_token_file: str | None, create_token_file: str | None) -> Access:
        """Read the token files given to ``ziggurat serve``."""
        admin = read_token_file(admin_token_file, "admin token") if admin_token_file else None
        create = read_token_file(create_token_file, "create token") if create_token_file else None
        return cls(
            admin_hash=hash_token(admin) if admin else None,
            create_hash=hash_token(create) if create else None,
        )

    def is_admin(self, token: str | None) -> bool:
        """True when ``token`` is the operator token."""
        return bool(token and self.admin_hash and hmac.compare_digest(self.admin_hash, hash_token(token)))

    def require_admin(self, token: str | None) -> None:
        """Refuse unless ``token`` is the operator token."""
        if self.admin_hash is None:
            raise errors.refuse(Reason.ADMIN_DISABLED, "this server was started without --admin-token-file")
        if not token:
            raise errors.refuse(Reason.MISSING_TOKEN, "this call needs the operator token")
        if not self.is_admin(token):
            raise errors.refuse(Reason.BAD_TOKEN, "the token is not the operator token")

    def require_create(self, token: str | None) -> None:
        """Refuse CreateMatch without the create token (or the operator token), when one is set."""
        if self.create_hash is None or self.is_admin(token):
            return
        if not token:
            raise errors.refuse(Reason.MISSING_TOKEN, "this server wants a create token to create matches")
        if not hmac.compare_digest(self.create_hash, hash_token(token)):
            raise errors.refuse(Reason.BAD_TOKEN, "the token is not this server's create token")
