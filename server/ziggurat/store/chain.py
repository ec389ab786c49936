"""The hash chain of a match's log: each stored event carries a hash of the one before.

The first event's link starts from the match's commitment (published when the match is
created, before any move), and each link hashes the previous link with the event exactly as
stored::

    chain[1] = sha256(commitment LF seq LF time_ms LF kind LF data_json)
    chain[n] = sha256(chain[n-1] LF seq LF time_ms LF kind LF data_json)

(LF a newline; numbers in decimal; hex digests of the UTF-8 text). Replaying a log through
the rules cannot tell one legal move from another; the chain can: a move changed after it
was written no longer matches its link. Changing the links too means rewriting every one
after it, which any copy of a later link (a record someone kept, a backup) exposes.
``ziggurat check``, the server's start-up check and ``ziggurat verify`` (the record carries
the log with its links) all recompute it.

>>> first = link("c0ffee", 1, 0, "created", "{}")
>>> len(first), first == link("c0ffee", 1, 0, "created", "{}"), first == link("c0ffee", 1, 1, "created", "{}")
(64, True, False)
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def link(previous: str, seq: int, time_ms: int, kind: str, data_json: str) -> str:
    """The chain value of one event, given the one before it (or the commitment)."""
    text = f"{previous}\n{seq}\n{time_ms}\n{kind}\n{data_json}"
    return hashlib.sha256(text.encode()).hexdigest()


def first_break(
    commitment: str, events: Iterable[tuple[int, int, str, str, str | None]]
) -> tuple[int, str] | None:
    """(seq, why) of the first event whose stored link is wrong, or None when the chain holds.

    ``events`` are (seq, time_ms, kind, data_json, chain) in order. A log whose events all
    lack a link is *unchained* (written before chaining existed) and passes; one with a link
    missing after others, or others after a missing one, does not.
    """
    previous = commitment
    unchained: int | None = None  # the seq of the first event without a link
    for seq, time_ms, kind, data_json, chain in events:
        if chain is None:
            if previous != commitment or (seq != 1 and unchained is None):
                return seq, "its link is missing though the events before it have theirs"
            unchained = seq if unchained is None else unchained
            continue
        if unchained is not None:
            return seq, f"it has a link though event {unchained} before it has none"
        expected = link(previous, seq, time_ms, kind, data_json)
        if chain != expected:
            return seq, "its link does not match: the event or one before it was changed after it was written"
        previous = chain
    return None
