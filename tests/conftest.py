"""Suite-wide plugins: tests/status_guard.py (no UNKNOWN/INTERNAL status reaches a client),
tests/processes.py (no process a test started outlives the run), tests/servers.py (the
real-server fixtures ``server``, ``client`` and ``server_process``, for every folder),
tests/cpu_report.py (--cpu-report: CPU seconds per folder and test), tests/ordering.py (slow
tests at the head of every xdist worker's share, so that none is the tail of a parallel run),
pytester."""

pytest_plugins = [
    "tests.status_guard",
    "tests.processes",
    "tests.servers",
    "tests.cpu_report",
    "tests.ordering",
    "pytester",
]
