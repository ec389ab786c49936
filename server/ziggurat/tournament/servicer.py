"""TournamentService: the running tournament, read-only, for the live tournament page.

The runner adds it to its own server (gRPC, and over Connect beside the web client when the
tournament has an ``http_port``), so a browser on the LAN follows the standings, the
crosstable and the games in progress, and spectates any of them through the ordinary
MatchService of the same server.

Why it leaks nothing hidden: everything here is read from the tournament's own tables, where
a game's result is written only when the runner has it — for a Kabaleo duplicate deal that is
after every rotation of the deal has ended and been revealed together
(:class:`~ziggurat.tournament.games.DealBarrier`), so a deal's outcome cannot show here before
its reveal; and while the tournament runs, a deal's results show only once every rotation's
is written (:func:`_deals_whole`). A game whose result is not shown is ``PLAYING`` with no
ranks, decided or not.
The schedule's set-up seeds and bot seeds, the organiser's secret and the configuration text
(commands, token hashes) are never put into a message: the response is built field by field
from the names, ranks and termination of each game.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import grpc

from ziggurat.api.servicer import api
from ziggurat.rules.core import Termination
from ziggurat.tournament.config import TournamentConfig
from ziggurat.tournament.results import crosstable, disqualified, standings
from ziggurat.tournament.store import GameRow, TournamentStore
from ziggurat.v1 import tournament_service_pb2 as tpb
from ziggurat.v1 import tournament_service_pb2_grpc as tgrpc
from ziggurat.wire import errors
from ziggurat.wire.codec import GAME_ENUMS, TERMINATIONS
from ziggurat.wire.reasons import Reason

# A page polls every couple of seconds; many pages share one answer for this long.
CACHE_SECONDS = 0.5

GAME_STATUS = {
    "pending": tpb.TOURNAMENT_GAME_STATUS_PENDING,
    "running": tpb.TOURNAMENT_GAME_STATUS_PLAYING,
    "done": tpb.TOURNAMENT_GAME_STATUS_FINISHED,
}


class TournamentServicer(tgrpc.TournamentServiceServicer):
    """Serves one tournament (the one its runner plays) from the tournament tables."""

    def __init__(
        self,
        store: TournamentStore,
        tournament_id: str,
        config: TournamentConfig,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        self.tournament_id = tournament_id
        self.config = config
        self._clock = clock
        self._cached: tuple[float, tpb.Tournament] | None = None

    async def ListTournaments(
        self, request: tpb.ListTournamentsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> tpb.ListTournamentsResponse:
        """The one tournament this server runs."""
        return tpb.ListTournamentsResponse(tournaments=[self.snapshot()])

    @api
    async def GetTournament(
        self, request: tpb.GetTournamentRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> tpb.GetTournamentResponse:
        """The tournament by id; TOURNAMENT_NOT_FOUND for any other id."""
        if request.tournament_id != self.tournament_id:
            raise errors.refuse(
                Reason.TOURNAMENT_NOT_FOUND, f"this server runs tournament {self.tournament_id} only"
            )
        return tpb.GetTournamentResponse(tournament=self.snapshot())

    def snapshot(self) -> tpb.Tournament:
        """The tournament as its tables say now (shared by callers for ``CACHE_SECONDS``)."""
        now = self._clock()
        if self._cached is not None and now - self._cached[0] < CACHE_SECONDS:
            return self._cached[1]
        tournament = self._build()
        self._cached = (now, tournament)
        return tournament

    def _build(self) -> tpb.Tournament:
        config = self.config
        names = list(config.names)
        row = self.store.get(self.tournament_id)
        finished = row is not None and row.status == "finished"
        games = self.store.games(self.tournament_id)
        if not finished:
            games = _deals_whole(games)
        results = [game.result for game in games if game.status == "done" and game.result is not None]
        out = tpb.Tournament(
            tournament_id=self.tournament_id,
            name=config.name,
            game=GAME_ENUMS[config.game],
            format=config.format,
            seats=config.seats,
            status=tpb.TOURNAMENT_STATUS_FINISHED if finished else tpb.TOURNAMENT_STATUS_RUNNING,
            stop_reason=(row.stop_reason or "") if row is not None and finished else "",
            games_total=len(games),
            games_done=len(results),
            participants=names,
        )
        banned = disqualified(results, config.max_failures)
        for line in standings(names, results, banned):
            out.standings.add(
                rank=line.rank,
                participant=line.name,
                games=line.games,
                points=line.points,
                rating=line.rating,
                disqualified=line.disqualified,
                forfeits=line.forfeits,
            )
        table = crosstable(names, results)
        for name in names:
            cells = [
                tpb.CrosstableCell(opponent=other, points=table[name][other][0], games=table[name][other][1])
                for other in names
                if other != name and other in table[name]
            ]
            out.crosstable.add(participant=name, cells=cells)
        for game in games:
            out.games.append(_game(game))
        return out


def _deals_whole(games: list[GameRow]) -> list[GameRow]:
    """``games`` with the recorded results of a duplicate deal held back (shown as still
    playing) until every rotation of the deal is recorded.

    The rotations are revealed together (DealBarrier), but each game ends — its programs exit,
    its result is written — on its own a moment later: without this the page showed one
    rotation's ranks beside another still playing, a deal half revealed (the live page test
    failed so about one run in four). Once the tournament is over every row is shown as stored.
    """
    open_deals = {g.spec.get("deal") for g in games if g.status != "done"} - {None}
    if not open_deals:
        return games
    return [
        replace(g, status="running", result=None)
        if g.status == "done" and g.spec.get("deal") in open_deals
        else g
        for g in games
    ]


def _game(game: GameRow) -> tpb.TournamentGame:
    """One scheduled game: who sits where, and — only once its result is recorded — how it ended."""
    out = tpb.TournamentGame(
        index=game.index,
        round=game.round,
        seats=list(game.spec["seats"]),
        status=GAME_STATUS.get(game.status, tpb.TOURNAMENT_GAME_STATUS_UNSPECIFIED),
        match_id=game.match_id or "",
    )
    if game.status == "done" and game.result is not None:
        out.ranks.extend(game.result["ranks"])
        out.termination = TERMINATIONS[Termination(game.result["termination"])]
    return out
