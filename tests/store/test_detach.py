"""Store.detach: the server closes its database on a thread, and the event loop can no longer
reach the connection meanwhile (Python's sqlite3 connection must never be used by two threads
at once: a use during the close can crash the process)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from ziggurat.store.sqlite import Store, StoreUnavailableError


def test_a_detached_store_refuses_every_call_while_another_thread_closes_it(tmp_path: Path) -> None:
    db = tmp_path / "z.db"
    store = Store(db)
    store.register_bot("kept", "hash", 1)
    finish = store.detach()
    closing = threading.Thread(target=finish)
    closing.start()
    refused_reads = refused_writes = 0
    while closing.is_alive() or refused_reads < 100:
        with pytest.raises(sqlite3.ProgrammingError, match="closed database"):
            store.bot_token_hash("kept")
        refused_reads += 1
        with pytest.raises(StoreUnavailableError):
            store.register_bot(f"late-{refused_writes}", "hash", 2)
        refused_writes += 1
    closing.join()
    # The detached connection did the final checkpoint and closed: the WAL is empty, the
    # write made before is in the file, none of the refused ones is.
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0
    again = Store(db)
    try:
        assert again.bot_token_hash("kept") == "hash"
        assert again.bot_token_hash("late-0") is None
    finally:
        again.close()
