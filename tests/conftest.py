"""Suite-wide plugins: tests/status_guard.py (no UNKNOWN/INTERNAL status reaches a client),
tests/processes.py (no process a test started outlives the run), pytester."""

pytest_plugins = ["tests.status_guard", "tests.processes", "pytester"]
