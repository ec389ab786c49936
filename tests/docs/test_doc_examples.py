"""Every code example in README.md and docs/*.md runs, against a real server subprocess.

Docs are a contract read literally by people writing bots in other languages, so their
examples must not rot. Each fenced block tagged with a language carries a marker on the
line before it that says how it is checked:

- ``<!-- doc-test: run [ARGS] -->``: a ``python`` block runs as a script (with ARGS), an
  ``sh`` block runs with ``bash -euo pipefail``; either must exit 0.
- ``<!-- doc-test: file NAME -->``: the block is saved as NAME in the document's working
  directory, for the blocks after it (e.g. a bot class a command then runs).
- ``<!-- doc-test: transcript -->``: ``$ command`` lines and the output they must print.
- ``<!-- doc-test: terminals -->``: each command line is a separate terminal, started in
  order; ``MATCH_ID`` stands for the match id an earlier terminal printed; all must exit 0.
- ``<!-- doc-test: skip REASON -->``: not run, for the reason given (a test checks there is one).

Placeholders, replaced by the test: the documented server address (``127.0.0.1:50051`` and
``localhost:50051``) and ``ADDRESS`` become the test server's address, the documented web
client address ``http://localhost:8080/`` its web client's; ``PYLOS_MATCH_ID`` is a
fresh Pylos match whose other seat a built-in random bot plays. All blocks of one document
share one working directory (where the repository's ``examples/`` is linked) and run in
document order.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import processes
from tests.servers import ServerProcess

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
DOCUMENTED_ADDRESSES = ("127.0.0.1:50051", "localhost:50051")
# The documented web client address, replaced by the test server's.
DOCUMENTED_WEB = "http://localhost:8080/"
MARKER = re.compile(r"<!-- doc-test: (\w+)\s*(.*?)\s*-->")
FENCE = re.compile(r"^```(\S*)\s*$")
TIMEOUT = 120


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language, its marker and its text."""

    path: Path
    line: int
    language: str
    mode: str | None
    argument: str
    text: str

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, each with the marker on the line before it."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = index + 1
        while not lines[end].startswith("```"):
            end += 1
        marker = MARKER.match(lines[index - 1].strip()) if index else None
        found.append(
            Block(
                path=path,
                line=index + 1,
                language=opening.group(1),
                mode=marker.group(1) if marker else None,
                argument=marker.group(2) if marker else "",
                text="\n".join(lines[index + 1 : end]) + "\n",
            )
        )
        index = end + 1
    return found


def code_blocks() -> list[Block]:
    """Blocks tagged with a language: code. Untagged blocks are notation or layout text."""
    return [b for path in DOCUMENTS for b in blocks(path) if b.language]


def test_every_code_block_has_a_marker() -> None:
    """A new example cannot slip past the tests: it must say how it runs (or why it cannot)."""
    unmarked = [b.name for b in code_blocks() if b.mode is None]
    assert not unmarked, f"code blocks without a <!-- doc-test: ... --> marker: {unmarked}"
    for block in code_blocks():
        assert block.mode in ("run", "file", "transcript", "terminals", "skip"), block.name
        if block.mode == "skip":
            assert len(block.argument.split()) >= 3, f"{block.name}: say why it is skipped"


def test_marker_parser_sees_every_fence() -> None:
    """The parser finds the known examples (so a parsing bug cannot make the test vacuous)."""
    names = {b.name: b for b in code_blocks()}
    protocol = [b for b in names.values() if b.path.name == "protocol.md" and b.language == "python"]
    assert protocol and "message.events" in protocol[0].text
    assert any(b.mode == "terminals" for b in names.values())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path_factory.mktemp("docs-server") / "z.db")
    process.start()
    yield process
    process.stop()


def environment() -> dict[str, str]:
    """PATH with the project's commands (ziggurat, the venv's python, grpcurl) first."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return {**os.environ, "PATH": path, "PYTHONUNBUFFERED": "1"}


def require_tool(name: str) -> None:
    """A tool an example uses comes from scripts/bootstrap (grpcurl: into .venv/bin, pinned),
    never from a download or a build in the middle of a timed test."""
    if shutil.which(name, path=environment()["PATH"]) is None:
        pytest.fail(f"{name} is needed by a documented example: run scripts/bootstrap with go on PATH")


def substitute(text: str, address: str, values: dict[str, str]) -> str:
    for documented in DOCUMENTED_ADDRESSES:
        text = text.replace(documented, address)
    for placeholder, value in values.items():
        text = text.replace(placeholder, value)
    return text


def new_pylos_match_with_opponent(address: str, workdir: Path) -> tuple[str, subprocess.Popen[str]]:
    """A fresh Pylos match; a built-in random bot takes one seat, the example the other."""
    opponent = processes.popen(
        ["ziggurat", "bot", "random", "--server", address, "--create", "pylos"],
        cwd=workdir, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert opponent.stdout is not None
    first = opponent.stdout.readline()
    created = re.search(r"created match (\S+)", first)
    assert created, first
    return created.group(1), opponent


def run_block(block: Block, address: str, workdir: Path, web_url: str = "") -> None:
    env = environment()
    if block.mode == "file":
        (workdir / block.argument).write_text(block.text, encoding="utf-8")
    elif block.mode == "transcript":
        run_transcript(block, address, workdir, env)
    elif block.mode == "terminals":
        run_terminals(block, address, workdir, env)
    elif block.mode == "run":
        opponents: list[subprocess.Popen[str]] = []
        values = {"ADDRESS": address, DOCUMENTED_WEB: web_url}
        if "PYLOS_MATCH_ID" in block.argument:
            match_id, opponent = new_pylos_match_with_opponent(address, workdir)
            values["PYLOS_MATCH_ID"] = match_id
            opponents.append(opponent)
        args = substitute(block.argument, address, values).split()
        text = substitute(block.text, address, values)
        if block.language == "python":
            script = workdir / f"example_{block.line}.py"
            script.write_text(text, encoding="utf-8")
            command = [sys.executable, str(script), *args]
        else:
            assert block.language == "sh", block.name
            if "grpcurl" in text:
                require_tool("grpcurl")
            command = ["bash", "-euo", "pipefail", "-c", text]
        try:
            done = processes.run(
                command, cwd=workdir, env=env, capture_output=True, text=True, timeout=TIMEOUT
            )
            assert done.returncode == 0, f"{block.name}:\n{done.stdout}\n{done.stderr}"
            for opponent in opponents:
                assert opponent.wait(TIMEOUT) == 0, f"{block.name}: the opponent failed"
        finally:
            for opponent in opponents:
                processes.stop(opponent)


def run_transcript(block: Block, address: str, workdir: Path, env: dict[str, str]) -> None:
    command: str | None = None
    expected: list[str] = []

    def check() -> None:
        if command is None:
            return
        done = processes.run(
            ["bash", "-c", substitute(command, address, {})],
            cwd=workdir, env=env, capture_output=True, text=True, timeout=TIMEOUT,
        )  # fmt: skip
        assert done.stdout.splitlines() == expected, f"{block.name}: {command}\n{done.stderr}"

    for line in block.text.splitlines():
        if line.startswith("$ "):
            check()
            command, expected = line[2:], []
        else:
            expected.append(line)
    check()


def run_terminals(block: Block, address: str, workdir: Path, env: dict[str, str]) -> None:
    commands = [line.split("  #")[0].strip() for line in block.text.splitlines()]
    commands = [c for c in commands if c and not c.startswith("#")]
    terminals: list[subprocess.Popen[str]] = []
    outputs: list[str] = []
    match_id = ""
    try:
        for command in commands:
            if "MATCH_ID" in command:
                deadline = time.monotonic() + 30
                while not match_id:
                    assert time.monotonic() < deadline, f"{block.name}: no terminal printed a match id"
                    for process in terminals:
                        assert process.stdout is not None
                        line = process.stdout.readline()
                        outputs.append(line)
                        found = re.search(r"match (\S+)", line)
                        if found:
                            match_id = found.group(1)
                            break
            process = processes.popen(
                ["bash", "-c", substitute(command, address, {"MATCH_ID": match_id})],
                cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip
            terminals.append(process)
        for process, command in zip(terminals, commands, strict=True):
            out, _ = process.communicate(timeout=TIMEOUT)
            outputs.append(out)
            assert process.returncode == 0, f"{block.name}: {command}\n{''.join(outputs)}"
    finally:
        for process in terminals:
            processes.stop(process)


@pytest.mark.slow
@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(REPO)))
def test_examples_of_document_run(document: Path, server: ServerProcess, tmp_path: Path) -> None:
    """The document's code blocks, in order, in one working directory, against a real server."""
    runnable = [b for b in blocks(document) if b.language and b.mode != "skip"]
    if not runnable:
        pytest.skip(f"{document.name} has no runnable code blocks")
    (tmp_path / "examples").symlink_to(REPO / "examples")  # examples refer to examples/...
    for block in runnable:
        run_block(block, server.address, tmp_path, server.web_url)


RULES = REPO / "docs" / "rules"
# shared/ lies beside the repository (CI's clone, /work/main) or beside its worktree folder.
SHARED_RULES = next(
    (p / "shared" / "rules" for p in (REPO.parent, REPO.parent.parent) if (p / "shared" / "rules").is_dir()),
    REPO.parent / "shared" / "rules",
)


@pytest.mark.parametrize("page", ["kabaleo.md", "pylos.md"])
def test_rules_pages_match_the_shared_specification(page: str) -> None:
    """docs/rules/ is the in-repository copy of the specification: identical, or it is a bug."""
    shared = SHARED_RULES / page
    if not shared.exists():
        pytest.skip(f"{shared} is not present beside the repository")
    assert (RULES / page).read_bytes() == shared.read_bytes(), f"docs/rules/{page} differs from {shared}"


def test_docs_link_the_rules_inside_the_repository() -> None:
    """Readers follow links from the repository: none may point outside it to ../shared."""
    pages = [*DOCUMENTS, *REPO.glob("clients/*/README.md")]
    for page in pages:
        assert "../shared/" not in page.read_text(encoding="utf-8"), page
    for readme in REPO.glob("clients/*/README.md"):
        text = readme.read_text(encoding="utf-8")
        assert "docs/rules/kabaleo.md" in text and "docs/rules/pylos.md" in text, readme
