"""Resolving a program's executable on the organiser's PATH: shims replaced, installation roots shown."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ziggurat.tournament.executables import resolve


def script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_a_name_on_path_becomes_absolute_with_its_installation_root(tmp_path: Path) -> None:
    node = script(tmp_path / ".nvm" / "versions" / "node" / "v20.11.0" / "bin" / "node", "#!/bin/sh\n")
    found = resolve(["node", "bot.js"], cwd=str(tmp_path), env={"PATH": f"{node.parent}:/usr/bin"})
    assert found.argv == (str(node), "bot.js")
    assert found.visible == (node.parent.parent,)  # ~/.nvm/versions/node/v20.11.0: its lib/ too
    assert found.shim == ""


def test_a_pyenv_shim_becomes_the_interpreter_pyenv_would_run(tmp_path: Path) -> None:
    root = tmp_path / ".pyenv"
    shim = script(root / "shims" / "python3", '#!/bin/sh\nexec pyenv exec python3 "$@"\n')
    real = script(root / "versions" / "3.12.1" / "bin" / "python3.12", "#!/bin/sh\n")
    os.symlink("python3.12", real.parent / "python3")
    # pyenv answers for the directory the program runs in (.python-version there counts)
    script(
        root / "bin" / "pyenv",
        f'#!/bin/sh\n[ "$1 $2" = "which python3" ] && [ -f .python-version ] && echo {real.parent}/python3\n',
    )
    (tmp_path / ".python-version").write_text("3.12.1\n")
    found = resolve(["python3", "bot.py"], cwd=str(tmp_path), env={"PATH": f"{shim.parent}:/usr/bin"})
    assert found.argv == (str(real.parent / "python3"), "bot.py")
    assert found.visible == (root / "versions" / "3.12.1",)
    assert found.shim == str(shim)


def test_a_home_is_never_an_installation_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "alice"))
    tool = script(tmp_path / "alice" / "bin" / "mybot", "#!/bin/sh\n")
    found = resolve(["mybot"], cwd=None, env={"PATH": str(tool.parent)})
    assert found.visible == (tool.parent,)  # ~/bin, not the whole home
    system = resolve(["sh"], cwd=None, env={"PATH": "/usr/bin:/bin"})
    assert Path(system.argv[0]).is_absolute() and all(p != Path("/") for p in system.visible)


def test_an_unknown_command_is_left_for_the_preflight_to_report(tmp_path: Path) -> None:
    found = resolve(["no-such-interpreter", "bot"], cwd=str(tmp_path), env={"PATH": str(tmp_path)})
    assert found.argv == ("no-such-interpreter", "bot") and found.visible == ()
