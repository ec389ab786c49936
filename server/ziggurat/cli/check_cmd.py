"""``ziggurat check``: the server's start-up integrity check, offline, for every match.

First says whether the database was left open by a server that crashed and its ``-wal`` file
is gone, which loses the commits that file held. Then runs SQLite's own integrity check,
looks for events whose match row is gone, then rebuilds
every match from its log exactly as the server would (structure, replay through the rules)
and verifies every finished one as ``ziggurat verify`` does (seed vs commitment, every move,
the outcome). It opens the file read-only, so it may run beside a live server. Exit 0 when
nothing is damaged, 1 when something is (each damaged match named once), 2 when the file
cannot be checked at all.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ziggurat.cli.commands import summary_of
from ziggurat.core.integrity import MatchDamaged, load_stored, rebuild
from ziggurat.store.owner import wal_problem
from ziggurat.store.sqlite import Store
from ziggurat.store.startup import SQLITE_READONLY

PROGRESS_EVERY = 2.0  # seconds between progress lines on stderr


def register(commands: Any) -> None:
    """Add ``check``."""
    parser = commands.add_parser(
        "check",
        help=summary_of("check"),
        description=(
            "Check a ziggurat database offline (read-only; safe beside a running server): SQLite's "
            "integrity check, then every match rebuilt from its log as the server does at start-up, "
            "and every finished match verified like `ziggurat verify`. Exit 0 if nothing is damaged, "
            "1 if anything is (each damaged match is named), 2 if the file cannot be checked."
        ),
    )
    parser.add_argument("--db", required=True, type=Path, help="the database file")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.set_defaults(handler=_run)


@dataclass
class Report:
    """What ``ziggurat check`` found."""

    sqlite_problems: list[str] = field(default_factory=list)
    damaged: dict[str, str] = field(default_factory=dict)  # match id -> why
    finished: int = 0
    unfinished: int = 0
    table_error: str = ""
    wal_problem: str = ""  # the -wal file of a database left open is gone

    @property
    def ok(self) -> bool:
        """True when nothing at all is damaged."""
        return not (self.sqlite_problems or self.damaged or self.table_error or self.wal_problem)


def check_database(path: Path, *, progress: TextIO | None = None) -> Report:
    """Check the database at ``path`` (which must exist); raises sqlite3.Error if it cannot open."""
    return asyncio.run(_check_all(path, progress))


async def _check_all(path: Path, progress: TextIO | None) -> Report:
    report = Report(wal_problem=wal_problem(path) or "")
    store = Store(path, readonly=True)
    try:
        try:
            report.sqlite_problems = store.integrity_problems()
        except sqlite3.Error as error:  # too damaged for the check to finish: still go on
            report.sqlite_problems = [f"the integrity check stopped: {error}"]
        try:
            ids = store.match_ids()
        except sqlite3.Error as error:
            report.table_error = f"the match table cannot be read: {error}"
            return report
        try:
            for match_id in store.orphan_event_match_ids():
                report.damaged[match_id] = "its events are stored but its match row is gone"
        except sqlite3.Error as error:
            report.table_error = f"the event table cannot be read through: {error}"
        last = time.monotonic()
        for index, match_id in enumerate(ids, 1):
            _check_match(store, match_id, report)
            if progress is not None and time.monotonic() - last >= PROGRESS_EVERY:
                last = time.monotonic()
                print(f"checked {index:,} of {len(ids):,} matches…", file=progress, flush=True)
    finally:
        store.close()
    return report


def _check_match(store: Store, match_id: str, report: Report) -> None:
    try:
        stored = load_stored(store, match_id)
        if stored is None:
            report.damaged[match_id] = "its match row vanished while it was read"
            return
        try:
            match = rebuild(stored, store, log_events=_quiet)
        except sqlite3.OperationalError as error:
            if (error.sqlite_errorcode & 0xFF) != SQLITE_READONLY:
                raise
            # The replay succeeded; the server would now record the start of a match that had
            # filled up just before a crash, which a read-only check does not do.
            report.unfinished += 1
            return
    except MatchDamaged as damage:
        report.damaged[match_id] = str(damage)
        return
    except sqlite3.Error as error:
        report.damaged[match_id] = f"its rows cannot be read: {error}"
        return
    if match.status == "finished":
        report.finished += 1
    else:
        report.unfinished += 1
    match.close()


def _quiet(_: str) -> None:
    """Rebuilding logs every replayed event on a server; the check keeps quiet."""


def _run(args: argparse.Namespace) -> int:
    path: Path = args.db
    if not path.is_file():
        print(f"error: no database file {path}", file=sys.stderr)
        return 2
    print(f"checking {path}")
    lost = wal_problem(path)  # before SQLite opens the file (a reader may create a new -wal)
    if lost:
        print(f"DAMAGED: {lost}")
    try:
        report = check_database(path, progress=None if args.quiet else sys.stderr)
        report.wal_problem = report.wal_problem or lost or ""
    except sqlite3.Error as error:
        print(f"DAMAGED: {path} cannot be opened as an SQLite database: {error}")
        return 1
    if report.sqlite_problems:
        print(f"DAMAGED: SQLite's integrity check found {len(report.sqlite_problems)} problems:")
        for problem in report.sqlite_problems[:10]:
            print(f"  {problem}")
    else:
        print("SQLite integrity check: ok")
    if report.table_error:
        print(f"DAMAGED: {report.table_error}")
    for match_id, why in sorted(report.damaged.items()):
        print(f"DAMAGED match {match_id}: {why}")
    print(
        f"{report.finished:,} finished matches verified, {report.unfinished:,} unfinished matches rebuilt, "
        f"{len(report.damaged):,} damaged"
    )
    return 0 if report.ok else 1
