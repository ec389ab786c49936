"""Log entries → protobuf events for one audience: the only way events leave the server.

Every game-dependent part goes through ``rules.view(state, audience, released=…)`` and
the view codec; everything else in an event is public by construction (seat numbers,
names, clocks, the move text, the seed commitment). Release is the match's decision,
not the rules': only the ``ended`` event — written when the match publishes its end,
which for a held duplicate rotation is long after its game was decided — carries the
released view (every objective, the unheld colours, the outcome) and the seed; every
other event's view is rendered unreleased, even after the last move, and a snapshot
(GetMatch, ListMatches) is released once the match has ended. Rendering depends only on the entry and
the match's immutable settings, so the same entry renders to the same bytes for
the same audience whenever it is sent (live, resumed, or after a restart).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ziggurat.core.events import (
    Created,
    Ended,
    Forfeited,
    MovePlayed,
    PresenceChanged,
    SeatJoined,
    Started,
    Substituted,
    TurnStarted,
)
from ziggurat.v1 import match_pb2 as mpb
from ziggurat.wire.codec import config_to_proto, fill_view, outcome_to_proto

if TYPE_CHECKING:
    from ziggurat.core.match import LogEntry, Match

SEAT_STATES: dict[str, mpb.SeatState.ValueType] = {
    "open": mpb.SEAT_STATE_OPEN,
    "joined": mpb.SEAT_STATE_JOINED,
    "connected": mpb.SEAT_STATE_CONNECTED,
    "disconnected": mpb.SEAT_STATE_DISCONNECTED,
    "timed_out": mpb.SEAT_STATE_TIMED_OUT,
    "substituted": mpb.SEAT_STATE_SUBSTITUTED,
    "resigned": mpb.SEAT_STATE_RESIGNED,
    "illegal_moves": mpb.SEAT_STATE_ILLEGAL_MOVES,
    "abandoned": mpb.SEAT_STATE_ABANDONED,
}
TIMEOUT_POLICIES: dict[str, mpb.TimeoutPolicy.ValueType] = {
    "forfeit": mpb.TIMEOUT_POLICY_FORFEIT,
    "random_move": mpb.TIMEOUT_POLICY_RANDOM_MOVE,
}
SEAT_ASSIGNMENTS: dict[str, mpb.SeatAssignment.ValueType] = {
    "lot": mpb.SEAT_ASSIGNMENT_LOT,
    "chosen": mpb.SEAT_ASSIGNMENT_CHOSEN,
}
STATUSES: dict[str, mpb.MatchStatus.ValueType] = {
    "waiting": mpb.MATCH_STATUS_WAITING,
    "active": mpb.MATCH_STATUS_ACTIVE,
    "finished": mpb.MATCH_STATUS_FINISHED,
}


def time_control_proto(match: Match) -> mpb.TimeControl:
    """The match's time control on the wire."""
    tc = match.time_control
    return mpb.TimeControl(
        per_move_ms=tc.per_move_ms,
        base_ms=tc.base_ms,
        increment_ms=tc.increment_ms,
        on_timeout=TIMEOUT_POLICIES[tc.on_timeout],
        disconnect_grace_ms=tc.disconnect_grace_ms,
        max_illegal_moves=tc.max_illegal_moves,
    )


def render_event(match: Match, entry: LogEntry, audience: int | None) -> mpb.Event:
    """The event ``entry`` as seen by ``audience`` (0-based seat, or None for a spectator)."""
    out = mpb.Event(seq=entry.seq, match_id=match.match_id, time_ms=entry.time_ms)
    event = entry.event
    if isinstance(event, MovePlayed):
        played = out.move_played
        # A game whose moves are private shows the move to its mover alone (every event is
        # rendered the same before and after the end; the record publishes the moves then).
        shown = event.move if audience == event.seat or not match.rules.private_moves else ""
        played.seat, played.move, played.substituted = event.seat + 1, shown, event.substituted
        fill_view(played.view, match.rules.view(entry.game, audience))
    elif isinstance(event, TurnStarted):
        turn = out.turn_started
        turn.seat, turn.ply, turn.time_left_ms = event.seat + 1, event.ply, event.time_left_ms
        if audience == event.seat:
            turn.legal_moves.extend(match.rules.legal_moves(entry.game))
        names = match.names
        for index, clock in enumerate(event.clocks):
            turn.seats.add(
                seat=index + 1,
                player_name=names[index],
                state=SEAT_STATES[event.states[index]],
                clock_ms=clock,
            )
    elif isinstance(event, SeatJoined | PresenceChanged | Substituted):
        seat = out.seat_changed.seat
        seat.seat, seat.player_name, seat.state = event.seat + 1, event.name, SEAT_STATES[_seat_change(event)]
    elif isinstance(event, Forfeited):
        # A forfeit (resignation, time-out, too many illegal moves) is a seat change.
        seat = out.seat_changed.seat
        seat.seat, seat.player_name = event.seat + 1, match.names[event.seat]
        seat.state = SEAT_STATES[event.state]
        if event.clock_ms is not None:
            seat.clock_ms = event.clock_ms
    elif isinstance(event, Started):
        started = out.match_started
        for index, name in enumerate(event.names):
            started.seats.add(seat=index + 1, player_name=name, state=SEAT_STATES[event.states[index]])
        fill_view(started.view, match.rules.view(entry.game, audience))
    elif isinstance(event, Ended):
        ended = out.match_ended
        ended.outcome.CopyFrom(outcome_to_proto(event.outcome))
        seed = match.revealed_seed
        ended.revealed_seed = "" if seed is None else seed.hex()
        fill_view(ended.view, match.rules.view(entry.game, audience, released=True))
    elif isinstance(event, Created):
        created = out.match_created
        created.config.CopyFrom(
            config_to_proto(match.game, match.seat_count, match.rules.config_options(match.config))
        )
        created.time_control.CopyFrom(time_control_proto(match))
        created.seed_commitment = match.commitment
    else:  # pragma: no cover - every event class is handled above
        raise ValueError(f"unknown event {event!r}")
    return out


def _seat_change(event: SeatJoined | PresenceChanged | Substituted) -> str:
    if isinstance(event, SeatJoined):
        return "joined"
    if isinstance(event, Substituted):
        return "substituted"
    return event.state


def render_match(match: Match, audience: int | None) -> mpb.Match:
    """The match summary as ``audience`` may see it (GetMatch, ListMatches)."""
    out = mpb.Match(
        match_id=match.match_id,
        config=config_to_proto(match.game, match.seat_count, match.rules.config_options(match.config)),
        time_control=time_control_proto(match),
        seat_assignment=SEAT_ASSIGNMENTS[match.seat_assignment],
        status=STATUSES[match.status],
        seed_commitment=match.commitment,
        last_seq=match.last_seq,
        claim_after_ms=match.claim_after_ms if match.status != "finished" else 0,
    )
    for index, info in enumerate(match.seat_views()):
        out.seats.add(
            seat=index + 1,
            player_name=info.name,
            state=SEAT_STATES[info.state],
            clock_ms=info.clock_ms,
            away_since_ms=match.away_since_ms(index),
        )
    seed = match.revealed_seed
    if seed is not None:
        out.revealed_seed = seed.hex()
    if match.status != "waiting":
        fill_view(out.view, match.rules.view(match.state, audience, released=match.released))
    return out


def event_bytes(match: Match, entry: LogEntry, audience: int | None) -> bytes:
    """The serialized event for ``audience``, cached on the entry while it is the newest.

    Fan-out to many spectators (and both Pylos seats' identical parts) then costs one
    rendering per audience instead of one per stream. Older entries (a catch-up) are
    rendered without caching, so a replay leaves nothing behind.
    """
    cache = entry.cache
    if cache is None:
        return render_event(match, entry, audience).SerializeToString()
    data = cache.get(audience)
    if data is None:
        data = cache[audience] = render_event(match, entry, audience).SerializeToString()
    return data


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def frame_events(events: list[bytes], extra: bytes = b"") -> bytes:
    """A WatchMatchResponse / PlayResponse in wire form: field 1 (``events``) repeated.

    Both messages declare ``repeated Event events = 1``, so the response is just each
    serialized event behind its tag and length; ``extra`` appends further fields that
    are already encoded (e.g. a ``move_rejected``).
    """
    return b"".join(b"\x0a" + _varint(len(event)) + event for event in events) + extra


# The field ``server_time_ms`` of each streamed response (docs/protocol.md, "Clocks").
WATCH_SERVER_TIME = 2  # WatchMatchResponse.server_time_ms
PLAY_SERVER_TIME = 3  # PlayResponse.server_time_ms


def frame_server_time(number: int) -> bytes:
    """Field ``number`` = the server's clock now, in ms (a varint), in wire form: appended to
    a framed message as it is sent, the one field that differs between its receivers."""
    return _varint(number << 3) + _varint(int(time.time() * 1000))


def frame_field(number: int, payload: bytes) -> bytes:
    """One length-delimited field (wire type 2) in wire form."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


# A catch-up is cut into messages of about this size (gRPC clients refuse messages over 4 MiB
# by default); the events of one change stay in one message unless a single change alone
# would pass HARD_MESSAGE_BYTES, which no game comes near.
MESSAGE_BYTES = 256 * 1024
HARD_MESSAGE_BYTES = 3 * 1024 * 1024


def starts_a_change(event: object) -> bool:
    """True for events that only ever come first in a change (a command's own event); the
    others (a turn, the start, the end, a move the server plays) may follow one.
    """
    if isinstance(event, MovePlayed):
        return not event.substituted
    return isinstance(event, Created | SeatJoined | PresenceChanged | Substituted | Forfeited)


def framed_batches(match: Match, entries: list[LogEntry], audience: int | None) -> Iterator[bytes]:
    """``entries`` for ``audience`` as WatchMatchResponse/PlayResponse messages of bounded size.

    Rendered lazily, one message at a time, so a long catch-up never sits in memory whole.
    A message ends only before an event that starts a change, so no client sees half of one.
    ``entries`` always run to the end of the log: when they start within the newest commit
    (a stream that is up to date), the one message is framed once per audience and shared
    by every stream of that audience.
    """
    frames = entries[0].frames if entries else None
    if frames is not None:
        data = frames.get(audience)
        if data is None:
            data = frame_events([event_bytes(match, entry, audience) for entry in entries])
            if len(data) > MESSAGE_BYTES:  # pragma: no cover - no change of any game comes near
                yield from _framed(match, entries, audience)
                return
            frames[audience] = data
        yield data
        return
    yield from _framed(match, entries, audience)


def _framed(match: Match, entries: list[LogEntry], audience: int | None) -> Iterator[bytes]:
    pending: list[bytes] = []
    size = 0
    for entry in entries:
        data = event_bytes(match, entry, audience)
        cost = len(data) + 6
        if pending and (
            size + cost > HARD_MESSAGE_BYTES or (size + cost > MESSAGE_BYTES and starts_a_change(entry.event))
        ):
            yield frame_events(pending)
            pending, size = [], 0
        pending.append(data)
        size += cost
    if pending:
        yield frame_events(pending)
