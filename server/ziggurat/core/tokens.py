"""Fresh secret tokens (seat, creator and remote-bot tokens).

Tokens are opaque to clients, but people paste them into command lines, so they are
drawn from the URL-safe base64 alphabet and never begin with ``-`` (argparse would read
``--token -x…`` as two options).
"""

from __future__ import annotations

import secrets

__all__ = ["new_token"]


def new_token(nbytes: int = 32) -> str:
    """A fresh secret token in the URL-safe base64 alphabet that never begins with ``-``.

    A token that began with ``-`` would be read as an option by command lines
    (``ziggurat bot --token -x…`` fails in argparse), so such draws are drawn again.

    >>> all(not new_token(8).startswith("-") for _ in range(2000))
    True
    """
    while True:
        token = secrets.token_urlsafe(nbytes)
        if not token.startswith("-"):
            return token
