"""Fresh secret tokens (seat, creator and remote-bot tokens), and tokens read from files.

Tokens are opaque to clients, but people paste them into command lines, so they are
drawn from the URL-safe base64 alphabet and never begin with ``-`` (argparse would read
``--token -x…`` as two options).
"""

from __future__ import annotations

import secrets
from pathlib import Path

__all__ = ["new_token", "read_token_file"]


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


def read_token_file(path: str, what: str) -> str:
    """The token in ``path`` (surrounding whitespace ignored); ValueError with a one-line message.

    Here, with nothing heavy imported, because ``ziggurat bot`` reads its creator token with it
    and a tournament starts one such process per game of a duplicate deal.
    """
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"cannot read the {what} file {path}: {error}") from None
    if len(token) < 16:
        raise ValueError(f"the {what} file {path} must hold a token of at least 16 characters")
    return token
