"""Logs an operator can read: repeated warnings and errors are counted, not printed each time.

A misbehaving client can make the same thing happen thousands of times a second (a refused
call, a corrupt request); a log line for each would bury everything else and fill the disk.
:class:`RepeatFilter` sits on the log handler: a warning or an error whose message template
(logger, level, unformatted message) was already printed ``burst`` times in the current
window is counted instead of printed, the next line of that kind after the window says how
many were left out, and :meth:`RepeatFilter.flush` prints what is still counted at shutdown.
Lines below WARNING (the match log) are never held back. A traceback from gRPC's own loggers
(raised while serving a client's call) becomes one line: its exception type and message.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

WINDOW_SECONDS = 60.0
BURST = 3
MAX_KINDS = 1000


@dataclass(slots=True)
class _Kind:
    start: float
    printed: int = 0
    held: int = 0
    last: str = ""  # the newest line held back, formatted


class RepeatFilter(logging.Filter):
    """Install on a handler: ``handler.addFilter(RepeatFilter())``."""

    def __init__(
        self,
        *,
        window: float = WINDOW_SECONDS,
        burst: int = BURST,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.window = window
        self.burst = burst
        self._clock = clock
        self._kinds: OrderedDict[tuple[str, int, str], _Kind] = OrderedDict()

    def filter(self, record: logging.LogRecord) -> bool:
        """True to print ``record`` (possibly reworded), False to count it."""
        if record.exc_info and record.name.startswith("grpc"):
            _one_line(record)
        if record.levelno < logging.WARNING:
            return True
        key = (record.name, record.levelno, str(record.msg))
        now = self._clock()
        kind = self._kinds.get(key)
        if kind is None or now - kind.start >= self.window:
            held = kind.held if kind is not None else 0
            self._kinds[key] = _Kind(start=now, printed=1)
            self._kinds.move_to_end(key)
            while len(self._kinds) > MAX_KINDS:
                self._kinds.popitem(last=False)
            if held:
                _append(record, f" [and {held} more like this before, not printed]")
            return True
        if kind.printed < self.burst:
            kind.printed += 1
            if kind.printed == self.burst:
                _append(record, f" [more like this in the next {self.window:g} s are counted, not printed]")
            return True
        kind.held += 1
        kind.last = record.getMessage()
        return False

    def flush(self, log: logging.Logger) -> None:
        """Print, one line each, what is still counted (call at shutdown)."""
        for (name, level, _), kind in list(self._kinds.items()):
            if kind.held:
                log.log(
                    level,
                    "%d more lines like this were not printed (%s), the last: %s",
                    kind.held,
                    name,
                    kind.last,
                )
                kind.held = 0


def _append(record: logging.LogRecord, note: str) -> None:
    record.msg = f"{record.getMessage()}{note}"
    record.args = None


def _one_line(record: logging.LogRecord) -> None:
    assert record.exc_info is not None
    _, error, _ = record.exc_info
    record.msg = f"{record.getMessage()}: {type(error).__name__}: {error}"
    record.args = None
    record.exc_info = None
    record.exc_text = None
