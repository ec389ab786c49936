"""The bots a lobby can seat: the server's built-in bots (AddBot) and connected remote bots
(BotService.InviteBot), as one list of choices.

Why one list: to a person choosing an opponent, "the server's greedy bot" and "Ann's bot
running on her laptop" are the same kind of thing; only the RPC that seats them differs.
Each choice is a string ``builtin:NAME`` or ``remote:NAME`` so a Select can hold it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ziggurat.tui.i18n import t
from ziggurat.v1 import bot_service_pb2, match_service_pb2
from ziggurat_client.client import ZigguratClient

BUILTIN = "builtin"
REMOTE = "remote"


@dataclass(frozen=True, slots=True)
class Opponent:
    """One bot that can be seated: its kind (``builtin``/``remote``), name and games (empty = all)."""

    kind: str
    name: str
    games: frozenset[int] = frozenset()

    @property
    def key(self) -> str:
        """The Select value: ``builtin:greedy``."""
        return f"{self.kind}:{self.name}"

    @property
    def label(self) -> str:
        """What the person reads: ``greedy`` for the server's own, ``ann (remote)`` otherwise."""
        return self.name if self.kind == BUILTIN else t("bots.remote", name=self.name)

    def plays(self, game: int) -> bool:
        """Whether it plays ``game`` (a remote bot that named no game plays all)."""
        return not self.games or game in self.games


def opponents(
    builtin: Iterable[match_service_pb2.BuiltinBot], remote: Iterable[bot_service_pb2.ConnectedBot]
) -> list[Opponent]:
    """Built-in bots first (always there), then the remote bots connected now."""
    out = [Opponent(BUILTIN, bot.name, frozenset(bot.games)) for bot in builtin]
    out += [Opponent(REMOTE, bot.name, frozenset(bot.games)) for bot in remote]
    return out


def parse_key(key: str) -> tuple[str, str]:
    """``builtin:greedy`` → (``builtin``, ``greedy``)."""
    kind, _, name = key.partition(":")
    return kind, name


async def seat_bot(client: ZigguratClient, match_id: str, key: str) -> int:
    """Seat the bot chosen by ``key`` in a waiting match; returns its seat (ZigguratError if refused)."""
    kind, name = parse_key(key)
    if kind == BUILTIN:
        return await client.add_bot(match_id, name)
    return await client.invite_bot(match_id, name)
