"""The ``ziggurat`` command line: serve, rules, verify, demo."""
