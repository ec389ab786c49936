"""Arena tests, as tournament tests: sandboxed programs run as users of their own, so test
directories must be readable by other users (as a real organiser's bot directories are);
pytest makes them 0700."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _readable_tmp_path(tmp_path: Path) -> None:
    os.chmod(tmp_path, 0o755)
