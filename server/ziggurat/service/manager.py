"""The match manager: creates, finds, restores and lists matches over one store."""

from __future__ import annotations

import logging
import secrets
from collections import OrderedDict

from ziggurat.rules.core import RulesError
from ziggurat.rules.registry import get_rules
from ziggurat.rules.seeding import commitment
from ziggurat.service.match import Match
from ziggurat.service.timecontrol import TimeControl
from ziggurat.store.sqlite import Store
from ziggurat.wire import errors
from ziggurat.wire.reasons import Reason

log = logging.getLogger("ziggurat.match")

FINISHED_CACHE = 256


class MatchManager:
    """Live matches in memory, finished ones loaded from the store on demand (LRU)."""

    def __init__(self, store: Store, *, max_live_matches: int = 20_000) -> None:
        self.store = store
        self.max_live_matches = max_live_matches
        self.live: dict[str, Match] = {}
        self._finished: OrderedDict[str, Match] = OrderedDict()

    def restore(self) -> int:
        """Bring back every unfinished match from the store (after a restart or crash)."""
        for stored in self.store.load_unfinished():
            match = Match.restore(stored, self.store, log_events=log.info)
            self._track(match)
        return len(self.live)

    def create(
        self,
        game: str,
        seats: int,
        options: dict[str, str],
        time_control: TimeControl,
        seat_assignment: str,
        *,
        seed: bytes | None = None,
    ) -> Match:
        """A new match with a fresh secret seed (``seed`` only for tests and tournaments)."""
        if len(self.live) >= self.max_live_matches:
            raise errors.refuse(
                Reason.TOO_MANY_MATCHES, "the server hosts its maximum number of live matches"
            )
        try:
            rules = get_rules(game)
            config = rules.parse_config(options, seats)
            seed = secrets.token_bytes(32) if seed is None else seed
            rules.new_game(config, seed)  # validates the whole set-up before anything is stored
        except RulesError as error:
            raise errors.from_rules_error(error) from None
        match = Match.create(
            self.store,
            match_id=secrets.token_hex(8),
            game=game,
            seats=seats,
            options=rules.config_options(config),
            time_control=time_control,
            seat_assignment=seat_assignment,
            seed=seed,
            commitment=commitment(seed),
            log_events=log.info,
        )
        self._track(match)
        return match

    def get(self, match_id: str) -> Match:
        """A match by id, live or finished; NOT_FOUND otherwise."""
        match = self.live.get(match_id) or self._finished.get(match_id)
        if match is not None:
            if match.status == "finished":
                self._retire(match)
            return match
        if len(match_id) > 64:
            raise errors.not_found(match_id[:64])
        stored = self.store.load(match_id)
        if stored is None:
            raise errors.not_found(match_id)
        match = Match.restore(stored, self.store, log_events=log.info)
        self._track(match)
        return match

    def list(self, *, status: str | None, game: str | None, limit: int) -> list[Match]:
        """Matches newest first."""
        return [self.get(match_id) for match_id in self.store.list_ids(status=status, game=game, limit=limit)]

    def close(self) -> None:
        """Stop every match's timers and wake its followers."""
        for match in list(self.live.values()) + list(self._finished.values()):
            match.close()

    def _track(self, match: Match) -> None:
        if match.status == "finished":
            self._finished[match.match_id] = match
            self._finished.move_to_end(match.match_id)
            while len(self._finished) > FINISHED_CACHE:
                self._finished.popitem(last=False)
        else:
            self.live[match.match_id] = match
            match.on_finished = self._retire

    def _retire(self, match: Match) -> None:
        """Move a match that has just finished from the live set to the finished cache."""
        if self.live.pop(match.match_id, None) is not None:
            self._track(match)
        else:
            self._finished.move_to_end(match.match_id)
