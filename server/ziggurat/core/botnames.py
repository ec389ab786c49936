"""Names that cannot be squatted: one key per name as people read it.

A remote bot's name is registered under its *key*, Unicode's confusable *skeleton*
(UTS #39, from the confusables table that ``confusable_homoglyphs`` ships) taken BEFORE
case-folding, then folded again until nothing changes:

1. NFKC, outer spaces trimmed (full-width and compatibility forms become plain letters);
2. every character replaced by the prototype of its confusable class (Cyrillic TE and Greek
   TAU become ``T``; ``I`` and ``1`` become ``l``; ``m`` becomes ``rn``), a Latin small
   capital (U+1D00 and the like) by its letter, and the few look-alikes the table leaves
   apart listed in :data:`EXTRA` (the Cyrillic palochka, a bare stroke, reads as ``l``);
3. case-folded, and steps 2-3 repeated until the text no longer changes.

Folding the case first loses look-alikes: lower-case Cyrillic te and em resemble small
capitals, not ``t`` and ``m``, so a Cyrillic "TEAM" folded first no longer matched "TEAM".
So "TEAM" in Latin, Cyrillic and Greek capitals, "alice" beside "aIice", "a1ice" and its
small capitals, "mybot1" beside "rnybot1", and "apple" beside its all-Cyrillic look-alike
each share one key:

>>> bot_key("\u0422\u0415\u0410\u041c") == bot_key("\u03a4\u0395\u0391\u039c") == bot_key("TEAM")
True
>>> len({bot_key(n) for n in ("alice", "aIice", "a1ice", "\u1d00\u029f\u026a\u1d04\u1d07")})
1
>>> bot_key("\u0430\u0440\u0440\u04cf\u0435") == bot_key("apple")
True

A name mixing scripts ("random" with one Cyrillic letter) is refused outright, as no honest
name needs that. The name shown to others is the NFKC, trimmed form the bot gave first.

Display names (the ``player_name`` a seat shows) are free, except that none may claim to be
one of the server's built-in bots: the server seats those as ``NAME (bot)``
(:func:`house_bot_display`), so a name whose key ends with the key of ``(bot)`` (``greedy
(bot)``, ``alphabeta (b0t)``, its full-width or small-capital forms) is refused unless the
server seats it itself.
"""

from __future__ import annotations

import json
import unicodedata
from functools import lru_cache
from importlib import resources

from ziggurat.wire import errors

MAX_NAME = 64
# Look-alikes Unicode's table keeps apart that a sans-serif font draws alike: the Cyrillic
# palochka (a bare vertical stroke) is mapped to "i" by the table, but reads as "l"/"I".
EXTRA = {"\u04cf": "l"}
BOT_SUFFIX = "(bot)"
_SMALL_CAPITAL = "LATIN LETTER SMALL CAPITAL "
_ROUNDS = 8  # folding settles in two or three rounds; the bound keeps a pathological name cheap


def display_name(name: str) -> str:
    """The name as shown: NFKC, outer spaces trimmed; BAD_NAME when empty, long or unprintable."""
    text = unicodedata.normalize("NFKC", name).strip()
    if not text or len(text) > MAX_NAME or not text.isprintable():
        raise errors.invalid("BAD_NAME", f"a bot name is 1 to {MAX_NAME} printable characters")
    from confusable_homoglyphs import confusables  # type: ignore[import-untyped]  # 65 ms: first name only

    if confusables.is_mixed_script(text):
        raise errors.invalid("BAD_NAME", f"a bot name may not mix scripts (look-alike letters): {text!r}")
    if claims_house_bot(text):
        raise errors.invalid(
            "BAD_NAME", f"a bot name may not read as 'NAME (bot)', the server's own bots: {text!r}"
        )
    return text


def bot_key(name: str) -> str:
    """The registry key of ``name`` (see the module docstring); BAD_NAME when it is not a name."""
    return skeleton(display_name(name))


def skeleton(text: str) -> str:
    """``text`` mapped to confusable prototypes, then case-folded, until it stops changing.

    >>> skeleton("rnybot1") == skeleton("MYBOT1")
    True
    """
    current = unicodedata.normalize("NFKC", text)
    for _ in range(_ROUNDS):
        folded = "".join(_prototype(ch) for ch in current).casefold()
        if folded == current:
            break
        current = folded
    return current


def claims_house_bot(name: str) -> bool:
    """True when a display name reads as ``… (bot)``, the form the server gives its own bots.

    >>> claims_house_bot("alphabeta (bot)"), claims_house_bot("greedy(B0T)"), claims_house_bot("bob")
    (True, True, False)
    """
    key = "".join(skeleton(name).split())
    return key.endswith(skeleton(BOT_SUFFIX))


def house_bot_display(bot_name: str) -> str:
    """The display name of a seat the server's built-in bot ``bot_name`` plays."""
    return f"{bot_name} {BOT_SUFFIX}"


@lru_cache(maxsize=8192)
def _prototype(ch: str) -> str:
    """The prototype of ``ch``'s confusable class (itself when it has none), small capitals
    read as their letter."""
    plain = EXTRA.get(ch) or _small_capital(ch)
    return "".join(_small_capital(c) for c in _prototypes().get(plain, plain))


def _small_capital(ch: str) -> str:
    name = unicodedata.name(ch, "")
    if name.startswith(_SMALL_CAPITAL) and len(name) == len(_SMALL_CAPITAL) + 1:
        return name[-1].lower()
    return ch


@lru_cache(maxsize=1)
def _prototypes() -> dict[str, str]:
    """Each confusable character -> the prototype of its class, from the library's table (read
    at the first name checked, not at import: every server and CLI process imports this module).

    The library stores confusables.txt's ``source -> prototype`` lines both ways (each source
    lists its prototype; each prototype lists its sources), so the classes are stars: the
    centre is the entry that is several characters long or lists several others. A class of
    two is ambiguous in that form; any fixed choice gives both members one key, so its ASCII
    member, else the lower code point, is taken.
    """
    raw = json.loads(resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text("utf-8"))
    links: dict[str, set[str]] = {}
    for key, entries in raw.items():
        source = key.replace("\u200e", "")
        for entry in entries:
            links.setdefault(source, set()).add(entry["c"].replace("\u200e", ""))
    prototypes: dict[str, str] = {}
    for char, others in links.items():
        if len(char) != 1 or len(others) != 1:
            continue  # a centre (a prototype): it maps to itself
        (other,) = others
        if len(other) > 1 or len(links.get(other, ())) > 1:
            prototypes[char] = other  # a leaf of a star
        elif _centre_of_pair(char, other) == other:
            prototypes[char] = other
    return prototypes


def _centre_of_pair(a: str, b: str) -> str:
    if a.isascii() != b.isascii():
        return a if a.isascii() else b
    return min(a, b)
