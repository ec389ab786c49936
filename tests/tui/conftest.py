"""A real server as ``ziggurat serve`` builds it (with its built-in bots) on 127.0.0.1:0 in the
test's event loop; seat files in a temporary directory (never the user's own state directory)."""

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.servers import RunningServer
from ziggurat.bots.house import HouseBots
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.tui.i18n import set_language


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[RunningServer]:
    """The server of every TUI test: built-in bots included, so the lobby can seat them."""
    running = ZigguratServer(
        ServeOptions(host="127.0.0.1", port=0, db_path=str(tmp_path / "z.db"), grace_seconds=0.2),
        house_bots=HouseBots,
    )
    port = await running.start()
    yield RunningServer(running, f"127.0.0.1:{port}", tmp_path / "z.db")
    await running.stop()


@pytest.fixture(autouse=True)
def seat_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """ZIGGURAT_STATE_DIR for every TUI test: where the seat tokens are kept."""
    directory = tmp_path / "state"
    monkeypatch.setenv("ZIGGURAT_STATE_DIR", str(directory))
    yield directory


@pytest.fixture(autouse=True)
def english() -> Iterator[None]:
    """Every TUI test starts in English and leaves English behind: the language is one per
    process, and a test that opened the app in Romanian must not change the next test's words."""
    set_language("en")
    yield
    set_language("en")
