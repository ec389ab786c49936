"""Remote-bot names that cannot be squatted: one key per name as people read it.

A name is registered under its *key*: Unicode NFKC (so full-width and compatibility forms are
the plain letters), outer spaces trimmed, case-folded, then every character that has a Latin
look-alike in Unicode's confusables table (``confusable_homoglyphs``) replaced by it. "Random",
"random ", its full-width form and an all-Cyrillic look-alike therefore all have the key
"random" and cannot be registered by anyone but the holder of "random"'s token. A name mixing
scripts ("random" with one Cyrillic letter) is refused outright, as no honest name needs that.
The name shown to others is the NFKC, trimmed form the bot gave first.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from confusable_homoglyphs import confusables  # type: ignore[import-untyped]

from ziggurat.wire import errors

MAX_NAME = 64


def display_name(name: str) -> str:
    """The name as shown: NFKC, outer spaces trimmed; BAD_NAME when empty, long or unprintable."""
    text = unicodedata.normalize("NFKC", name).strip()
    if not text or len(text) > MAX_NAME or not text.isprintable():
        raise errors.invalid("BAD_NAME", f"a bot name is 1 to {MAX_NAME} printable characters")
    if confusables.is_mixed_script(text):
        raise errors.invalid("BAD_NAME", f"a bot name may not mix scripts (look-alike letters): {text!r}")
    return text


def bot_key(name: str) -> str:
    """The registry key of ``name`` (see the module docstring); BAD_NAME when it is not a name."""
    return "".join(_latin(ch) for ch in display_name(name).casefold())


@lru_cache(maxsize=4096)
def _latin(ch: str) -> str:
    """``ch``'s Latin look-alike when Unicode lists one, else ``ch``."""
    if ch.isascii():
        return ch
    found = confusables.is_confusable(ch, preferred_aliases=["latin"], greedy=True)
    for entry in found or ():
        for glyph in entry["homoglyphs"]:
            text = glyph["c"]
            if text.isascii() or unicodedata.name(text[0], "").startswith("LATIN"):
                return str(text).casefold()
    return ch
