"""The exit codes every ``ziggurat`` command keeps (the README's table of exit codes).

One vocabulary, so a script or a tournament can tell "you asked for something wrong" from
"it ran and failed" from "you pressed Ctrl-C" without reading the message.
"""

from __future__ import annotations

OK = 0
FAILED = 1  # it ran and failed: a server refused or is unreachable, damage found, not verified
USAGE = 2  # bad option, unreadable or malformed input file, bad configuration
INTERNAL = 70  # a bug in ziggurat (BSD EX_SOFTWARE): one line, the traceback in a file
BROKEN_PIPE = 141  # the reader of stdout went away (`ziggurat … | head`): 128 + SIGPIPE
INTERRUPTED = 130  # Ctrl-C (SIGINT): 128 + SIGINT, as shells report it
