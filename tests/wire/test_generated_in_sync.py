"""The committed generated code is exactly what scripts/gen-proto makes from proto/."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_generated_code_matches_the_protos(tmp_path: Path) -> None:
    subprocess.run(
        [str(ROOT / "scripts" / "gen-proto"), str(tmp_path)], check=True, capture_output=True, cwd=ROOT
    )
    fresh = {p.relative_to(tmp_path): p.read_bytes() for p in (tmp_path / "ziggurat" / "v1").iterdir()}
    committed_dir = ROOT / "server" / "ziggurat" / "v1"
    committed = {
        p.relative_to(ROOT / "server"): p.read_bytes() for p in committed_dir.iterdir() if p.is_file()
    }
    assert fresh.keys() == committed.keys(), "run scripts/gen-proto"
    stale = [str(name) for name, data in fresh.items() if committed[name] != data]
    assert not stale, f"stale generated files (run scripts/gen-proto): {stale}"
