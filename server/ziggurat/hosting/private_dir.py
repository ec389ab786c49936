"""The private directory of ``ziggurat serve --gate``: where the Unix socket between the
gate and the server lives, and how the ones a killed server left behind are found again.

Why a directory and not an abstract Unix socket (which vanishes with its process): an
abstract socket has no permissions, so any user of the machine could connect to it and
reach the server without the gate in front. A directory made by :func:`tempfile.mkdtemp` is
mode 0700, this user's only. A server stopped cleanly removes it; one killed with
``kill -9`` cannot, so each directory's name carries the pid of the server that made it, and
the next ``serve --gate`` of the same user removes those whose server is gone.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as tmp:
...     made = make_private_dir(tmp)
...     made.name.startswith(f"ziggurat-gate-{os.getpid()}-"), oct(made.stat().st_mode & 0o777)
(True, '0o700')
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

log = logging.getLogger("ziggurat.server")

PREFIX = "ziggurat-gate-"
_NAME = re.compile(rf"^{PREFIX}(\d+)-")


def make_private_dir(parent: str | None = None) -> Path:
    """A new 0700 directory named after this process, in ``parent`` (default: ``TMPDIR``)."""
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=parent))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def remove_stale_private_dirs(parent: str | None = None) -> list[Path]:
    """Remove this user's private directories whose server process no longer runs; the removed.

    Only real directories (not symbolic links) owned by this user, named by
    :func:`make_private_dir`, are considered, so nothing another user placed in a shared
    ``/tmp`` is followed or removed. A directory of a live process is kept, even when that
    pid was reused by another program: a leftover is harmless, removing a running server's
    socket is not. Directories of the older, pid-less name are left alone for the same reason.
    """
    root = Path(parent if parent is not None else tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return removed
    for entry in entries:
        match = _NAME.match(entry.name)
        if match is None or int(match.group(1)) == os.getpid() or _alive(int(match.group(1))):
            continue
        try:
            info = entry.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        shutil.rmtree(entry, ignore_errors=True)
        if not entry.exists():
            removed.append(entry)
    if removed:
        log.info(
            "removed %d private socket director%s left by stopped servers",
            len(removed),
            "y" if len(removed) == 1 else "ies",
        )
    return removed
