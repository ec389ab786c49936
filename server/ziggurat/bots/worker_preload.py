"""What every search worker needs, loaded once by the workers' forkserver.

The search workers (:mod:`ziggurat.bots.workers`) are forked from a forkserver that imports
this module first: the bots, the rules engines and the Pylos completion tables are then
built once and shared (copy-on-write) by every worker, so a new worker is ready in
milliseconds and its first timed move pays for none of it.

A worker whose host stopped its pool while the worker was being started finds the pool's
semaphore already unlinked (``FileNotFoundError`` while unpickling its start-up data, in
``multiprocessing.synchronize``) and would print that traceback into the server's stderr
after the server's "stopped" line. It is no error: nobody waits for that worker any more. So
that one failure ends the worker quietly; any other is printed as before.
"""

from __future__ import annotations

import sys
import traceback as tracebacks
from types import TracebackType

from ziggurat.bots import make_bot, pylos_eval

pylos_eval.warm_up()


def _pool_gone(error: BaseException, traceback: TracebackType | None) -> bool:
    """The start-up failure of a worker whose pool was shut down meanwhile."""
    if not isinstance(error, FileNotFoundError):
        return False
    frames = tracebacks.extract_tb(traceback)
    return any(frame.filename.endswith("multiprocessing/synchronize.py") for frame in frames)


def _quiet_if_abandoned(
    kind: type[BaseException], error: BaseException, traceback: TracebackType | None
) -> None:
    """``sys.excepthook`` of the forkserver and its workers."""
    if _pool_gone(error, traceback):
        return
    sys.__excepthook__(kind, error, traceback)


sys.excepthook = _quiet_if_abandoned

__all__ = ["make_bot"]
