"""The terminal UI's catalogues, one module per language, each a ``MESSAGES`` dict.

English (``en``) is the reference: every other catalogue has exactly its keys, and each
message the same ``{placeholders}`` (tests/tui/test_i18n.py checks both). A plural message is
a dict of CLDR categories (``one``, ``few``, ``other``) and always has ``other``.
"""

from __future__ import annotations

Message = str | dict[str, str]
Catalogue = dict[str, Message]
