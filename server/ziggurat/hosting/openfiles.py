"""The process's open-files limit, raised to what the system allows when the server starts.

Every connection is a file descriptor. Under the usual soft limit of 1,024, some 1,060 idle
TCP connections to the web port took a server to its limit: gRPC's ``accept`` then failed
("out of system resource") and every other client's calls timed out. The soft limit is only a
default that a process may raise up to its hard limit, as ``ziggurat-gate`` does for itself;
``ziggurat serve`` does the same at start-up, and its own connection caps (the web port's,
``--max-web-connections``) then shed load long before the descriptors run out.
"""

from __future__ import annotations

import logging
import resource

log = logging.getLogger("ziggurat.server")

# What "unlimited" is raised to: Linux refuses a soft limit above fs.nr_open (1,048,576 by default).
UNLIMITED_TARGET = 1 << 20


def raise_open_files_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard one (logged when it changes); the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = UNLIMITED_TARGET if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as error:  # e.g. a hard limit above fs.nr_open
            log.warning("could not raise the open-files limit from %d to %d: %s", soft, target, error)
            return soft
        log.info("raised the open-files limit from %d to %d", soft, target)
        return target
    return soft if soft != resource.RLIM_INFINITY else UNLIMITED_TARGET
