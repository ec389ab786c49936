"""Seat tokens kept on disk, one small file per server and match, so a seat is never lost.

Why: a seat token is shown once (JoinMatch) and is the only way back into the seat. Kept
only in memory, leaving the game screen or quitting the program turned the player into a
spectator of their own match, who then lost on time. Each token is written as soon as the
seat is taken, to ``STATE/ziggurat/seats/SERVER/MATCH.json`` (STATE = ``$ZIGGURAT_STATE_DIR``,
else ``$XDG_STATE_HOME``, else ``~/.local/state``), readable by the user only.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ziggurat_client.client import MatchHandle

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def default_directory() -> Path:
    """Where seat files live unless told otherwise."""
    explicit = os.environ.get("ZIGGURAT_STATE_DIR")
    if explicit:
        return Path(explicit) / "seats"
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "ziggurat" / "seats"


class SeatStore:
    """The seats this user holds, by server address and match id."""

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory or default_directory()

    def _path(self, server: str, match_id: str) -> Path:
        return self.directory / _UNSAFE.sub("_", server) / f"{_UNSAFE.sub('_', match_id)}.json"

    def save(self, server: str, handle: MatchHandle) -> None:
        """Remember ``handle`` (written owner-only: the token is a secret)."""
        path = self._path(server, handle.match_id)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = json.dumps({"match_id": handle.match_id, "seat": handle.seat, "token": handle.token})
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            out.write(data)

    def load(self, server: str, match_id: str) -> MatchHandle | None:
        """The seat held in ``match_id`` on ``server``, if any (an unreadable file counts as none)."""
        try:
            data = json.loads(self._path(server, match_id).read_text(encoding="utf-8"))
            return MatchHandle(
                match_id=str(data["match_id"]), seat=int(data["seat"]), token=str(data["token"])
            )
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def forget(self, server: str, match_id: str) -> None:
        """Drop a seat (its token was refused)."""
        self._path(server, match_id).unlink(missing_ok=True)
