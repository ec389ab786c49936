"""The real-server fixtures of tests/service, shared with the client tests; seat files in a
temporary directory (never the user's own state directory)."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.service.conftest import client, server, server_process

__all__ = ["client", "server", "server_process"]


@pytest.fixture(autouse=True)
def seat_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """ZIGGURAT_STATE_DIR for every TUI test: where the seat tokens are kept."""
    directory = tmp_path / "state"
    monkeypatch.setenv("ZIGGURAT_STATE_DIR", str(directory))
    yield directory
