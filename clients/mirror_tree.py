"""Keep a copy of a tree in step with it by content, so that a build keyed by paths and file
times stays warm across fresh clones.

Why: cargo keys a package's artifacts by its path and decides what to rebuild by file times.
Every fresh clone is a new path with new times, so ``clients/rust/test.sh`` compiled the client
crate again on each (about 39 CPU s, the largest cost of a warm CI run after the browser tests).
Building in a copy at a fixed path, in which a file whose content did not change keeps its old
time, lets cargo rebuild only what changed.

Usage: ``git ls-files -z ... | python3 mirror_tree.py SOURCE MIRROR``: the NUL-separated paths
on stdin, relative to SOURCE, are the tree. Afterwards MIRROR holds exactly those files (and
symbolic links) with SOURCE's content: a changed or new file is written (with SOURCE's time, so
it is newer than the last build), an unchanged one is left alone, and anything else in MIRROR is
removed. A path listed but missing in SOURCE (deleted, not yet staged) is left out. The caller
holds a lock: two runs must not write one mirror at once.

>>> import tempfile, pathlib
>>> source, mirror = (pathlib.Path(tempfile.mkdtemp()) for _ in range(2))
>>> _ = (source / "a.rs").write_text("fn main() {}")
>>> sync(source, mirror, ["a.rs"])
Counts(written=1, kept=0, removed=0)
>>> sync(source, mirror, ["a.rs"])
Counts(written=0, kept=1, removed=0)
>>> (mirror / "a.rs").read_text()
'fn main() {}'
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple


class Counts(NamedTuple):
    """What one sync did: files written, files left as they were, files removed."""

    written: int
    kept: int
    removed: int


def _same(source: Path, copy: Path) -> bool:
    """Whether ``copy`` already is ``source``: the same link target, or the same bytes."""
    if source.is_symlink() or copy.is_symlink():
        return source.is_symlink() and copy.is_symlink() and os.readlink(source) == os.readlink(copy)
    if not copy.is_file() or source.stat().st_size != copy.stat().st_size:
        return False
    return source.read_bytes() == copy.read_bytes()


def _write(source: Path, copy: Path) -> None:
    """Put ``source`` at ``copy`` by a rename, so that a reader never sees half a file."""
    copy.parent.mkdir(parents=True, exist_ok=True)
    if copy.is_dir() and not copy.is_symlink():
        shutil.rmtree(copy)
    staged = copy.with_name(f".{copy.name}.mirror-{os.getpid()}")
    if source.is_symlink():
        os.symlink(os.readlink(source), staged)
    else:
        shutil.copy2(source, staged)
    os.replace(staged, copy)


def sync(source: Path, mirror: Path, paths: Iterable[str]) -> Counts:
    """Make ``mirror`` hold exactly ``paths`` (relative to ``source``) with ``source``'s content."""
    wanted: set[Path] = set()
    written = kept = removed = 0
    for path in paths:
        here = source / path
        if not (here.is_symlink() or here.is_file()):
            continue  # listed by git, gone from the working tree
        wanted.add(Path(path))
        if _same(here, mirror / path):
            kept += 1
        else:
            _write(here, mirror / path)
            written += 1
    for directory, subdirectories, files in os.walk(mirror, topdown=False):
        for name in files + [d for d in subdirectories if (Path(directory) / d).is_symlink()]:
            found = Path(directory) / name
            if found.relative_to(mirror) not in wanted:
                found.unlink()
                removed += 1
        if Path(directory) != mirror and not any(Path(directory).iterdir()):
            Path(directory).rmdir()
    return Counts(written, kept, removed)


def main(argv: list[str]) -> int:
    """Sync ``argv[1]`` into ``argv[2]`` from the NUL-separated paths on stdin; print the counts."""
    if len(argv) != 3:
        print("usage: git ls-files -z | python3 mirror_tree.py SOURCE MIRROR", file=sys.stderr)
        return 2
    paths = [p for p in sys.stdin.buffer.read().decode().split("\0") if p]
    counts = sync(Path(argv[1]), Path(argv[2]), paths)
    written, kept, removed = counts
    print(f"mirror_tree: {argv[2]}: {written} written, {kept} unchanged, {removed} removed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
