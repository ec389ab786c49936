"""The protocol's generated code, re-exported from the thin client (ziggurat_client.v1)."""
