"""The reason registry, the code, docs/protocol.md and the proto comment say the same thing."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import grpc
import pytest

from ziggurat.rules.core import RulesError
from ziggurat.wire import errors
from ziggurat.wire.reasons import Reason

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "server" / "ziggurat"
REASON_TEXT = re.compile(r"^[A-Z][A-Z0-9_]+$")
# The helpers of ziggurat.wire.errors that take a reason as their first argument.
HELPERS = {
    "refuse": None,
    "invalid": grpc.StatusCode.INVALID_ARGUMENT,
    "precondition": grpc.StatusCode.FAILED_PRECONDITION,
    "unauthenticated": grpc.StatusCode.UNAUTHENTICATED,
    "permission_denied": grpc.StatusCode.PERMISSION_DENIED,
    "exhausted": grpc.StatusCode.RESOURCE_EXHAUSTED,
}


def _rules_errors() -> list[type[RulesError]]:
    found: list[type[RulesError]] = []
    todo = list(RulesError.__subclasses__())
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def _uses() -> list[tuple[str, str, grpc.StatusCode | None]]:
    """Every reason the server code names: (where, reason, status the call site implies)."""
    uses: list[tuple[str, str, grpc.StatusCode | None]] = []
    for path in sorted(SERVER.rglob("*.py")):
        if "v1" in path.relative_to(SERVER).parts:
            continue
        where = str(path.relative_to(ROOT))
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and getattr(node.value, "id", "") == "Reason":
                uses.append((f"{where}:{node.lineno}", node.attr, None))
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            args = node.args
            if name in HELPERS and args:
                first, code = args[0], HELPERS[name]
            elif name == "ApiError" and len(args) >= 2:
                first, code = args[1], None
            else:
                continue
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                uses.append((f"{where}:{node.lineno}", first.value, code))
    for cls in _rules_errors():
        uses.append((f"{cls.__module__}.{cls.__name__}", cls.reason, None))
    return uses


def test_every_reason_named_in_the_server_is_registered_with_the_status_of_its_call() -> None:
    uses = _uses()
    assert len(uses) > 30, "the scan found too few uses: it is not looking where the code is"
    for where, reason, code in uses:
        assert REASON_TEXT.match(reason), f"{where}: {reason!r} is not an UPPER_SNAKE reason"
        assert reason in Reason.__members__, f"{where}: reason {reason} is not in ziggurat.wire.reasons"
        if code is not None:
            assert Reason[reason].code == code, f"{where}: {reason} travels with {Reason[reason].code.name}"


def test_every_registered_reason_is_used_somewhere() -> None:
    used = {reason for _, reason, _ in _uses()}
    assert set(Reason.__members__) - used == set(), "registered reasons the server never sends"


def test_errors_refuse_unregistered_reasons_and_wrong_statuses() -> None:
    assert errors.refuse(Reason.STALE_PLY, "x").code == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(KeyError):
        errors.invalid("NO_SUCH_REASON", "x")
    with pytest.raises(ValueError, match="FAILED_PRECONDITION"):
        errors.invalid("ILLEGAL_MOVE", "x")


def _expected_rows() -> list[tuple[str, str, str]]:
    return [(reason.name, reason.code.name, reason.meaning) for reason in Reason]


def test_docs_protocol_reasons_table_is_the_registry() -> None:
    text = (ROOT / "docs" / "protocol.md").read_text()
    rows = re.findall(r"^\| `([A-Z_]+)` \| `([A-Z_]+)` \| (.+?) \|$", text, re.MULTILINE)
    expected = "\n".join(f"| `{n}` | `{c}` | {m} |" for n, c, m in _expected_rows())
    assert rows == _expected_rows(), f"docs/protocol.md's reasons table should read:\n{expected}"


def test_proto_comment_lists_the_registry() -> None:
    text = (ROOT / "proto" / "ziggurat" / "v1" / "match_service.proto").read_text()
    rows = re.findall(r"^//   ([A-Z_]+) \(([A-Z_]+)\): (.+)\.$", text, re.MULTILINE)
    expected = "\n".join(f"//   {n} ({c}): {m}." for n, c, m in _expected_rows())
    assert rows == _expected_rows(), f"the MatchService comment should list:\n{expected}"
