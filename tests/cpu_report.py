"""Where the suite's time goes: CPU seconds per test, summed per folder, printed at the end.

The suite's wall time cannot fall below its CPU seconds divided by the cores, whatever the
number of workers, and the rest of it is waiting (timers, restarts, a loaded machine's queue).
Each test's CPU (this process's and the processes it waited for: the servers, bots and tools a
test starts) says where the work is; its wall time (``--durations``) mixes work and waiting. On
CI's 2 cores, pytest spent 717 CPU s in 635 s with the machine otherwise idle (1.1 cores: much
waiting), and 1,010 CPU s in 822 s beside other work (contention costs CPU too).

Enabled with ``--cpu-report`` (scripts/test passes it). Each worker appends one JSON line per
test to a file the controller names; the controller prints the table once every worker is done.
"""

from __future__ import annotations

import json
import os
import resource
import tempfile
from collections import defaultdict
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

_ENV = "ZIGGURAT_CPU_REPORT_FILE"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cpu-report",
        action="store_true",
        help="print CPU seconds per test folder and the costliest tests at the end (tests/cpu_report.py)",
    )


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("--cpu-report"):
        return
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist) names the file
        handle, name = tempfile.mkstemp(prefix="ziggurat-cpu-", suffix=".jsonl")
        os.close(handle)
        os.environ[_ENV] = name  # inherited by xdist's workers, started after this hook


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, None]:
    target = os.environ.get(_ENV)
    if not target or not item.config.getoption("--cpu-report"):
        yield
        return
    before = _cpu()
    yield
    line = json.dumps({"test": item.nodeid, "cpu": round(_cpu() - before, 3)})
    with open(target, "a", encoding="utf-8") as out:  # one short append per test: whole lines
        out.write(line + "\n")


def summarize(lines: list[str], top: int = 15) -> str:
    """The table: CPU seconds per top-level test folder (largest first) and the costliest tests.

    >>> print(summarize(['{"test": "tests/a/test_x.py::t", "cpu": 2.0}',
    ...                  '{"test": "tests/b/test_y.py::u", "cpu": 1.0}'], top=1))
    CPU seconds per test folder (3.0 s in all, 2 tests):
        2.0 s   67 %  tests/a (1 tests)
        1.0 s   33 %  tests/b (1 tests)
    The 1 costliest tests:
        2.0 s  tests/a/test_x.py::t
    """
    records = [json.loads(line) for line in lines if line.strip()]
    total = sum(r["cpu"] for r in records) or 1e-9
    folders: dict[str, list[float]] = defaultdict(list)
    for record in records:
        parts = record["test"].split("::")[0].split("/")
        folders["/".join(parts[:2]) if len(parts) > 2 else parts[0]].append(record["cpu"])
    out = [f"CPU seconds per test folder ({total:.1f} s in all, {len(records)} tests):"]
    for folder, cpus in sorted(folders.items(), key=lambda kv: -sum(kv[1])):
        out.append(f"{sum(cpus):7.1f} s {100 * sum(cpus) / total:4.0f} %  {folder} ({len(cpus)} tests)")
    out.append(f"The {top} costliest tests:")
    for record in sorted(records, key=lambda r: -r["cpu"])[:top]:
        out.append(f"{record['cpu']:7.1f} s  {record['test']}")
    return "\n".join(out)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or not config.getoption("--cpu-report"):
        return
    target = os.environ.get(_ENV)
    if not target:
        return
    path = Path(target)
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    path.unlink(missing_ok=True)
    terminalreporter.write_sep("=", "CPU per test (tests/cpu_report.py)")
    terminalreporter.write_line(summarize(lines))
