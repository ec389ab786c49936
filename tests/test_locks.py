"""The two locks agree: requirements/serve.lock (what ./scripts/serve installs) is a lean subset of
requirements/dev.lock (what ./scripts/test installs), pin for pin and hash for hash.

Why it matters: ./scripts/bootstrap --runtime accepts a development .venv as it is, and the
tests run on dev.lock: a package at another version in serve.lock would be served untested. The
runtime lock must also hold what the server needs (setup.py's pins and the mdns extra, the build
backend bootstrap installs with) and none of the development tools or the terminal UI.

A third lock, requirements/bootstrap.lock, pins what bootstrap installs those two with: uv alone,
with the hashes of its wheels.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVE_LOCK = ROOT / "requirements" / "serve.lock"
DEV_LOCK = ROOT / "requirements" / "dev.lock"
BOOTSTRAP_LOCK = ROOT / "requirements" / "bootstrap.lock"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)")
HASH = re.compile(r"--hash=(sha256:[0-9a-f]{64})")
# The terminal UI's packages: never in a server's runtime.
TUI_ONLY = {"textual", "rich", "pygments", "markdown-it-py", "mdit-py-plugins", "linkify-it-py", "mdurl"}


def _name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_lock(path: Path) -> dict[str, tuple[str, frozenset[str]]]:
    """A pip-compile style lock: {normalised name: (version, its hashes)}."""
    pins: dict[str, tuple[str, frozenset[str]]] = {}
    name = ""
    for line in path.read_text().splitlines():
        pin = PIN.match(line)
        if pin:
            name = _name(pin.group(1))
            pins[name] = (pin.group(2), frozenset())
        for digest in HASH.findall(line):
            version, hashes = pins[name]
            pins[name] = (version, hashes | {digest})
    return pins


def requirement_pins(requirements: list[str]) -> dict[str, str]:
    """{name: version} of the ``name==version`` requirements (others, like URLs, are left out)."""
    found = {}
    for requirement in requirements:
        pin = PIN.match(requirement)
        if pin:
            found[_name(pin.group(1))] = pin.group(2)
    return found


def setup_py_runtime() -> list[str]:
    """setup.py's RUNTIME list, read without running setup.py."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "RUNTIME" for target in node.targets
        ):
            value = ast.literal_eval(node.value)
            assert isinstance(value, list)
            return [str(item) for item in value]
    raise AssertionError("setup.py has no RUNTIME list")


def extras() -> dict[str, list[str]]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    optional: dict[str, list[str]] = project["optional-dependencies"]
    return optional


def test_the_lock_reader_reads_pins_and_hashes() -> None:
    serve = read_lock(SERVE_LOCK)
    assert serve["grpcio"][0] == "1.85.1" and len(serve["grpcio"][1]) > 10
    assert all(hashes for _, hashes in serve.values()), "every pin of serve.lock has its hashes"


def test_every_runtime_pin_is_the_dev_lock_s_pin_with_the_same_hashes() -> None:
    serve, dev = read_lock(SERVE_LOCK), read_lock(DEV_LOCK)
    missing = sorted(set(serve) - set(dev))
    assert not missing, f"in serve.lock but not in dev.lock (untested): {missing}"
    differ = {name: (pin[0], dev[name][0]) for name, pin in serve.items() if pin[0] != dev[name][0]}
    assert not differ, f"serve.lock and dev.lock pin other versions: {differ}"
    rehashed = [name for name, pin in serve.items() if pin[1] != dev[name][1]]
    assert not rehashed, f"serve.lock and dev.lock trust other files for: {rehashed}"


def test_the_runtime_lock_holds_what_the_server_needs() -> None:
    serve = read_lock(SERVE_LOCK)
    needed = requirement_pins([*setup_py_runtime(), *extras()["mdns"]])
    assert {"grpcio", "protobuf", "uvicorn", "zeroconf"} <= set(needed)
    wrong = {name: (version, serve.get(name, ("absent",))[0]) for name, version in needed.items()}
    wrong = {name: pair for name, pair in wrong.items() if pair[0] != pair[1]}
    assert not wrong, f"setup.py or the mdns extra pin (left) what serve.lock does not (right): {wrong}"
    # bootstrap installs our two distributions without build isolation: the backend is pinned.
    assert "setuptools" in serve


def test_the_runtime_lock_has_no_development_tool_and_no_terminal_ui() -> None:
    serve = set(read_lock(SERVE_LOCK))
    tools = set(requirement_pins(extras()["dev"]))
    assert {"pytest", "mypy", "ruff", "ray", "grpcio-tools", "py-spy", "hypothesis"} <= tools
    assert not serve & tools, f"development tools in serve.lock: {sorted(serve & tools)}"
    assert not serve & TUI_ONLY, f"the terminal UI in serve.lock: {sorted(serve & TUI_ONLY)}"


def test_the_extras_pin_the_dev_lock_s_versions() -> None:
    dev = read_lock(DEV_LOCK)
    pinned = requirement_pins([*setup_py_runtime(), *(r for reqs in extras().values() for r in reqs)])
    wrong = {name: (version, dev.get(name, ("absent",))[0]) for name, version in pinned.items()}
    wrong = {name: pair for name, pair in wrong.items() if pair[0] != pair[1]}
    assert not wrong, f"setup.py or pyproject.toml pin (left) what dev.lock does not (right): {wrong}"


def test_the_bootstrap_lock_pins_uv_alone_with_its_wheels_hashes() -> None:
    bootstrap = read_lock(BOOTSTRAP_LOCK)
    assert set(bootstrap) == {"uv"}, f"bootstrap.lock pins uv and nothing else: {sorted(bootstrap)}"
    version, hashes = bootstrap["uv"]
    # x86_64 and aarch64 Linux wheels at least (pip --require-hashes refuses any other file).
    assert re.fullmatch(r"\d+\.\d+\.\d+", version) and len(hashes) >= 2
    # scripts/bootstrap reads the version from the pin's line (sed 's/^uv==\([^ ]*\) .*/\1/p').
    pinned = re.search(r"^uv==([^ ]*) ", BOOTSTRAP_LOCK.read_text(), re.M)
    assert pinned is not None and pinned.group(1) == version
    assert "requirements/bootstrap.lock" in (ROOT / "scripts" / "bootstrap").read_text()
