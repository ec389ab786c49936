"""Thin Python client for ziggurat servers: an asyncio SDK over the ``ziggurat.v1`` gRPC API.

The common surface (mirrored by the clients in other languages): :class:`ZigguratClient`
(connect, TLS optional; create, join, cancel, watch, invite a bot), a :class:`Turn` and a play
loop that calls one function (``client.play(handle, choose)``, resuming exactly after a dropped
connection), typed refusals (:class:`ZigguratError` with the ErrorInfo reason; MoveRejected on
the Play stream), and the remote-bot loop :class:`RemoteBot`.
"""

from ziggurat_client.bot import Bot, Turn
from ziggurat_client.client import MatchHandle, ZigguratClient
from ziggurat_client.errors import ZigguratError
from ziggurat_client.games import config_strings, game_config
from ziggurat_client.random_bot import RandomBot
from ziggurat_client.remote import RemoteBot
from ziggurat_client.runner import Backoff, SeatRunner

__all__ = [
    "Backoff",
    "Bot",
    "MatchHandle",
    "RandomBot",
    "RemoteBot",
    "SeatRunner",
    "Turn",
    "ZigguratClient",
    "ZigguratError",
    "config_strings",
    "game_config",
]
