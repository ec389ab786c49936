"""Rebuilding a stored match, or saying exactly why it cannot be rebuilt.

Used alike by the server (at start-up for every unfinished match, on demand for finished
ones) and by ``ziggurat check`` (offline, for every match). A match that fails is *damaged*:
the server quarantines it (calls on it answer DATA_LOSS) and goes on serving the others.

Checks, in order: the rows' structure (:mod:`ziggurat.store.consistency`), the replay of
the whole log through the rules (:meth:`Match.restore`), and for a finished match the same
verification as ``ziggurat verify`` on its record (seed vs commitment, every move, outcome).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from ziggurat.core.match import Match, StreamLimits
from ziggurat.core.records import match_record
from ziggurat.store.consistency import structural_problems
from ziggurat.store.sqlite import Store, StoredMatch
from ziggurat.store.startup import UNDECODABLE_TEXT, is_damage, is_undecodable
from ziggurat.verify import verify_record


class MatchDamaged(Exception):
    """A stored match that cannot be rebuilt or does not verify; the message says why."""


def load_stored(store: Store, match_id: str) -> StoredMatch | None:
    """The stored rows of a match; :class:`MatchDamaged` when they cannot be read."""
    try:
        return store.load(match_id)
    except sqlite3.Error as error:
        if not is_damage(error):
            raise
        raise MatchDamaged(f"its rows cannot be read: {_readable(error)}") from None
    except (ValueError, TypeError, KeyError, IndexError) as error:
        raise MatchDamaged(f"its rows cannot be decoded: {error}") from None


def rebuild(
    stored: StoredMatch,
    store: Store,
    *,
    log_events: Callable[[str], None],
    limits: StreamLimits | None = None,
) -> Match:
    """The match rebuilt from its log and checked; :class:`MatchDamaged` otherwise."""
    problems = structural_problems(stored)
    if problems:
        raise MatchDamaged("; ".join(problems))
    try:
        match = Match.restore(stored, store, log_events=log_events, limits=limits)
    except sqlite3.Error as error:
        if not is_damage(error):
            raise  # a store fault (locked, read-only, full) is not damage of this match
        raise MatchDamaged(f"the database is damaged: {_readable(error)}") from None
    except Exception as error:  # the replay of a damaged log can fail anywhere in the rules
        raise MatchDamaged(f"its log does not replay: {type(error).__name__}: {error}") from None
    if match.status == "finished":
        verdict = verify_record(match_record(match))
        if not verdict.ok:
            match.close()
            raise MatchDamaged(f"its record does not verify: {verdict.problem}")
    return match


def _readable(error: sqlite3.Error) -> str:
    """The error for a log line: for text that is not UTF-8, the column's name without the
    undecodable bytes that sqlite3 quotes after it."""
    if is_undecodable(error):
        column = str(error)[len(UNDECODABLE_TEXT) :].split(" with text ", 1)[0]
        return f"text that is not UTF-8 in column {column}"
    return str(error)
