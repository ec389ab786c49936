"""``--tail-file PATH``: create PATH once the run reaches its tail, so that scripts/test can start
the other suites then, not only after pytest's last test.

At the end of a parallel run the workers run out of tests one by one, and the machine has cores
to spare while the last long tests finish (on CI's 2 cores, about a minute with half the CPU
idle). The suites that follow pytest (the browser tests, the gate's and the other languages')
take minutes and fill those cores. The tail is where ``--tail-percent`` of the tests (95 by
default) are done: counted by the process that reports results (xdist's controller, or the only
process without xdist), once the number of tests is known.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--tail-file",
        metavar="PATH",
        help="create PATH once --tail-percent of the tests are done (tests/tail_signal.py)",
    )
    parser.addoption(
        "--tail-percent",
        type=float,
        default=95.0,
        help="how much of the run is done when --tail-file is created (default 95)",
    )


def tail_reached(done: int, total: int, percent: float) -> bool:
    """Whether ``done`` of ``total`` tests is ``percent`` of the run (the last test always is).

    >>> tail_reached(94, 100, 95.0), tail_reached(95, 100, 95.0), tail_reached(3, 3, 100.0)
    (False, True, True)
    >>> tail_reached(0, 0, 95.0)
    False
    """
    return total > 0 and done * 100 >= total * percent


class TailSignal:
    """Counts finished tests in the reporting process and creates the file at the tail."""

    def __init__(self, path: Path, percent: float) -> None:
        self.path = path
        self.percent = percent
        self.total = 0
        self.done = 0

    def collected(self, count: int) -> None:
        self.total = count
        self._check()

    def finished_one(self) -> None:
        self.done += 1
        self._check()

    def _check(self) -> None:
        if tail_reached(self.done, self.total, self.percent) and not self.path.exists():
            self.path.touch()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.collected(len(ids))  # every worker collects the same tests

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if session.items:  # without xdist (under xdist the controller collects nothing)
            self.collected(len(session.items))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":
            self.finished_one()


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--tail-file")
    if path and not hasattr(config, "workerinput"):  # xdist's workers report to the controller
        config.pluginmanager.register(
            TailSignal(Path(path), config.getoption("--tail-percent")), "tail-signal"
        )
