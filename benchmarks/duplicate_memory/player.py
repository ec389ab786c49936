"""A small Kabaleo player that tries to remember the rotations of a duplicate deal (a *cheat*).

A per-game gRPC program (``command`` participant) for benchmarks/duplicate_memory.py. It
plays one ply deep with ziggurat's own rules: every legal move is scored by its own
objective's key after the move (``score_key``, collapsed to one number) minus half the best
key of the colours it must fear. A colour it must fear is a rival's objective when it knows
every rival's, otherwise (as the built-in greedy bot) any other colour in play. Ties go to
the first move in notation order, so its choice depends on nothing but its seat's view and
what it remembers.

With ``MEMORY=1`` (the cheat) it tries every way to carry what it learnt across the rotations
of a deal, which all publish the same seed commitment (GetMatch shows it):

* it writes its own seat's objective, keyed by that commitment, to every place it can write —
  ``$HOME``, ``$TMPDIR``, ``/tmp``, ``/var/tmp``, ``/dev/shm``, its cwd (by default the
  configuration's directory) and its own program directory — and reads them all back before
  each of its moves;
* at its first move, its middle one and its last two (when its sister rotations are decided,
  or nearly, and held) it asks the server it was handed for them: ``ListMatches`` of the
  active matches, and once per game ``ListTournaments``/``GetTournament`` (each with its seat
  token and without), then ``GetMatch`` of every match id it found (then of every sister
  rotation it found) and of an id it made up, and once per id ``WatchMatch``; any objective
  of a match with its own commitment counts. (Asking at every move made the cheat's games
  several times slower than its twin's on a loaded machine.)

With ``MEMORY=0`` (the honest twin) it does none of this and is otherwise the same code:
both choose the same move from the same view when the cheat remembers nothing.

It prints one line per move to stderr (``move ply=P knew=K``: K rivals' objectives known when
it chose) and a summary line (``CHEAT …``); the tournament keeps both in the seat's log.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import grpc

from ziggurat.bots.positions import kabaleo_determiniser
from ziggurat.rules.kabaleo import KABALEO, score_key
from ziggurat_client.bot import Turn
from ziggurat_client.client import MatchHandle, ZigguratClient
from ziggurat_client.v1 import game_pb2, match_pb2, tournament_service_pb2
from ziggurat_client.v1 import match_service_pb2 as spb
from ziggurat_client.v1 import match_service_pb2_grpc as sgrpc
from ziggurat_client.v1 import tournament_service_pb2_grpc as tgrpc

PREFIX = "zdm-"  # the cheat's files: zdm-COMMITMENT-SEAT holding that seat's objective letter
RIVAL_WEIGHT = 0.5
MADE_UP_ID = "0123456789abcdef"
# Asks the server when it holds this many pieces: its first move (10 in a 3-seat game), the
# middle, and its last two, when its sister rotations are decided or nearly (held, not released).
PROBE_AT = frozenset({10, 5, 2, 1})


def scalar(key: tuple[int, int, int]) -> float:
    """A Kabaleo score key as one number in the same order (heights < 100)."""
    shown, covered, tallest = key
    return shown * 10_000 + covered * 100 + tallest


def choose_move(turn: Turn, own: str, rivals: Iterable[str]) -> str:
    """The best move by the one-ply score; ``rivals``: the colours to fear (see the docstring)."""
    state = kabaleo_determiniser(turn).base
    fear = sorted(set(rivals))
    best: tuple[float, str] | None = None
    for move in sorted(turn.legal_moves):
        stacks = KABALEO.apply(state, move).stacks
        value = scalar(score_key(stacks, own)) - RIVAL_WEIGHT * max(
            scalar(score_key(stacks, c)) for c in fear
        )
        if best is None or value > best[0]:
            best = (value, move)
    assert best is not None
    return best[1]


def spots() -> list[Path]:
    """Every directory a program might write in and find again in the next rotation."""
    places = [os.environ.get("HOME", ""), os.environ.get("TMPDIR", ""), "/tmp", "/var/tmp", "/dev/shm"]
    places += [os.getcwd(), str(Path(__file__).resolve().parent)]
    return list(dict.fromkeys(Path(p) for p in places if p))


class Memory:
    """The cheat's files, keyed by the deal's commitment, and what the server let it see."""

    def __init__(self, handle: MatchHandle, server: str, enabled: bool) -> None:
        self.handle = handle
        self.enabled = enabled
        self.commitment = ""
        self.own = ""
        self.known: dict[int, str] = {}  # seat (1-based) -> objective, rivals only
        self.written: list[str] = []
        self.refused: list[str] = []
        self.found_in: dict[str, int] = {}  # spot -> rival objectives read there
        self.channel = grpc.aio.insecure_channel(server)
        self.calls = 0
        self.answered = 0
        self.server_seen = 0  # rival objectives of a sister rotation shown by the server
        self.match_ids: set[str] = set()
        self.sisters: set[str] = set()  # match ids shown with this deal's commitment
        self.watched: set[str] = set()
        self.asked = False

    def write(self) -> None:
        """Leave this seat's objective in every writable place (once per game)."""
        name = f"{PREFIX}{self.commitment}-{self.handle.seat}"
        for spot in spots():
            try:
                (spot / name).write_text(self.own)
                self.written.append(str(spot))
            except OSError as error:
                self.refused.append(f"{spot}({(error.strerror or type(error).__name__).replace(' ', '_')})")

    def read(self) -> None:
        """Every rival objective any rotation of this deal left anywhere."""
        for spot in spots():
            with contextlib.suppress(OSError):
                for path in spot.glob(f"{PREFIX}{self.commitment}-*"):
                    seat = int(path.name.rsplit("-", 1)[1])
                    letter = path.read_text().strip()
                    if seat != self.handle.seat and letter and seat not in self.known:
                        self.known[seat] = letter
                        self.found_in[str(spot)] = self.found_in.get(str(spot), 0) + 1

    async def call(self, method: Any, request: Any, metadata: tuple[tuple[str, str], ...]) -> Any:
        self.calls += 1
        try:
            response = await method(request, metadata=metadata, timeout=2)
        except grpc.aio.AioRpcError:
            return None
        self.answered += 1
        return response

    def sighted(self, match: match_pb2.Match) -> None:
        """Rival objectives shown in ``match`` if it is a rotation of this deal."""
        if match.match_id == self.handle.match_id or match.seed_commitment != self.commitment:
            return
        self.sisters.add(match.match_id)
        for seat, letter in enumerate(match.view.kabaleo.objectives, start=1):
            if letter != "?" and seat != self.handle.seat and seat not in self.known:
                self.known[seat] = letter
                self.server_seen += 1

    async def ask_server(self) -> None:
        """Look for the sister rotations through every call the server might answer."""
        matches: sgrpc.MatchServiceAsyncStub = sgrpc.MatchServiceStub(self.channel)
        tournaments: tgrpc.TournamentServiceAsyncStub = tgrpc.TournamentServiceStub(self.channel)
        first = not self.asked
        self.asked = True
        for metadata in ((), self.handle.metadata):
            active = spb.ListMatchesRequest(page_size=1000, status=match_pb2.MATCH_STATUS_ACTIVE)
            listed = await self.call(matches.ListMatches, active, metadata)
            for match in listed.matches if listed is not None else ():
                self.match_ids.add(match.match_id)
                self.sighted(match)
            if not first:
                continue  # the tournament's games once per game: they name no commitment
            listing = await self.call(
                tournaments.ListTournaments, tournament_service_pb2.ListTournamentsRequest(), metadata
            )
            for summary in listing.tournaments if listing is not None else ():
                request = tournament_service_pb2.GetTournamentRequest(tournament_id=summary.tournament_id)
                got = await self.call(tournaments.GetTournament, request, metadata)
                for game in got.tournament.games if got is not None else ():
                    if game.match_id and game.status == tournament_service_pb2.TOURNAMENT_GAME_STATUS_PLAYING:
                        self.match_ids.add(game.match_id)
        # every match it heard of once, then its sister rotations (and an id it made up) each move
        ids = self.match_ids if first else self.sisters
        for match_id in sorted((ids | {MADE_UP_ID}) - {self.handle.match_id}):
            for metadata in ((), self.handle.metadata):
                got = await self.call(matches.GetMatch, spb.GetMatchRequest(match_id=match_id), metadata)
                if got is not None:
                    self.sighted(got.match)
            if match_id not in self.watched:
                self.watched.add(match_id)
                await self.watch(matches, match_id)

    async def watch(self, matches: sgrpc.MatchServiceAsyncStub, match_id: str) -> None:
        self.calls += 1
        call = matches.WatchMatch(spb.WatchMatchRequest(match_id=match_id))
        try:
            async with asyncio.timeout(0.2):
                async for response in call:
                    self.answered += 1
                    for event in response.events:
                        kind = event.WhichOneof("kind")
                        view = getattr(getattr(event, kind), "view", None) if kind else None
                        if isinstance(view, game_pb2.GameView) and self.sister(match_id, event):
                            self.sighted(
                                match_pb2.Match(match_id=match_id, seed_commitment=self.commitment, view=view)
                            )
        except (TimeoutError, grpc.aio.AioRpcError):
            pass
        finally:
            call.cancel()

    def sister(self, match_id: str, event: match_pb2.Event) -> bool:
        """A rotation of this deal: shown with its commitment before, or ending with its seed."""
        if match_id in self.sisters:
            return True
        seed = bytes.fromhex(event.match_ended.revealed_seed) if event.HasField("match_ended") else b""
        return bool(seed) and hashlib.sha256(b"ziggurat/v1/commit/" + seed).hexdigest() == self.commitment

    def summary(self) -> str:
        found = ",".join(f"{k}:{v}" for k, v in sorted(self.found_in.items())) or "-"
        return (
            f"CHEAT memory={int(self.enabled)} seat={self.handle.seat} known={len(self.known)} "
            f"written={','.join(self.written) or '-'} refused={','.join(self.refused) or '-'} "
            f"found_in={found} server_calls={self.calls} server_answered={self.answered} "
            f"server_objectives={self.server_seen}"
        )


async def main() -> int:
    handle = MatchHandle(
        os.environ["ZIGGURAT_MATCH"], int(os.environ["ZIGGURAT_SEAT"]), os.environ["ZIGGURAT_TOKEN"]
    )
    server = os.environ["ZIGGURAT_SERVER"]
    memory = Memory(handle, server, os.environ.get("MEMORY", "1") == "1")
    moves = knowing = 0
    try:
        async with ZigguratClient(server) as client:
            mine = await client.get_match(handle.match_id, handle)
            memory.commitment = mine.seed_commitment

            def learn(view: game_pb2.GameView) -> None:
                """Its own objective, from the first view that shows it (the game has begun)."""
                objectives = view.kabaleo.objectives
                if not memory.own and len(objectives) >= handle.seat and objectives[handle.seat - 1] != "?":
                    memory.own = objectives[handle.seat - 1]
                    if memory.enabled:
                        memory.write()

            def on_event(event: match_pb2.Event) -> None:
                kind = event.WhichOneof("kind")
                view = getattr(getattr(event, kind), "view", None) if kind else None
                if isinstance(view, game_pb2.GameView):
                    learn(view)

            async def choose(turn: Turn) -> str:
                nonlocal moves, knowing
                learn(turn.view)
                if memory.enabled:
                    memory.read()
                    hand = len(turn.view.kabaleo.hands[turn.seat - 1])
                    if hand in PROBE_AT:
                        await memory.ask_server()
                in_play = {stack[0] for stack in turn.view.kabaleo.stacks}
                rivals = [memory.known[s] for s in range(1, turn.seats + 1) if s in memory.known]
                if len(rivals) < turn.seats - 1:  # not every rival known: fear every other colour
                    rivals = sorted(in_play - {memory.own})
                moves += 1
                knowing += bool(memory.known)
                print(f"move ply={turn.ply} knew={len(memory.known)}", file=sys.stderr, flush=True)
                return choose_move(turn, memory.own, rivals)

            await client.play(handle, choose, on_event=on_event)
    finally:
        print(f"{memory.summary()} moves={moves} knowing={knowing}", file=sys.stderr, flush=True)
        await memory.channel.close(None)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
