"""Where a program's executable really lives, so its sandbox can show it (and only what it needs).

A sandbox shows the system directories, the program's own files and what the organiser lists.
``stdio = ["python3", "bot.py"]`` works for the organiser through ``PATH``, but ``python3``
may be a pyenv shim in the organiser's home (a script running ``pyenv exec``), an nvm node, an
SDKMAN java or a venv's python: none of these exist inside the sandbox unless bound. So the
command's first word is resolved on the organiser's ``PATH`` *before* the sandbox is made:

* a version-manager shim (``…/.pyenv/shims/python3``, rbenv, nodenv, goenv, jenv, asdf) is
  replaced by the interpreter the manager would run (``pyenv which python3``, in the
  program's directory so ``.python-version`` counts);
* the executable (as found, and its real path behind symlinks) is shown read-only with its
  *installation root*: the directory holding its ``bin/`` (``~/.pyenv/versions/3.12.1``,
  ``~/.nvm/versions/node/v20.11.0``, ``~/.sdkman/candidates/java/21.0.2-tem``, a venv), where
  its libraries are. A home directory or ``/`` is never an installation root: only the
  executable's own directory is shown then.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

SHIM_MANAGERS = ("pyenv", "rbenv", "nodenv", "goenv", "jenv", "asdf")
MANAGER_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class Executable:
    """A command with its first word made absolute, and what must be visible to run it."""

    argv: tuple[str, ...]
    visible: tuple[Path, ...]  # the executable's directories or installation roots
    shim: str = ""  # the shim it replaced, if any


def resolve(argv: Sequence[str], *, cwd: str | None, env: Mapping[str, str]) -> Executable:
    """``argv`` with its executable resolved on the organiser's ``PATH`` (``env``'s, else ours)."""
    first = argv[0]
    path = env.get("PATH", os.environ.get("PATH", os.defpath))
    found: Path | None
    if "/" in first:
        given = Path(first) if Path(first).is_absolute() else Path(cwd or os.getcwd()) / first
        found = given if given.exists() else None
    else:
        hit = shutil.which(first, path=path)
        found = Path(hit).absolute() if hit else None
    if found is None:
        return Executable(tuple(argv), ())
    shim = ""
    real_first = found
    manager = _shim_manager(found)
    if manager is not None:
        answer = _ask_manager(manager, found, cwd=cwd, env={**os.environ, **env, "PATH": path})
        if answer is not None:
            shim, real_first = str(found), answer
    visible = [_root_or_dir(real_first), _root_or_dir(real_first.resolve())]
    return Executable((str(real_first), *argv[1:]), tuple(dict.fromkeys(visible)), shim)


def _shim_manager(executable: Path) -> tuple[str, Path] | None:
    """(tool, its root) when ``executable`` is a version manager's shim: ``ROOT/shims/NAME``."""
    if executable.parent.name != "shims":
        return None
    root = executable.parent.parent
    tool = root.name.lstrip(".")
    if tool not in SHIM_MANAGERS:
        return None
    return tool, root


def _ask_manager(
    manager: tuple[str, Path], shim: Path, *, cwd: str | None, env: dict[str, str]
) -> Path | None:
    """The interpreter ``manager`` runs for ``shim`` here (``pyenv which NAME``), or None."""
    tool, root = manager
    candidates = [root / "bin" / tool, root / "libexec" / tool]
    program = next(
        (str(c) for c in candidates if os.access(c, os.X_OK)), shutil.which(tool, path=env["PATH"])
    )
    if program is None:
        return None
    env = {**env, f"{tool.upper()}_ROOT": str(root)} if tool != "asdf" else {**env, "ASDF_DIR": str(root)}
    try:
        done = subprocess.run(
            [program, "which", shim.name],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=MANAGER_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    answer = done.stdout.strip().splitlines()
    if done.returncode != 0 or not answer or not Path(answer[-1]).is_absolute():
        return None
    real = Path(answer[-1])
    return real if real.exists() else None


def _root_or_dir(executable: Path) -> Path:
    """The installation root of ``executable`` (the parent of its ``bin/``), else its directory."""
    directory = executable.parent
    if directory.name != "bin":
        return directory
    root = directory.parent
    if root == Path("/") or root in _homes():
        return directory
    return root


def _homes() -> set[Path]:
    homes = {Path.home()}
    with contextlib.suppress(OSError):
        homes.update(Path(entry.pw_dir) for entry in pwd.getpwall() if entry.pw_dir)
    return homes
