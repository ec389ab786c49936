"""tests/tail_signal.py: the file appears once the given share of the tests is done, with xdist's
workers and without them, and never before the first test."""

from __future__ import annotations

import doctest
import os
from pathlib import Path

import pytest

from tests import tail_signal

ROOT = Path(__file__).resolve().parent.parent

INNER_TESTS = """
import os
from pathlib import Path

import pytest


@pytest.mark.parametrize("n", range(20))
def test_sees(n):
    seen = Path(os.environ["TAIL_FILE"]).exists()
    with open(os.environ["SEEN_LOG"], "a") as log:
        log.write(f"{n} {seen}\\n")
"""


def test_its_examples_hold() -> None:
    result = doctest.testmod(tail_signal)
    assert result.attempted > 0
    assert result.failed == 0


def _run(pytester: pytest.Pytester, *args: str) -> tuple[Path, dict[int, bool]]:
    pytester.makepyfile(test_inner=INNER_TESTS)
    tail, seen_log = pytester.path / "tail", pytester.path / "seen.log"
    pytester._monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    pytester._monkeypatch.setenv("TAIL_FILE", str(tail))
    pytester._monkeypatch.setenv("SEEN_LOG", str(seen_log))
    result = pytester.runpytest_subprocess(
        "-p", "tests.tail_signal", "-p", "no:cacheprovider", "--tail-file", str(tail), *args
    )
    result.assert_outcomes(passed=20)
    seen = {
        int(n): flag == "True" for n, flag in (line.split() for line in seen_log.read_text().splitlines())
    }
    return tail, seen


def test_without_xdist_the_file_appears_once_the_share_is_done(pytester: pytest.Pytester) -> None:
    tail, seen = _run(pytester, "--tail-percent", "50")
    assert tail.exists()
    assert seen == {n: n >= 10 for n in range(20)}  # ten of twenty done: the eleventh sees it


@pytest.mark.slow
def test_with_xdist_the_controller_counts_the_workers_tests(pytester: pytest.Pytester) -> None:
    tail, seen = _run(pytester, "-n", "2", "--tail-percent", "50")
    assert tail.exists()
    assert len(seen) == 20
    # at least ten ran before it appeared; the last ones ran after (each worker runs at most
    # its current test and one more already sent to it before the controller hears)
    assert sum(not flag for flag in seen.values()) >= 10
    assert sum(flag for flag in seen.values()) >= 20 - 10 - 4


def test_at_100_percent_it_appears_after_the_last_test(pytester: pytest.Pytester) -> None:
    tail, seen = _run(pytester, "--tail-percent", "100")
    assert tail.exists()
    assert seen == {n: False for n in range(20)}
