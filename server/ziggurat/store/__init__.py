"""Persistence: the per-match event log and match records on SQLite."""
