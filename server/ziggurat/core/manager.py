"""The match manager: creates, finds, restores, lists, cancels and expires matches over one store.

Listing reads no log: a live match is rendered from memory and a finished one from
the summaries stored when it finished (``match_summaries``), so the cost of a page
does not depend on how long its matches' logs are. Summaries are a cache of the
log, written just after the commit that ends a match (rendering needs the state
after the commit, and memory changes only once the commit succeeded); one that is
missing (a crash fell in between, or a database from before summaries) is rebuilt
from the log the first time it is listed.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import logging
import secrets
import sqlite3
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass
from typing import Protocol

import grpc

from ziggurat.core.events import Created, SeatJoined
from ziggurat.core.group_commit import GroupCommit
from ziggurat.core.integrity import MatchDamaged, load_stored, rebuild
from ziggurat.core.match import Match, StreamLimits, hash_token, seat_by_token, store_unavailable
from ziggurat.core.render import render_match
from ziggurat.core.timecontrol import TimeControl
from ziggurat.rules.core import RulesError
from ziggurat.rules.registry import get_rules
from ziggurat.rules.seeding import commitment
from ziggurat.store.sqlite import Store, StoreUnavailableError
from ziggurat.store.startup import is_damage
from ziggurat.wire import errors
from ziggurat.wire.reasons import Reason

log = logging.getLogger("ziggurat.match")

# How long a seat must have been away (no stream open) before a seat still in the game may
# claim the match (ClaimAbandoned; `ziggurat serve --claim-after`): long enough for a phone
# or a laptop to come back from a network change, short enough for a person to wait.
DEFAULT_CLAIM_AFTER_MS = 120_000

# Finished matches kept whole (log, states, rules' objects: about 54 KiB a Pylos match), for
# the calls that need the log (WatchMatch, GetMatchRecord) or a refusal from the match itself;
# and finished matches kept only as what GetMatch and ListMatches answer (about 1.7 KiB). The
# whole ones were 256, a fifth of the server's Python heap under benchmarks/soak.py (26,000
# log entries beside the 60,000 of 1,200 live matches); a match that has left both is read
# back from the store (its summaries, or a replay of its log).
FINISHED_CACHE = 16
FINISHED_VIEWS = 1024
# A waiting match in which no seat was taken for this long is cancelled (ziggurat serve
# --waiting-ttl): abandoned lobbies must not hold the server's match slots forever.
DEFAULT_WAITING_TTL_S = 900.0
# Live (waiting or active) matches one client address may have created (ziggurat serve
# --max-matches-per-address): without it one anonymous client fills --max-matches and every
# other client's CreateMatch is refused until those matches end.
DEFAULT_MAX_MATCHES_PER_ADDRESS = 100


class OtherShards(Protocol):
    """The other workers' shards, as the hosting sees them (``ziggurat.hosting.shards``): the
    core asks only who else owns a match id, so it never depends on how workers are hosted."""

    def elsewhere(self, match_id: str) -> errors.ApiError | None:
        """The MATCH_ELSEWHERE refusal naming the owner, if another worker owns ``match_id``."""


@dataclass(frozen=True, slots=True)
class FinishedView:
    """What GetMatch and ListMatches answer for a finished match, kept instead of the match.

    A finished match no longer changes, so its rendering for each audience is fixed: these
    are the bytes that :func:`render_match` gives (the same ones stored as its summaries),
    and the seats' token hashes to pick the caller's audience as the match itself would.
    """

    renderings: dict[int | None, bytes]  # serialized Match by audience (None: spectators)
    token_seats: dict[str, int]  # seat token hash -> seat


@dataclass(frozen=True, slots=True)
class Page:
    """One page of ListMatches: the serialized matches and the cursor after the last one (None: no more)."""

    matches: list[bytes]
    next_cursor: str | None


class MatchManager:
    """Live matches in memory, finished ones loaded from the store on demand (LRU)."""

    def __init__(
        self,
        store: Store,
        *,
        max_live_matches: int = 20_000,
        max_matches_per_address: int = DEFAULT_MAX_MATCHES_PER_ADDRESS,
        waiting_ttl_s: float = DEFAULT_WAITING_TTL_S,
        stream_limits: StreamLimits | None = None,
        group_commit: bool = True,
        claim_after_ms: int = DEFAULT_CLAIM_AFTER_MS,
    ) -> None:
        self.stream_limits = stream_limits or StreamLimits()
        # --claim-after: how long a seat must be away before another may claim the match
        # (0 = never; a competition's server sets 0).
        self.claim_after_ms = claim_after_ms
        self.store = store
        # Moves played on streams and by SubmitMove are committed in groups (one transaction
        # for the moves of every match that arrive in the same loop iteration).
        self.group: GroupCommit | None = GroupCommit(store) if group_commit else None
        self.max_live_matches = max_live_matches
        self.max_matches_per_address = max_matches_per_address  # 0 = no cap
        # Who created each live match (its client's address group, peer.address_group) and how
        # many live matches each address has: admission accounting, not match state, so it is
        # not in the log (a match restored after a restart counts against no address).
        self._creators: dict[str, str] = {}
        self._created_by: Counter[str] = Counter()
        self.waiting_ttl_s = waiting_ttl_s
        self.creation_open = True
        self.live: dict[str, Match] = {}
        self._finished: OrderedDict[str, Match] = OrderedDict()
        self._views: OrderedDict[str, FinishedView] = OrderedDict()
        self._expiry: asyncio.Task[None] | None = None
        # Spectators' rendering of each live match listed, with what it was rendered from
        # (the immutable match state object and the seats' presence): listing live matches
        # re-renders only those that changed since they were last listed.
        self._listed: dict[str, tuple[object, tuple[str, ...], bytes]] = {}
        # Damaged matches (id -> why): calls on them answer DATA_LOSS; the rest is served.
        self.quarantined: dict[str, str] = {}
        # The other workers' shards when this is one of several worker processes
        # (docs/scaling.md): a match found there is refused as MATCH_ELSEWHERE with its address.
        self.shards: OtherShards | None = None

    def restore(self) -> int:
        """Bring back every unfinished match from the store (after a restart or crash).

        Each match is read and rebuilt on its own: one that cannot be is quarantined
        (logged once) and the others come back.
        """
        try:
            match_ids = self.store.match_ids(unfinished_only=True)
        except sqlite3.Error as error:
            if not is_damage(error):
                raise
            log.error("the match table is damaged; no unfinished match can be restored: %s", error)
            return 0
        for match_id in match_ids:
            self._load(match_id)
        return len(self.live)

    def quarantine(self, match_id: str, why: str) -> None:
        """Take a damaged match out of service, logging it once."""
        if match_id not in self.quarantined:
            self.quarantined[match_id] = why
            # One line per match, never held back as a repeat (each names another match).
            log.error(f"match {match_id} is damaged and quarantined (calls on it answer DATA_LOSS): {why}")

    def _load(self, match_id: str) -> Match | None:
        """Read and rebuild one match from the store; None when absent or quarantined."""
        try:
            stored = load_stored(self.store, match_id)
            if stored is None:
                return None
            match = rebuild(stored, self.store, log_events=log.info, limits=self.stream_limits)
        except MatchDamaged as damage:
            self.quarantine(match_id, str(damage))
            return None
        self._track(match)
        return match

    def create(
        self,
        game: str,
        seats: int,
        options: dict[str, str],
        time_control: TimeControl,
        seat_assignment: str,
        *,
        seed: bytes | None = None,
        creator_hash: str | None = None,
        creator_address: str | None = None,
        held: bool = False,
        end_held: bool = False,
    ) -> Match:
        """A new match with a fresh secret seed (``seed`` only for tests and tournaments).

        ``creator_hash`` (the hash of the creator token) lets its holder cancel the match;
        ``creator_address`` (the client's address group) counts it against that address's
        ``max_matches_per_address`` until it ends;
        ``held`` (tournaments) keeps it from starting until :meth:`Match.begin`, ``end_held``
        from ending (once decided) until :meth:`Match.reveal`.
        """
        if not self.creation_open:
            raise errors.refuse(
                Reason.CREATION_CLOSED, "the operator has closed match creation on this server"
            )
        if len(self.live) >= self.max_live_matches:
            raise errors.refuse(
                Reason.TOO_MANY_MATCHES, "the server hosts its maximum number of live matches"
            )
        cap = self.max_matches_per_address
        if creator_address is not None and cap and self._created_by[creator_address] >= cap:
            raise errors.refuse(
                Reason.TOO_MANY_MATCHES_CREATED,
                f"this address has {self._created_by[creator_address]} live matches it created, the "
                f"most the server allows ({cap}); cancel or finish some first",
            )
        try:
            rules = get_rules(game)
            config = rules.parse_config(options, seats)
            seed = secrets.token_bytes(32) if seed is None else seed
            rules.new_game(config, seed)  # validates the whole set-up before anything is stored
        except RulesError as error:
            raise errors.from_rules_error(error) from None
        match_id = secrets.token_hex(8)
        if creator_hash is not None:
            try:
                self.store.set_creator(match_id, creator_hash)  # first: no match is ever without it
            except StoreUnavailableError as error:
                raise store_unavailable(error) from None
        match = Match.create(
            self.store,
            match_id=match_id,
            game=game,
            seats=seats,
            options=rules.config_options(config),
            time_control=time_control,
            seat_assignment=seat_assignment,
            seed=seed,
            commitment=commitment(seed),
            log_events=log.info,
            limits=self.stream_limits,
            held=held,
            end_held=end_held,
        )
        if creator_address is not None:
            self._creators[match_id] = creator_address
            self._created_by[creator_address] += 1
        self._track(match)
        return match

    def created_by(self, address: str) -> int:
        """Live matches created from ``address`` (an address group) now."""
        return self._created_by[address]

    def get(self, match_id: str) -> Match:
        """A match by id, live or finished; NOT_FOUND, or DATA_LOSS for a damaged one."""
        if match_id in self.quarantined:
            raise errors.refuse(
                Reason.MATCH_DAMAGED,
                f"match {match_id} is damaged in the server's database and cannot be served",
            )
        match = self.live.get(match_id) or self._finished.get(match_id)
        if match is not None:
            if match.status == "finished":
                self._retire(match)
            return match
        if len(match_id) > 64:
            raise errors.not_found(match_id[:64])
        match = self._load(match_id)
        if match is None:
            if match_id in self.quarantined:
                return self.get(match_id)
            if self.shards is not None and (elsewhere := self.shards.elsewhere(match_id)) is not None:
                raise elsewhere
            raise errors.not_found(match_id)
        return match

    def finished_rendering(self, match_id: str, token: str | None) -> bytes | None:
        """GetMatch of a finished match from the cache of finished views: the serialized Match
        as the token's seat (or a spectator, without a token) sees it; None when the match is
        not there (live, damaged, or not finished lately: then :meth:`get` serves it).

        Raises BAD_TOKEN for a token that is not one of the match's seats, as the match does.
        """
        view = self._views.get(match_id)
        if view is None or match_id in self.quarantined:
            return None
        self._views.move_to_end(match_id)
        audience = None if not token else seat_by_token(view.token_seats, token)
        return view.renderings[audience]

    def list_page(
        self, *, status: str | None, game: str | None, limit: int, cursor: str, token: str | None
    ) -> Page:
        """A page of matches, newest first, after ``cursor`` (a ``Page.next_cursor``; "" = the start).

        With a seat ``token``, that seat's match is rendered as the seat sees it.
        """
        scope = cursor_scope(status, game)
        before = _decode_cursor(cursor, scope) if cursor else None
        own: tuple[str, int] | None = None
        if token:
            own = self.store.seat_of_token(hash_token(token))
            if own is None:
                raise errors.refuse(Reason.BAD_TOKEN, "the token is not a seat token of any match")
        try:
            rows = self.store.page_ids(status=status, game=game, limit=limit + 1, before=before)
        except sqlite3.Error as error:
            if not is_damage(error):
                raise
            log.error("the match table cannot be read: %s", error)
            raise errors.refuse(Reason.DATABASE_DAMAGED, "the server's match table is damaged") from None
        # A damaged match answers DATA_LOSS on its own; the page goes on without it.
        listed = [match_id for _, match_id in rows[:limit] if match_id not in self.quarantined]
        in_memory = self.live.keys() | self._finished.keys() | self._views.keys()
        stored = self.store.summaries([m for m in listed if m not in in_memory])
        matches = []
        for match_id in listed:
            audience = own[1] if own is not None and own[0] == match_id else None
            data = stored.get(match_id) if audience is None else None
            try:
                matches.append(data if data is not None else self._summary(match_id, audience))
            except errors.ApiError as error:
                if error.code != grpc.StatusCode.DATA_LOSS:
                    raise
        more = len(rows) > limit
        return Page(matches, _encode_cursor(rows[limit - 1], scope) if more and limit else None)

    def cancel(self, match_id: str, token: str | None) -> Match:
        """The creator (with its creator token) cancels a match that is still waiting."""
        match = self.get(match_id)
        self.check_creator(match_id, token, "CancelMatch")
        if match.status == "finished":
            raise errors.refuse(Reason.GAME_OVER, "the match is over")
        if match.status != "waiting":
            raise errors.refuse(Reason.NOT_WAITING, "the match has started; only the operator can abort it")
        match.abort()
        log.info("match %s cancelled by its creator", match_id)
        return match

    def check_creator(self, match_id: str, token: str | None, call: str) -> None:
        """Refuse ``call`` unless ``token`` is the creator token of ``match_id`` (MISSING_TOKEN
        without one, BAD_TOKEN for another; a match a tournament made has no creator token)."""
        if not token:
            raise errors.refuse(Reason.MISSING_TOKEN, f"{call} needs the creator token of the match")
        known = self.store.creator_hash(match_id)
        if known is None or not secrets.compare_digest(known, hash_token(token)):
            raise errors.refuse(Reason.BAD_TOKEN, "the token is not the creator token of this match")

    def abort(self, match_id: str) -> Match:
        """The operator ends a match that is not finished (nobody wins)."""
        match = self.get(match_id)
        if match.status == "finished":
            raise errors.refuse(Reason.GAME_OVER, "the match is over")
        match.abort()
        log.info("match %s aborted by the operator", match_id)
        return match

    def expire_idle(self, now_ms: int | None = None) -> list[str]:
        """Cancel every waiting match in which no seat was taken for ``waiting_ttl_s``."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        limit_ms = self.waiting_ttl_s * 1000
        expired = []
        for match in [m for m in self.live.values() if m.status == "waiting"]:
            if now_ms - _last_join_ms(match) >= limit_ms:
                try:
                    match.abort()
                except (errors.ApiError, sqlite3.Error) as error:  # the next sweep tries again
                    log.warning("match %s: could not expire it: %s", match.match_id, error)
                    continue
                log.info("match %s expired: no seat taken for %.0f s", match.match_id, self.waiting_ttl_s)
                expired.append(match.match_id)
        return expired

    def start_expiry(self) -> None:
        """Start sweeping idle waiting matches (call from the server's event loop)."""
        if self._expiry is None:
            self._expiry = asyncio.get_running_loop().create_task(self._sweep())

    async def _sweep(self) -> None:
        interval = max(0.05, min(self.waiting_ttl_s / 4, 10.0))
        while True:
            try:
                self.expire_idle()
            except Exception:  # a bug must not end expiry for good: log it, sweep again later
                log.exception("expiring idle waiting matches failed")
            await asyncio.sleep(interval)

    def close(self) -> None:
        """Commit the moves that wait, stop every match's timers and wake its followers."""
        if self.group is not None:
            self.group.flush()
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        for match in list(self.live.values()) + list(self._finished.values()):
            match.close()

    def summary_bytes(self, match_id: str, audience: int | None) -> bytes | None:
        """The serialized Match of one of this server's matches for ``audience``; None when it is
        damaged (it answers DATA_LOSS on its own; a listing goes on without it)."""
        if match_id in self.quarantined:
            return None
        try:
            return self._summary(match_id, audience)
        except errors.ApiError as error:
            if error.code != grpc.StatusCode.DATA_LOSS:
                raise
            return None

    def _summary(self, match_id: str, audience: int | None) -> bytes:
        """The serialized Match for ``audience``: from memory, the stored summary, or (once) the log."""
        view = self._views.get(match_id)
        if view is not None:
            return view.renderings[audience]
        match = self.live.get(match_id) or self._finished.get(match_id)
        if match is not None and audience is None:
            return self._spectator_summary(match)
        if match is not None:
            return render_match(match, audience).SerializeToString()
        data = self.store.summary(match_id, audience)
        if data is not None:
            return data
        match = self.get(match_id)  # no summary yet: rebuild it from the log, once
        if match.status == "finished":
            return self._save_summaries(match)[audience]
        return render_match(match, audience).SerializeToString()

    def _spectator_summary(self, match: Match) -> bytes:
        """The spectators' Match of a match in memory, rendered again only when it changed."""
        presence = tuple(match.presence(seat) for seat in range(match.seat_count))
        cached = self._listed.get(match.match_id)
        if cached is not None and cached[0] is match.current and cached[1] == presence:
            return cached[2]
        data = render_match(match, None).SerializeToString()
        if match.match_id in self.live:
            self._listed[match.match_id] = (match.current, presence, data)
        return data

    def _save_summaries(self, match: Match) -> dict[int | None, bytes]:
        """Store a finished match's renderings (its summaries) and keep them as its finished view."""
        summaries = _renderings(match)
        try:
            self.store.save_summaries(match.match_id, summaries)
        except (sqlite3.Error, StoreUnavailableError) as error:  # a cache: rebuilt from the log when listed
            log.warning("match %s: could not store its summary: %s", match.match_id, error)
        self._keep_view(match.match_id, FinishedView(summaries, match.token_seats))
        return summaries

    def _keep_view(self, match_id: str, view: FinishedView) -> None:
        self._views[match_id] = view
        self._views.move_to_end(match_id)
        while len(self._views) > FINISHED_VIEWS:
            self._views.popitem(last=False)

    def _track(self, match: Match) -> None:
        # A time control with a disconnect grace settles absence itself (its grace ends the
        # turn of a seat that left): no claims there.
        match.claim_after_ms = 0 if match.time_control.disconnect_grace_ms else self.claim_after_ms
        if match.status == "finished":
            self._finished[match.match_id] = match
            self._finished.move_to_end(match.match_id)
            while len(self._finished) > FINISHED_CACHE:
                self._finished.popitem(last=False)
            if match.match_id not in self._views:  # read back from the store: render it once
                self._keep_view(match.match_id, FinishedView(_renderings(match), match.token_seats))
        else:
            self.live[match.match_id] = match
            match.on_finished = self._retire
            match.group = self.group

    def _retire(self, match: Match) -> None:
        """Move a match that has just finished from the live set to the finished cache."""
        if self.live.pop(match.match_id, None) is not None:
            self._listed.pop(match.match_id, None)
            creator = self._creators.pop(match.match_id, None)
            if creator is not None:
                self._created_by[creator] -= 1
                if self._created_by[creator] <= 0:
                    del self._created_by[creator]
            self._save_summaries(match)  # rendered once: stored, and kept as its finished view
            self._track(match)
        else:
            self._finished.move_to_end(match.match_id)


def _renderings(match: Match) -> dict[int | None, bytes]:
    """A finished match's serialized Match for spectators (None) and for each seat."""
    audiences: list[int | None] = [None, *range(match.seat_count)]
    return {audience: render_match(match, audience).SerializeToString() for audience in audiences}


def _last_join_ms(match: Match) -> int:
    """When the match was created or a seat was last taken (wall clock, from the log)."""
    for entry in reversed(match.entries):
        if isinstance(entry.event, (Created, SeatJoined)):
            return entry.time_ms
    return match.created_ms


def cursor_scope(status: str | None, game: str | None) -> str:
    """What a page token is valid for: the same filters."""
    return hashlib.sha256(f"{status}|{game}".encode()).hexdigest()[:12]


def _encode_cursor(row: tuple[int, str], scope: str) -> str:
    """An opaque page token: the position of the last listed match and the filters' scope."""
    raw = json.dumps({"p": row[0], "s": scope}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(token: str, scope: str) -> int:
    bad = errors.refuse(Reason.BAD_PAGE_TOKEN, "page_token is not a next_page_token of this listing")
    if len(token) > 200:
        raise bad
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        data = json.loads(raw)
        position, token_scope = data["p"], data["s"]
    except (binascii.Error, ValueError, TypeError, KeyError):
        raise bad from None
    if token_scope != scope or type(position) is not int or position < 1:
        raise bad
    return position
