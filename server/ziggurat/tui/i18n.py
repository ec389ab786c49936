"""The terminal UI's words in English, Romanian, Hungarian and Basque: ``t(key, **params)``.

Why plain dicts (``ziggurat.tui.locales``) and not gettext: no build step and no tool, the
catalogues are typed Python that mypy and a unit test check (same keys, same placeholders as
English), and the wording follows the web client's catalogues (clients/web/src/locales) so
both UIs say the same thing in each language. A message that depends on a number is a dict
of plural forms (CLDR categories ``one``, ``few``, ``other``) chosen by its ``count``.

The language is one per process (the app sets it from ``--lang``); English by default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from ziggurat.tui.locales import Catalogue
from ziggurat.tui.locales.en import MESSAGES as ENGLISH
from ziggurat.tui.locales.eu import MESSAGES as BASQUE
from ziggurat.tui.locales.hu import MESSAGES as HUNGARIAN
from ziggurat.tui.locales.ro import MESSAGES as ROMANIAN

if TYPE_CHECKING:
    from textual.dom import DOMNode

LANGUAGES: tuple[str, ...] = ("en", "ro", "hu", "eu")
CATALOGUES: Mapping[str, Catalogue] = {"en": ENGLISH, "ro": ROMANIAN, "hu": HUNGARIAN, "eu": BASQUE}

_current = "en"


def set_language(language: str) -> None:
    """Speak ``language`` from now on (one of :data:`LANGUAGES`; anything else is English)."""
    global _current  # noqa: PLW0603 - one language per process, set once by the app
    _current = language if language in CATALOGUES else "en"


def language() -> str:
    """The language spoken now."""
    return _current


def language_from_environment(environ: Mapping[str, str] | None = None) -> str:
    """The language the locale asks for (LC_ALL, then LC_MESSAGES, then LANG, as POSIX orders
    them): ``ro_RO.UTF-8`` → ``ro``; unset, ``C``, ``POSIX`` or a language without a catalogue → ``en``."""
    env = os.environ if environ is None else environ
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name, "")
        if value:
            code = value.split(".")[0].split("@")[0].split("_")[0].lower()
            return code if code in CATALOGUES else "en"
    return "en"


def plural_category(language: str, count: int) -> str:
    """The CLDR plural category of a whole ``count`` (Romanian: 1 is one; 0, and 1-19 modulo 100
    otherwise, are few)."""
    if language == "ro":
        if count == 1:
            return "one"
        return "few" if count == 0 or 1 <= count % 100 <= 19 else "other"
    return "one" if count == 1 else "other"


def t(key: str, **params: object) -> str:
    """The message ``key`` in the current language, its ``{placeholders}`` filled from ``params``
    (a plural message picks its form by ``count``); a key missing from a catalogue falls back to
    English."""
    message = CATALOGUES[_current].get(key) or ENGLISH[key]
    if isinstance(message, dict):
        count = params.get("count", 0)
        category = plural_category(_current, count if isinstance(count, int) else 0)
        message = message.get(category) or message["other"]
    return message.format(**params)


def translate_bindings(node: DOMNode) -> None:
    """Put the current language into ``node``'s key bindings, whose descriptions are written as
    catalogue keys (``Binding("f5", "refresh", "lobby.refresh")``): a class's ``BINDINGS`` are
    built when the module is imported, before ``--lang`` is known, so each screen translates its
    own copy as it is made."""
    table = node._bindings.key_to_bindings
    for key, bindings in table.items():
        table[key] = [
            replace(binding, description=t(binding.description))
            if binding.description in ENGLISH
            else binding
            for binding in bindings
        ]
