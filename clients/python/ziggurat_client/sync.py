"""A blocking wrapper around :class:`ZigguratClient` for scripts and notebooks.

It runs the asyncio client on a private event loop in a background thread, so a
plain script can create, join, watch and play matches without touching asyncio.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Coroutine, Iterator
from types import TracebackType
from typing import Any, TypeVar

from ziggurat_client.bot import Bot, Turn
from ziggurat_client.client import MatchHandle, ZigguratClient
from ziggurat_client.v1 import game_pb2, match_pb2
from ziggurat_client.v1 import match_service_pb2 as spb

T = TypeVar("T")
_DONE = object()


class SyncClient:
    """Blocking twin of ZigguratClient: ``with SyncClient("host:50051") as client: ...``."""

    def __init__(self, address: str, **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="ziggurat-client", daemon=True)
        self._thread.start()
        self._client: ZigguratClient = self._run(self._open(address, options))

    @staticmethod
    async def _open(address: str, options: dict[str, Any]) -> ZigguratClient:
        return ZigguratClient(address, **options)

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the channel and stop the background loop."""
        self._run(self._client.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def create_match(self, config: game_pb2.GameConfig, **kwargs: Any) -> match_pb2.Match:
        """See :meth:`ZigguratClient.create_match`."""
        return self._run(self._client.create_match(config, **kwargs))

    def join(self, match_id: str, name: str, seat: int = 0) -> MatchHandle:
        """See :meth:`ZigguratClient.join`."""
        return self._run(self._client.join(match_id, name, seat))

    def get_match(self, match_id: str, handle: MatchHandle | None = None) -> match_pb2.Match:
        """See :meth:`ZigguratClient.get_match`."""
        return self._run(self._client.get_match(match_id, handle))

    def list_matches(self) -> list[match_pb2.Match]:
        """See :meth:`ZigguratClient.list_matches`."""
        return self._run(self._client.list_matches())

    def submit_move(self, handle: MatchHandle, move: str, ply: int | None = None) -> spb.SubmitMoveResponse:
        """See :meth:`ZigguratClient.submit_move`."""
        return self._run(self._client.submit_move(handle, move, ply))

    def resign(self, handle: MatchHandle) -> None:
        """See :meth:`ZigguratClient.resign`."""
        self._run(self._client.resign(handle))

    def cancel_match(self, match_id: str, creator_token: str | None = None) -> match_pb2.Match:
        """See :meth:`ZigguratClient.cancel_match`."""
        return self._run(self._client.cancel_match(match_id, creator_token))

    def invite_bot(
        self, match_id: str, bot_name: str, seat: int = 0, *, creator_token: str | None = None
    ) -> int:
        """See :meth:`ZigguratClient.invite_bot`."""
        return self._run(self._client.invite_bot(match_id, bot_name, seat, creator_token=creator_token))

    def list_games(self) -> list[game_pb2.GameInfo]:
        """See :meth:`ZigguratClient.list_games`."""
        return self._run(self._client.list_games())

    def game_config(
        self, name: str, seats: int = 0, options: dict[str, str] | None = None
    ) -> game_pb2.GameConfig:
        """See :meth:`ZigguratClient.game_config`."""
        return self._run(self._client.game_config(name, seats, options))

    def add_bot(self, match_id: str, bot: str, seat: int = 0) -> int:
        """See :meth:`ZigguratClient.add_bot`."""
        return self._run(self._client.add_bot(match_id, bot, seat))

    def record(self, match_id: str) -> spb.MatchRecord:
        """See :meth:`ZigguratClient.record`."""
        return self._run(self._client.record(match_id))

    def follow(
        self, match_id: str, *, handle: MatchHandle | None = None, after_seq: int = 0
    ) -> Iterator[match_pb2.Event]:
        """Events until the match ends, reconnecting as needed (see :meth:`ZigguratClient.follow`)."""
        items: queue.Queue[Any] = queue.Queue()

        async def pump() -> None:
            try:
                async for event in self._client.follow(match_id, handle=handle, after_seq=after_seq):
                    items.put(event)
            except Exception as error:  # re-raised in the caller's thread
                items.put(error)
            finally:
                items.put(_DONE)

        asyncio.run_coroutine_threadsafe(pump(), self._loop)
        while (item := items.get()) is not _DONE:
            if isinstance(item, Exception):
                raise item
            yield item

    def play(self, handle: MatchHandle, choose: Bot | Callable[[Turn], str]) -> match_pb2.MatchEndedEvent:
        """Play the seat with a bot or a ``choose(turn)`` function until the match ends."""
        return self._run(self._client.play(handle, choose))
