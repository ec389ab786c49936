#!/usr/bin/env python3
"""Writes the rules texts the web client serves (public/rules-GAME-LANG.txt).

English is docs/rules/*.md as it is; the other languages are the original rule texts
(docs/../seeds, given as the seeds directory), whose Romanian accented letters were stored as
UTF-8 bytes read back as Windows-1252 ("CONÅ¢INUT" for "CONŢINUT"). Each garbled run (a lead
byte Â-Å followed by a continuation byte) is turned back into its bytes and decoded as UTF-8;
a run that does not decode is left as it was, so correct text is never touched. The repair is
faithful: the letters are the ones the bytes say (ş and ţ with cedilla, as the author typed).

    python3 scripts/rules-texts.py /work/shared/seeds
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

WEB = Path(__file__).resolve().parents[1]
DOCS = WEB.parents[1] / "docs" / "rules"
SEEDS = {
    "000_40529deb1c286d2a.txt": "rules-kabaleo-ro.txt",
    "001_e7a05005aabf640e.txt": "rules-kabaleo-hu.txt",
    "002_01c1214d44638357.txt": "rules-pylos-eu.txt",
}
GARBLED = re.compile("[\u00c2-\u00c5][\u0080-\u00bf\u0152-\u2122]")


def repair(text: str) -> str:
    """Undo UTF-8 read as Windows-1252, one two-character run at a time."""

    def fix(run: re.Match[str]) -> str:
        try:
            return run.group(0).encode("cp1252").decode("utf-8")
        except UnicodeError:
            return run.group(0)

    return GARBLED.sub(fix, text)


def main(seeds: Path) -> None:
    """Write the rules texts the web port serves: English from docs/rules, the seeds repaired."""
    for game in ("pylos", "kabaleo"):
        (WEB / "public" / f"rules-{game}-en.txt").write_bytes((DOCS / f"{game}.md").read_bytes())
    for seed, name in SEEDS.items():
        text = repair((seeds / seed).read_text(encoding="utf-8"))
        (WEB / "public" / name).write_text(text.rstrip() + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
