"""What every search worker needs, loaded once by the workers' forkserver.

The search workers (:mod:`ziggurat.bots.workers`) are forked from a forkserver that imports
this module first: the bots, the rules engines and the Pylos completion tables are then
built once and shared (copy-on-write) by every worker, so a new worker is ready in
milliseconds and its first timed move pays for none of it.
"""

from __future__ import annotations

from ziggurat.bots import make_bot, pylos_eval

pylos_eval.warm_up()

__all__ = ["make_bot"]
