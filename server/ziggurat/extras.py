"""The optional parts of the ``ziggurat`` distribution (its extras), and what to say without one.

Why: a headless server (``pip install .``, a container, ``./scripts/serve``) has no use for a
terminal UI, and should not have to install textual, rich and Pygments for it; mDNS is wanted
on a LAN and useless in a data centre. So those dependencies are extras in pyproject.toml,
their modules are imported only where the feature runs, and a missing one is reported in one
line that names the extra to install, never as an ImportError's traceback.

Only the modules an extra brings are recognised: a ``ModuleNotFoundError`` for anything else
is a bug or a broken install, and is raised as it is.
"""

from __future__ import annotations

import shlex
import sys

# Each extra (pyproject.toml [project.optional-dependencies]): the top-level modules of it that
# ziggurat imports, each with the package to name when it is missing (ifaddr comes only with
# zeroconf: without the extra both are missing, and mdns.py happens to import ifaddr first).
EXTRAS: dict[str, dict[str, str]] = {
    "tui": {"textual": "textual", "rich": "rich", "zeroconf": "zeroconf", "ifaddr": "zeroconf"},
    "mdns": {"zeroconf": "zeroconf", "ifaddr": "zeroconf"},
}


def missing_from(error: ModuleNotFoundError, extra: str) -> str | None:
    """The package of ``extra`` whose absence ``error`` reports (None: not one of the extra's)."""
    return EXTRAS[extra].get((error.name or "").partition(".")[0])


def install_hint(extra: str) -> str:
    """The command that installs ``extra`` into the environment running now.

    With this environment's own pip: ziggurat is installed there, so pip takes it as it is and
    fetches only the extra's packages, never asking an index for a distribution named
    ``ziggurat`` (ours is on none: README.md, "Installing"). Quoted for a shell (brackets are
    glob characters).
    """
    return f"{shlex.quote(sys.executable)} -m pip install 'ziggurat[{extra}]'"
