"""Python client for ziggurat servers: an asyncio SDK over the ``ziggurat.v1`` gRPC API."""

from ziggurat_client.client import MatchHandle, ZigguratClient, ZigguratError

__all__ = ["MatchHandle", "ZigguratClient", "ZigguratError"]
