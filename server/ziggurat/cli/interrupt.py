"""Ctrl-C for the terminal UI: the same exit code (130) as every other ``ziggurat`` command.

Textual reads keys in raw mode, where Ctrl-C is a key, not a signal; a SIGINT sent from
outside (``kill -INT``, a supervisor) would otherwise end the app with exit code 0, as if the
user had quit. The handler asks the app to exit cleanly (the terminal is restored) and the
command reports the interruption.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from ziggurat.cli import exits


def run_app(app: Any) -> int:
    """Run the Textual ``app`` until it exits; 130 when a SIGINT ended it, else its return code."""
    interrupted = False

    def on_sigint() -> None:
        nonlocal interrupted
        interrupted = True
        app.exit()

    loop = asyncio.new_event_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
        app.run(loop=loop)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        loop.close()
    if interrupted:
        return exits.INTERRUPTED
    code = app.return_code
    return int(code) if code else exits.OK
