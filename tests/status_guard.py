"""Pytest plugin: a test fails when any ziggurat server let UNKNOWN or INTERNAL reach a client.

Every ziggurat server installs :class:`ziggurat.api.status_guard.StatusGuard`,
which appends one JSON line to the file named by ``ZIGGURAT_STATUS_GUARD_FILE``
for every such status. This plugin points that variable at a file of its own per
pytest process (so servers started in-process and ``ziggurat serve`` subprocesses
both write there) and, after each test, fails the test if lines were added while
it ran.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ziggurat.api.status_guard import GUARD_FILE_ENV


def pytest_configure(config: pytest.Config) -> None:
    """A fresh guard file for this pytest process (each xdist worker gets its own)."""
    handle, path = tempfile.mkstemp(prefix="ziggurat-status-guard-", suffix=".jsonl")
    os.close(handle)
    os.environ[GUARD_FILE_ENV] = path


@pytest.fixture(autouse=True)
def no_unknown_or_internal_status() -> Iterator[None]:
    """Fail the test if a server answered UNKNOWN or INTERNAL while it ran."""
    path = Path(os.environ[GUARD_FILE_ENV])
    start = path.stat().st_size if path.exists() else 0
    yield
    added = path.read_bytes()[start:].decode("utf-8", "replace") if path.exists() else ""
    if added.strip():
        pytest.fail(f"a server sent UNKNOWN/INTERNAL to a client during this test:\n{added}", pytrace=False)
