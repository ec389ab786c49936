"""ziggurat: an authoritative game server for hidden-information board games.

Rooms, bottom to top (each imports only those below it; ``tests/test_layering.py``):
``rules`` (pure game logic and per-seat views), ``wire`` (protobuf translation),
``store`` (SQLite event log), ``core`` (the match core), ``api`` (servicers and what guards
them), ``web`` (the Connect port), ``hosting`` (the server process), ``tournament`` and
``arena`` (competitions), ``cli``.
"""

__version__ = "0.1.0"
