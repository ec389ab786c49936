"""The web client: the browser UI shipped in static/ and MatchService over Connect (docs/protocol.md)."""
