"""The stdio bridge: bots as plain programs speaking a line protocol (docs/stdio-protocol.md)."""
