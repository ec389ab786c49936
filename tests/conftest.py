"""Suite-wide plugins: tests/status_guard.py (no UNKNOWN/INTERNAL status reaches a client), pytester."""

pytest_plugins = ["tests.status_guard", "pytester"]
