"""ziggurat: an authoritative game server for hidden-information board games.

Layers, bottom to top (arrows point down only): ``rules`` (pure game logic and
per-seat views), ``wire`` (protobuf translation of views), ``service`` (gRPC),
``store`` (SQLite event log), ``cli``.
"""

__version__ = "0.1.0"
