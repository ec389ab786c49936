"""The layers point down only; the thin client stands alone.

    rules ← wire ← store ← core ← api ← web ← hosting ← tournament, arena ← cli

``core`` (the match core: events, decide/evolve, the commit path, views, the manager) knows no
listener and no process; ``api`` (servicers, guards, credentials, the competition policy) turns
calls into the core's operations; ``web`` (the Connect port) serves the same servicers to
browsers; ``hosting`` (the server process, workers and shards, the gate, mDNS) assembles them.
Where a lower room needs something of a higher one (the core asks which worker owns a match,
a servicer lists every worker's matches), it names a Protocol and the higher room hands it in.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import ziggurat
import ziggurat_client

PACKAGE = Path(ziggurat.__file__).parent
CLIENT = Path(ziggurat_client.__file__).parent

# What the thin client (its own distribution, ziggurat-client) may import: the standard
# library, grpcio, protobuf and itself. Never the server (ziggurat.*).
CLIENT_ALLOWED = ("grpc", "google.protobuf", "ziggurat_client")
# mypy-protobuf's typing stubs also use typing_extensions, read by type checkers only.
STUB_ALLOWED = (*CLIENT_ALLOWED, "typing_extensions")

# For each layer, the imports it must never make (prefix match on the module name).
_ABOVE_HOSTING = [
    "ziggurat.cli",
    "ziggurat.bots",
    "ziggurat.tui",
    "ziggurat.stdio",
    "ziggurat.tournament",
    "ziggurat.arena",
]
FORBIDDEN = {
    "rules": [
        "grpc",
        "google",
        "asyncio",
        "sqlite3",
        "socket",
        "ziggurat.v1",
        "ziggurat.wire",
        "ziggurat.store",
        "ziggurat.core",
        "ziggurat.api",
        "ziggurat.web",
        "ziggurat.hosting",
        "ziggurat.cli",
        "ziggurat_client",
        "os",
        "io",
        "logging",
    ],
    "wire": [
        "ziggurat.store",
        "ziggurat.core",
        "ziggurat.api",
        "ziggurat.web",
        "ziggurat.hosting",
        "ziggurat.cli",
        "sqlite3",
        "asyncio",
    ],
    "store": [
        "grpc",
        "ziggurat.v1",
        "ziggurat.wire",
        "ziggurat.core",
        "ziggurat.api",
        "ziggurat.web",
        "ziggurat.hosting",
        "ziggurat.cli",
    ],
    # the match core: no servicer, no listener, no process
    "core": ["ziggurat.api", "ziggurat.web", "ziggurat.hosting", *_ABOVE_HOSTING],
    # the API edge: no web port (no api <-> web cycle), no hosting
    "api": ["ziggurat.web", "ziggurat.hosting", *_ABOVE_HOSTING],
    # the web port serves the API edge's servicers; the hosting assembles it
    "web": ["ziggurat.hosting", *_ABOVE_HOSTING],
    "hosting": _ABOVE_HOSTING,
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_layers_import_only_downwards() -> None:
    problems = []
    for layer, forbidden in FORBIDDEN.items():
        files = sorted((PACKAGE / layer).glob("*.py"))
        assert files, f"layer {layer} has no modules"
        for path in files:
            for name in _imports(path):
                if any(name == bad or name.startswith(bad + ".") for bad in forbidden):
                    problems.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert not problems, problems


def test_rules_has_no_generated_protobuf_or_io() -> None:
    for path in (PACKAGE / "rules").glob("*.py"):
        text = path.read_text()
        assert "_pb2" not in text, path
        assert "open(" not in text, path


def test_thin_client_imports_nothing_from_the_server() -> None:
    files = sorted(CLIENT.rglob("*.py")) + sorted(CLIENT.rglob("*.pyi"))
    assert len(files) > 10
    problems = []
    for path in files:
        for name in _imports(path):
            top = name.split(".")[0]
            if top in sys.stdlib_module_names or top == "__future__":
                continue
            allowed = STUB_ALLOWED if path.suffix == ".pyi" else CLIENT_ALLOWED
            if not any(name == ok or name.startswith(ok + ".") for ok in allowed):
                problems.append(f"{path.relative_to(CLIENT)} imports {name}")
    assert not problems, problems


# The packages of the extras (ziggurat.extras.EXTRAS): a module may import them as it is loaded
# only if it is the feature itself; anything else imports them where the feature runs, so that
# `ziggurat serve` and every other command work on an install without the extra.
OPTIONAL = {"textual", "rich", "zeroconf", "ifaddr", "pygments"}
# The features themselves (which load them) count as optional too.
OPTIONAL_MODULES = ("ziggurat.tui", "ziggurat.hosting.mdns")
OPTIONAL_AT_LOAD = ("tui/", "hosting/mdns.py")


def _imports_at_load(path: Path) -> set[str]:
    """What a module imports when it is loaded: its top level, ``if TYPE_CHECKING:`` blocks excluded."""
    found: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.If | ast.Try):
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import):
                    found.update(alias.name for alias in inner.names)
                elif isinstance(inner, ast.ImportFrom) and inner.module and inner.level == 0:
                    found.add(inner.module)
    return found


def test_only_the_optional_features_load_their_extras() -> None:
    problems = []
    seen = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("v1/"):
            continue
        for name in _imports_at_load(path):
            optional = name.split(".")[0] in OPTIONAL or any(
                name == module or name.startswith(module + ".") for module in OPTIONAL_MODULES
            )
            if optional:
                seen.add(relative)
                if not relative.startswith(OPTIONAL_AT_LOAD):
                    problems.append(f"{relative} imports {name} when it is loaded")
    assert "hosting/mdns.py" in seen and "tui/app.py" in seen  # the check sees them
    assert not problems, problems
