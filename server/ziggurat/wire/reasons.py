"""Every machine-readable error reason the server can send, in one list.

A reason is the ``google.rpc.ErrorInfo.reason`` of a refused call (domain
``ziggurat``) and the ``MoveRejected.reason`` of a move refused on the Play
stream. Clients in every language branch on these strings, so they are a
contract: each one is listed here with the one gRPC status it travels with and
what it means. ``docs/protocol.md`` (the reasons table) and the comment of
``MatchService`` in ``proto/ziggurat/v1/match_service.proto`` repeat this list
word for word, and ``tests/wire/test_reasons.py`` fails when code, docs and proto
disagree or when a reason string used in ``server/`` is missing here.

To add a reason: add a member here (name, status, one-line meaning), add the same
line to the docs table and to the proto comment, and raise it with
:func:`ziggurat.wire.errors.refuse`.
"""

from __future__ import annotations

import enum

import grpc

_INVALID = grpc.StatusCode.INVALID_ARGUMENT
_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION
_EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED


@enum.unique
class Reason(enum.Enum):
    """A reason: its name is the wire string; ``code`` is its status; ``meaning`` says when."""

    code: grpc.StatusCode
    meaning: str

    def __init__(self, code: grpc.StatusCode, meaning: str) -> None:
        self.code = code
        self.meaning = meaning

    # INVALID_ARGUMENT: the request is wrong whatever the state of the match.
    MALFORMED_REQUEST = (_INVALID, "the request bytes are not a valid message (corrupt, or invalid UTF-8)")
    MALFORMED_MOVE = (_INVALID, "the move is not in the game's move notation")
    INVALID_CONFIG = (_INVALID, "the game configuration, time control or seat assignment is not valid")
    INVALID_POSITION = (_INVALID, "a position text is not a valid position of the game")
    BAD_NAME = (
        _INVALID,
        "a player or bot name is empty, too long, not printable, mixes scripts or reads as NAME (bot)",
    )
    BAD_SEAT = (_INVALID, "the seat number is outside the match's seats")
    SEAT_BY_LOT = (_INVALID, "a seat was named in a match whose seats are drawn by lot")
    BAD_FILTER = (_INVALID, "an unknown status or game in a ListMatches filter")
    BAD_PAGE_TOKEN = (_INVALID, "page_token is not a next_page_token of the same listing")
    UNKNOWN_BOT = (_INVALID, "AddBot named no built-in bot of this server (see ListBuiltinBots)")
    # FAILED_PRECONDITION: well formed, but the current state does not allow it.
    ILLEGAL_MOVE = (_PRECONDITION, "the move is well formed but not legal in the position")
    NOT_YOUR_TURN = (_PRECONDITION, "it is not the caller's seat's turn")
    STALE_PLY = (_PRECONDITION, "the move's ply guard names another ply than the current one")
    TIME_EXPIRED = (_PRECONDITION, "the move arrived after the seat's time ran out")
    SEAT_FORFEITED = (_PRECONDITION, "the seat has resigned or forfeited; the server plays for it")
    NOT_STARTED = (_PRECONDITION, "the match has not started: seats are still open")
    GAME_OVER = (_PRECONDITION, "the match is over")
    MATCH_FULL = (_PRECONDITION, "every seat of the match is taken")
    SEAT_TAKEN = (_PRECONDITION, "the chosen seat is taken")
    NOT_WAITING = (_PRECONDITION, "the match has started: only the operator can end it now")
    CREATION_CLOSED = (_PRECONDITION, "the operator has closed match creation on this server")
    NOT_FINISHED = (_PRECONDITION, "the match record is available once the match is over")
    NOT_ABANDONED = (_PRECONDITION, "no other seat has been away for the match's claim_after_ms")
    CLAIMS_OFF = (_PRECONDITION, "this match cannot be claimed (Match.claim_after_ms is 0)")
    BOT_NOT_CONNECTED = (_PRECONDITION, "the named bot is not connected")
    BOT_GAME = (_PRECONDITION, "the named bot does not play that game")
    BOT_BUSY = (_PRECONDITION, "the named bot already plays its maximum number of matches")
    REGISTRATION_CLOSED = (_PRECONDITION, "this arena takes no self-registrations (docs/arena.md)")
    MATCH_ELSEWHERE = (
        _PRECONDITION,
        "another worker process owns the match: call again at ErrorInfo metadata address (docs/scaling.md)",
    )
    # Other statuses.
    MATCH_NOT_FOUND = (grpc.StatusCode.NOT_FOUND, "there is no match with that id")
    TOURNAMENT_NOT_FOUND = (grpc.StatusCode.NOT_FOUND, "this server runs no tournament with that id")
    ENTRANT_NOT_FOUND = (grpc.StatusCode.NOT_FOUND, "this server runs no arena with an entrant of that name")
    NAME_TAKEN = (
        grpc.StatusCode.ALREADY_EXISTS,
        "the arena has an entrant of that name, or of one that reads alike",
    )
    MISSING_TOKEN = (grpc.StatusCode.UNAUTHENTICATED, "the call needs a token and none was sent")
    ADMIN_DISABLED = (
        grpc.StatusCode.PERMISSION_DENIED,
        "the server has no operator token (--admin-token-file)",
    )
    BAD_TOKEN = (
        grpc.StatusCode.PERMISSION_DENIED,
        "the token gives no right here (forged, or another match's)",
    )
    NOT_ALLOWED_IN_COMPETITION = (
        grpc.StatusCode.PERMISSION_DENIED,
        "a competition server refuses this call on this listener to this caller (docs/tournaments.md)",
    )
    RATE_LIMITED = (_EXHAUSTED, "too many requests from this seat or address; slow down")
    TOO_MANY_MATCHES = (_EXHAUSTED, "the server hosts its maximum number of live matches")
    TOO_MANY_MATCHES_CREATED = (
        _EXHAUSTED,
        "the caller's address has as many live matches it created as the server allows "
        "(--max-matches-per-address)",
    )
    TOO_MANY_STREAMS = (
        _EXHAUSTED,
        "the match, the seat or the caller's address already has the most open streams it may have",
    )
    TOO_MANY_CONNECTIONS = (
        _EXHAUSTED,
        "this address has as many connections in use as the server allows (--max-connections-per-address)",
    )
    TOO_MANY_BOTS = (_EXHAUSTED, "the server already plays its maximum number of built-in bots")
    TOO_MANY_INVITATIONS = (
        _EXHAUSTED,
        "the named bot already has as many invitations waiting to be played as the server allows "
        "(--max-pending-invitations)",
    )
    SERVER_BUSY = (
        _EXHAUSTED,
        "the server holds as many calls from all clients together, or as much memory, as it allows "
        "(--max-streams, --max-memory-percent); retry later",
    )
    BAD_SEQ = (grpc.StatusCode.OUT_OF_RANGE, "the resume point after_seq is beyond the match's log")
    # UNAVAILABLE: nothing changed; the same request may succeed later.
    STORE_UNAVAILABLE = (
        grpc.StatusCode.UNAVAILABLE,
        "the database refused the write (locked, full, read-only or failing); nothing changed; retry later",
    )
    SERVER_ERROR = (
        grpc.StatusCode.UNAVAILABLE,
        "the server could not process the request because of a fault of its own (logged); retry",
    )
    FIRST_MESSAGE_TIMEOUT = (
        grpc.StatusCode.DEADLINE_EXCEEDED,
        "a stream sent no first message within the server's limit (--first-message-timeout)",
    )
    SERVER_SHUTTING_DOWN = (
        grpc.StatusCode.UNAVAILABLE,
        "the server is stopping; reconnect and resume after it restarts",
    )
    WORKER_UNAVAILABLE = (
        grpc.StatusCode.UNAVAILABLE,
        "a worker process that owns some of the matches listed is restarting; retry shortly",
    )
    MATCH_DAMAGED = (
        grpc.StatusCode.DATA_LOSS,
        "the match's stored data is damaged; the server quarantines it and serves the rest",
    )
    DATABASE_DAMAGED = (
        grpc.StatusCode.DATA_LOSS,
        "the server's match table is damaged; the list cannot be read",
    )


def lookup(name: str) -> Reason:
    """The registered reason called ``name``; KeyError for a string that is not a reason."""
    return Reason[name]
