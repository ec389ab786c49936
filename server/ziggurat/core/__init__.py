"""The match core: a match's events, the pure decide/evolve over them, the one commit path, the
per-viewer views and records, and the manager that holds the matches of this process.

Nothing here knows gRPC calls, listeners or processes: :mod:`ziggurat.api` turns calls into
these operations, :mod:`ziggurat.hosting` runs them in a server. The log is the truth: a match
changes in memory only after the commit that records it (:mod:`ziggurat.core.group_commit`).
"""
