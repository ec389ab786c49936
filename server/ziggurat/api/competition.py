"""Competition mode: who may call what on a tournament's server, on each listener.

A tournament's server (``ServeOptions.competition``, set by the tournament runner; ``ziggurat
serve`` never sets it) is not a lobby: the organiser creates every match and takes every seat
in-process (:mod:`ziggurat.tournament.games`), so nothing that creates or seats is needed by
anyone who reaches the server over the network. Left open, those calls let a participant bend
the competition: one filled its rivals' ``max_matches`` with InviteBot until they were
``BOT_BUSY`` and had them disqualified (issue 21). This module is the one place that says what
is allowed, as a table (:data:`POLICY`: full method name -> listener -> :class:`Rule`),
consulted on the gRPC path by :class:`CompetitionInterceptor` (a server interceptor) and on the
web port by :class:`ziggurat.web.competition.CompetitionConnectInterceptor` (a Connect
interceptor) — not in each servicer method, so that no handler can forget it and a new
method is refused until the table names it (a method missing from the table is refused).

The listeners (:class:`Listener`):

* the **Unix socket** bound into every sandbox (``ZIGGURAT_SERVER=unix:…``): whoever calls there
  is a participant's program, so it holds its own seats and nothing else;
* the **gRPC port** and the **web port**: built-in bots, ``keep_alive`` programs run unconfined
  and remote participants play there, and so do spectators and the live page. A port cannot
  tell who calls, so a call is judged by the credential it carries: with a token (a seat token
  or a bot token in ``authorization``) it is a participant's and gets what a participant may
  do; without one it is the audience's, which may only read (what a match has released: the
  views are redacted by :mod:`ziggurat.core.render`, not here).

Every refusal is ``PERMISSION_DENIED`` with the reason ``NOT_ALLOWED_IN_COMPETITION`` and a
message naming the call, the listener and why; it is decided before the servicer runs, so a
refused call changes nothing and tells nothing (not even whether a match id exists).
``docs/tournaments.md`` ("What a participant can do") prints this table and
``tests/api/test_competition.py`` checks that the two agree and that a real server does
what every cell says.
"""

from __future__ import annotations

import enum
import hmac
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import grpc
from google.protobuf.message import Message

from ziggurat.api.guard import bearer_token, credential_key
from ziggurat.api.peer import Peers
from ziggurat.api.ratelimit import RateLimiter
from ziggurat.api.status_guard import close_requests, end_call
from ziggurat.core.botnames import bot_key
from ziggurat.core.match import hash_token
from ziggurat.store.sqlite import Store
from ziggurat.wire import errors
from ziggurat.wire.reasons import Reason

Context = grpc.aio.ServicerContext[Any, Any]


class Listener(enum.Enum):
    """Where a call came in; the value is the column heading of the table in the docs."""

    SOCKET = "Unix socket (sandboxed programs)"
    GRPC = "gRPC port"
    WEB = "web port"


class Rule(enum.Enum):
    """What one method allows on one listener; the value is the cell's text in the docs."""

    OPEN = "allowed"
    # The servicer checks the seat token against the match, as on any server.
    SEAT = "its own seats (seat token)"
    # A seat token of the very match asked about; nothing without one.
    OWN_SEAT = "its own seats' matches only (seat token)"
    # Without a token: as any spectator; with one: only a seat token of that match.
    SEAT_OR_AUDIENCE = "a spectator (no token), or its own seats' matches (seat token)"
    # Without a token only: a call carrying a token is a participant's, and refused.
    AUDIENCE = "a spectator only (no token)"
    # Any seat token the server issued (health checks on the socket: every call there carries
    # a credential, so that each participant's calls are counted as its own).
    ANY_SEAT = "with a seat token"
    # ConnectBot under a name the tournament registered before it started.
    REGISTERED_BOT = "the names the tournament registered (bot token)"
    REFUSED = "refused"
    # The listener does not serve the method at all (Connect answers ``unimplemented``).
    NOT_SERVED = "not served"


_MATCH = "/ziggurat.v1.MatchService/"
_BOT = "/ziggurat.v1.BotService/"
_ADMIN = "/ziggurat.v1.AdminService/"
_TOURNAMENT = "/ziggurat.v1.TournamentService/"
_ARENA = "/ziggurat.v1.ArenaService/"
_HEALTH = "/grpc.health.v1.Health/"
_REFLECTION = "/grpc.reflection.v1alpha.ServerReflection/"

_S, _G, _W = Listener.SOCKET, Listener.GRPC, Listener.WEB


def _row(socket: Rule, grpc_port: Rule, web: Rule) -> dict[Listener, Rule]:
    return {_S: socket, _G: grpc_port, _W: web}


_REFUSED_EVERYWHERE = _row(Rule.REFUSED, Rule.REFUSED, Rule.REFUSED)
_ADMIN_ROW = _row(Rule.REFUSED, Rule.REFUSED, Rule.NOT_SERVED)  # also what the web port never serves

POLICY: Mapping[str, Mapping[Listener, Rule]] = {
    # Playing its seats: the servicer checks the seat token, as everywhere.
    _MATCH + "Play": _row(Rule.SEAT, Rule.SEAT, Rule.NOT_SERVED),
    _MATCH + "SubmitMove": _row(Rule.SEAT, Rule.SEAT, Rule.SEAT),
    _MATCH + "Resign": _row(Rule.SEAT, Rule.SEAT, Rule.SEAT),
    # Absence in a competition is the organiser's to settle (its time control's grace).
    _MATCH + "ClaimAbandoned": _REFUSED_EVERYWHERE,
    # Reading: a participant its own seats' matches; the audience what every spectator sees.
    _MATCH + "GetMatch": _row(Rule.OWN_SEAT, Rule.SEAT_OR_AUDIENCE, Rule.SEAT_OR_AUDIENCE),
    _MATCH + "WatchMatch": _row(Rule.OWN_SEAT, Rule.SEAT_OR_AUDIENCE, Rule.SEAT_OR_AUDIENCE),
    _MATCH + "GetMatchRecord": _row(Rule.OWN_SEAT, Rule.SEAT_OR_AUDIENCE, Rule.SEAT_OR_AUDIENCE),
    _MATCH + "ListMatches": _row(Rule.REFUSED, Rule.AUDIENCE, Rule.AUDIENCE),
    # Creating and seating: the organiser does it in-process; nobody does it over the network.
    _MATCH + "CreateMatch": _REFUSED_EVERYWHERE,
    _MATCH + "CancelMatch": _REFUSED_EVERYWHERE,
    _MATCH + "JoinMatch": _REFUSED_EVERYWHERE,
    _MATCH + "AddBot": _REFUSED_EVERYWHERE,
    _MATCH + "ListBuiltinBots": _REFUSED_EVERYWHERE,
    # What the server hosts: public, as the rules pages are; a participant is told its game.
    _MATCH + "ListGames": _row(Rule.REFUSED, Rule.AUDIENCE, Rule.AUDIENCE),
    _BOT + "ConnectBot": _row(Rule.REGISTERED_BOT, Rule.REGISTERED_BOT, Rule.NOT_SERVED),
    _BOT + "ListBots": _REFUSED_EVERYWHERE,
    _BOT + "InviteBot": _REFUSED_EVERYWHERE,
    _ADMIN + "AbortMatch": _ADMIN_ROW,
    _ADMIN + "CloseMatchCreation": _ADMIN_ROW,
    _ADMIN + "OpenMatchCreation": _ADMIN_ROW,
    # The live page's service.
    _TOURNAMENT + "ListTournaments": _row(Rule.REFUSED, Rule.AUDIENCE, Rule.AUDIENCE),
    _TOURNAMENT + "GetTournament": _row(Rule.REFUSED, Rule.AUDIENCE, Rule.AUDIENCE),
    # A standing arena's ladder (docs/arena.md): public reads, and self-registration (the
    # servicer applies the arena's policy and rate limits; no token: an entrant has none yet).
    _ARENA + "GetArena": _row(Rule.REFUSED, Rule.AUDIENCE, Rule.AUDIENCE),
    _ARENA + "GetEntrant": _row(Rule.REFUSED, Rule.AUDIENCE, Rule.AUDIENCE),
    _ARENA + "ListArenaGames": _row(Rule.REFUSED, Rule.AUDIENCE, Rule.AUDIENCE),
    _ARENA + "RegisterEntrant": _row(Rule.REFUSED, Rule.AUDIENCE, Rule.AUDIENCE),
    # Plumbing: health checks for everyone (not the list of services), on the socket with a
    # seat token; reflection (the schema, public anyway) for the ports.
    _HEALTH + "Check": _row(Rule.ANY_SEAT, Rule.OPEN, Rule.NOT_SERVED),
    _HEALTH + "Watch": _row(Rule.ANY_SEAT, Rule.OPEN, Rule.NOT_SERVED),
    _HEALTH + "List": _ADMIN_ROW,
    _REFLECTION + "ServerReflectionInfo": _row(Rule.REFUSED, Rule.OPEN, Rule.NOT_SERVED),
}


# Reads a credential may make per second (bursts of twice as many) on a competition server.
READS_PER_CREDENTIAL = (50.0, 100.0)
# Calls one credential may hold open at once on a competition server (Play may hold 8 per seat).
CALLS_PER_CREDENTIAL = 32
_READS = frozenset(
    {
        _MATCH + "GetMatch",
        _MATCH + "WatchMatch",
        _MATCH + "GetMatchRecord",
        _MATCH + "ListMatches",
        _TOURNAMENT + "ListTournaments",
        _TOURNAMENT + "GetTournament",
        _ARENA + "GetArena",
        _ARENA + "GetEntrant",
        _ARENA + "ListArenaGames",
        _HEALTH + "Check",
        _HEALTH + "Watch",
    }
)


def rule_for(method: str, listener: Listener) -> Rule:
    """The rule of ``method`` (``/package.Service/Method``) on ``listener``; a method the table
    does not name is refused."""
    row = POLICY.get(method)
    return Rule.REFUSED if row is None else row[listener]


def listener_of(peer: str) -> Listener:
    """The gRPC listener of a call from ``peer`` (:meth:`Peers.of`): the ports give ``ipv4:`` and
    ``ipv6:`` peers, the Unix socket ``unix:``; anything else counts as the socket (the
    narrowest rights)."""
    return Listener.GRPC if peer.startswith(("ipv4:", "ipv6:")) else Listener.SOCKET


def _short(method: str) -> str:
    """``MatchService.CreateMatch`` for ``/ziggurat.v1.MatchService/CreateMatch``."""
    service, _, name = method.lstrip("/").partition("/")
    return f"{service.rsplit('.', 1)[-1]}.{name}"


class Competition:
    """The policy of one competition server: the table, its seat tokens and its bot names."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._bot_keys: set[str] = set()
        # An arena's entrants connect as NAME or NAME@VERSION under NAME's token.
        self.versioned = False
        # Reads with a token, per credential: a program polling its match in a loop would take
        # the server's time from every other seat's moves (and their clocks).
        self._reads = RateLimiter(*READS_PER_CREDENTIAL)

    def allow_bot(self, name: str) -> None:
        """Let ``name`` connect with ConnectBot (the tournament registered it with its token)."""
        self._bot_keys.add(bot_key(name))

    def _entrant_of(self, name: str) -> str:
        """The registered name a ConnectBot name stands for: itself, or on an arena (versioned
        names) the part before ``@`` of ``NAME@VERSION`` (:mod:`ziggurat.arena`)."""
        return name.partition("@")[0] if self.versioned else name

    def check(
        self, method: str, listener: Listener, token: str | None, request: Any
    ) -> errors.ApiError | None:
        """The refusal of this call, or None when the table lets it through.

        ``request`` is the decoded request message (None for request streams, whose rules
        never read it).
        """
        rule = rule_for(method, listener)
        if rule in (Rule.OPEN, Rule.SEAT):
            return None
        where = listener.value.split(" (")[0]
        call = _short(method)
        if token and method in _READS and not self._reads.allow(credential_key(token)):
            return errors.refuse(
                Reason.RATE_LIMITED,
                f"{call}: a competition server answers at most {READS_PER_CREDENTIAL[0]:g} reads a "
                "second with one token (bursts of twice as many); slow down",
            )
        if rule == Rule.ANY_SEAT:
            if token and self.store.seat_of_token(hash_token(token)) is not None:
                return None
            return _refusal(
                f"{call} on the {where} of a competition server needs a seat token: every call "
                "there carries its participant's credential"
            )
        if rule in (Rule.REFUSED, Rule.NOT_SERVED):
            return _refusal(
                f"{call} is refused on the {where} of a competition server: {_why(method, listener)}"
            )
        if rule == Rule.AUDIENCE:
            if not token:
                return None
            return _refusal(
                f"{call} is for spectators on a competition server; a call carrying a token is a "
                "participant's, and a participant reads only its own seats' matches"
            )
        if rule == Rule.REGISTERED_BOT:
            name = getattr(request, "name", "")
            if isinstance(name, str) and bot_key(self._entrant_of(name)) in self._bot_keys:
                return None
            return _refusal(
                f"{call}: a competition server registers no new bot names; only the tournament's "
                "own participants connect, under the names it registered"
            )
        match_id = getattr(request, "match_id", "")
        if not token and rule == Rule.SEAT_OR_AUDIENCE:
            return None
        if token and isinstance(match_id, str) and self._seat_token_of(token, match_id):
            return None
        return _refusal(
            f"{call} on the {where} of a competition server needs the seat token of that match: "
            "a participant reads only its own seats' matches"
        )

    def _seat_token_of(self, token: str, match_id: str) -> bool:
        """True when ``token`` is a seat token of ``match_id`` (seat tokens are stored hashed
        before anyone holds them, so the store is the whole truth)."""
        found = self.store.seat_of_token(hash_token(token))
        return found is not None and hmac.compare_digest(found[0].encode(), match_id.encode())


def _why(method: str, listener: Listener) -> str:
    if method.startswith(_TOURNAMENT) or method == _MATCH + "ListMatches":
        return "a participant reads only its own seats' matches"
    if method.startswith(_HEALTH):
        return "its health checks are Check and Watch"
    if method.startswith(_REFLECTION):
        return "a participant's program needs only its own seats"
    if listener == Listener.SOCKET:
        return (
            "a participant plays its own seats and nothing else; the organiser creates and seats every match"
        )
    return "the organiser creates and seats every match itself"


def _refusal(message: str) -> errors.ApiError:
    return errors.refuse(Reason.NOT_ALLOWED_IN_COMPETITION, message)


if TYPE_CHECKING:
    _Interceptor = grpc.aio.ServerInterceptor[Any, Any]
else:  # the stubs are generic, the runtime class is not
    _Interceptor = grpc.aio.ServerInterceptor


class CompetitionInterceptor(_Interceptor):
    """The gRPC path's check: every call of a competition server passes :meth:`Competition.check`
    before its handler runs.

    It sits right after the guard (which has admitted the call) and before the status guard, so
    that a refused request stream is closed down to gRPC's own receiver (past the status
    guard's unstarted wrapper, which would leave that receiver never awaited); an undecodable
    request is passed on for the status guard to refuse.
    """

    def __init__(self, competition: Competition, peers: Peers) -> None:
        self.competition = competition
        self.peers = peers
        self._wrapped: dict[str, tuple[Any, grpc.RpcMethodHandler[Any, Any]]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[Any, Any]]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[Any, Any]:
        """The method's handler, checked first (built once per method, as the other guards do)."""
        handler = await continuation(handler_call_details)
        if handler is None:
            return None
        method = str(getattr(handler_call_details, "method", ""))
        known = self._wrapped.get(method)
        if known is not None and known[0] is handler:
            return known[1]
        wrapped = self._wrap_handler(method, handler)
        self._wrapped[method] = (handler, wrapped)
        return wrapped

    def _wrap_handler(
        self, method: str, found: grpc.RpcMethodHandler[Any, Any]
    ) -> grpc.RpcMethodHandler[Any, Any]:
        handler: Any = found
        rules = set(POLICY.get(method, {}).values())
        if rules and rules <= {Rule.OPEN, Rule.SEAT, Rule.NOT_SERVED}:
            return found  # allowed on every gRPC listener (Play, health): nothing to check
        slot = {
            (False, False): "unary_unary",
            (False, True): "unary_stream",
            (True, False): "stream_unary",
            (True, True): "stream_stream",
        }[(bool(handler.request_streaming), bool(handler.response_streaming))]
        behaviour = getattr(handler, slot)
        if behaviour is None:
            return found
        checked = self._checked(method, behaviour, bool(handler.request_streaming))
        replaced: grpc.RpcMethodHandler[Any, Any] = handler._replace(**{slot: checked})
        return replaced

    def _refusal(
        self, method: str, request: Any, context: Context, request_streaming: bool
    ) -> errors.ApiError | None:
        if not request_streaming and not isinstance(request, Message):
            return None  # bytes that do not decode: the status guard next refuses them (MALFORMED_REQUEST)
        listener = listener_of(self.peers.of(context))
        message = None if request_streaming else request
        return self.competition.check(method, listener, bearer_token(context), message)

    def _checked(self, method: str, inner: Callable[..., Any], request_streaming: bool) -> Callable[..., Any]:
        if inspect.isasyncgenfunction(inner):

            async def streaming(request: Any, context: Context) -> AsyncIterator[Any]:
                refusal = self._refusal(method, request, context, request_streaming)
                if refusal is not None:
                    await _refuse(context, refusal, request if request_streaming else None)
                    return
                async for response in inner(request, context):
                    yield response

            return streaming

        async def single(request: Any, context: Context) -> Any:
            refusal = self._refusal(method, request, context, request_streaming)
            if refusal is not None:
                await _refuse(context, refusal, request if request_streaming else None)
                return None
            return await inner(request, context)

        return single


async def _refuse(context: Context, refusal: errors.ApiError, requests: object) -> None:
    """End a refused call; a request stream it never read is closed (else gRPC's receiver of
    its messages is left unawaited: see :func:`~ziggurat.api.status_guard.close_requests`)."""
    if requests is not None:
        await close_requests(requests)
    await end_call(context, refusal)
