"""The live progress of ``ziggurat tournament run``: a rich progress bar on a terminal, a plain line
per game otherwise.

Why rich: a bar redrawn in place is broken by anything else written to the terminal meanwhile
(a log line glued onto the bar, a game line half overwritten). Rich's live display owns the
terminal while it runs: the log handlers of the root logger are routed through the same
:class:`rich.console.Console` (so a log line is printed above the bar, from the start of a line),
and so are ``print`` calls to stderr, and to stdout when stdout is the same terminal (when it
is a file, the game lines go there untouched). Everything is restored on :meth:`close`.

Rich comes with the ``tui`` extra, not with a headless install: without it the plain lines are
written on a terminal too (rich is imported only when a bar is to be drawn).
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

from ziggurat import extras

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress as RichProgress


class ConsoleLogHandler(logging.Handler):
    """Writes log records (formatted as before) through a rich console, above its live display."""

    def __init__(self, console: Console, formatter: logging.Formatter | None) -> None:
        super().__init__()
        self.console = console
        self.setFormatter(formatter or logging.Formatter())

    def emit(self, record: logging.LogRecord) -> None:
        """Print the record as one plain line (no markup, no highlighting, no wrapping)."""
        try:
            self.console.print(self.format(record), markup=False, highlight=False, soft_wrap=True)
        except Exception:  # as logging.StreamHandler does: a failed log line never stops the run
            self.handleError(record)


class Progress:
    """Games done of total, rate, ETA and the current leader, on ``stream`` (stderr)."""

    def __init__(self, total: int, *, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.started = time.monotonic()
        self._bar: RichProgress | None = None
        self._task: Any = None
        self._swapped: list[tuple[logging.Handler, logging.Handler]] = []
        if self.stream.isatty():
            self._start_bar(total)

    def _start_bar(self, total: int) -> None:
        try:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as RichProgress
        except ModuleNotFoundError as error:
            if extras.missing_from(error, "tui") is None:
                raise
            return  # no bar: the plain lines
        console = Console(file=self.stream, stderr=self.stream is sys.stderr)
        stdout_is_terminal = sys.stdout.isatty()
        self._bar = RichProgress(
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("games, {task.fields[rate]}, ETA"),
            TimeRemainingColumn(),
            TextColumn("· leader {task.fields[leader]}"),
            console=console,
            redirect_stdout=stdout_is_terminal,
            redirect_stderr=True,
            transient=False,
            refresh_per_second=4,
        )
        self._task = self._bar.add_task("games", total=total, rate="-", leader="-")
        root = logging.getLogger()
        for handler in list(root.handlers):
            if isinstance(handler, logging.StreamHandler) and handler.stream in (sys.stderr, sys.stdout):
                routed = ConsoleLogHandler(console, handler.formatter)
                routed.setLevel(handler.level)
                for log_filter in handler.filters:
                    routed.addFilter(log_filter)
                root.removeHandler(handler)
                root.addHandler(routed)
                self._swapped.append((handler, routed))
        self._bar.start()

    def update(self, done: int, total: int, leader: str) -> None:
        """Show ``done`` of ``total`` games and the leader."""
        elapsed = time.monotonic() - self.started
        rate = f"{done / elapsed:.2f}/s" if elapsed > 0 and done else "-"
        if self._bar is not None:
            self._bar.update(self._task, completed=done, total=total, rate=rate, leader=leader)
            return
        remaining = (total - done) / (done / elapsed) if elapsed > 0 and done else None
        eta = f"{remaining:.0f}s" if remaining is not None else "?"
        self.stream.write(f"{done}/{total} games, {rate}, ETA {eta}, leader {leader}\n")
        self.stream.flush()

    def close(self) -> None:
        """Stop the bar (left on screen at its last state) and give logging its handlers back."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        root = logging.getLogger()
        for original, routed in self._swapped:
            root.removeHandler(routed)
            root.addHandler(original)
        self._swapped.clear()
