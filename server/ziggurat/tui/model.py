"""What the game screen knows about a match, folded from the event stream.

Why a separate, UI-free model: the screen must only ever show what the server
sent (a refused move changes nothing because nothing local is changed), and tests
can check the state without scraping the terminal. The clock ticks locally towards
the deadline of the last ``turn_started`` so it moves between events, as a chess clock does.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

from ziggurat.rules.core import InvalidConfigError
from ziggurat.rules.seeding import commitment
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.wire.codec import GAME_NAMES


@dataclass
class Clock:
    """The running clock of the seat to move, as a deadline on the server's clock.

    Why a deadline and not "time left when the event arrived": a spectator who arrives
    mid-turn receives the turn's event long after it happened; counting its time from the
    arrival showed the whole turn's time (28.9 s shown, 16 s left). The deadline is the
    event's server time plus the time the turn gave, so every viewer counts down to the
    same instant. The deadline is kept on this machine's clock: the event's time moved by
    how far this clock is from the server's (``MatchState.clock_offset_ms``, from
    WatchMatchResponse.server_time_ms), so a computer whose clock is off counts down right.
    It is never shown above the turn's own time.
    """

    seat: int = 0
    left_ms: int = 0  # the time the turn gave (0 = untimed)
    deadline_ms: int = 0  # this machine's time, ms since the Unix epoch, at which it runs out

    def remaining_ms(self, now_ms: int | None = None) -> int:
        """Time left now (never below zero, never above the turn's time)."""
        if not self.left_ms:
            return 0
        now = _now_ms() if now_ms is None else now_ms
        return max(0, min(self.left_ms, self.deadline_ms - now))


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class PlayedMove:
    """One entry of the history pane: who played what, and what it did."""

    seat: int
    move: str
    substituted: bool = False  # played by the server for the seat
    cancelled: bool = False  # Kabaleo: the piece cancelled with the one under it


@dataclass
class MatchState:
    """Everything the screen draws, updated only by :meth:`apply` and :meth:`load`."""

    match_id: str
    my_seat: int = 0  # 0 = spectator
    config: game_pb2.GameConfig = field(default_factory=game_pb2.GameConfig)
    time_control: match_pb2.TimeControl = field(default_factory=match_pb2.TimeControl)
    seats: dict[int, match_pb2.Seat] = field(default_factory=dict)
    view: game_pb2.GameView | None = None
    legal_moves: tuple[str, ...] = ()
    turn_seat: int = 0
    turn_ply: int = 0
    clock: Clock = field(default_factory=Clock)
    last_move: match_pb2.MovePlayedEvent | None = None
    history: list[PlayedMove] = field(default_factory=list)
    ended: match_pb2.MatchEndedEvent | None = None
    seed_commitment: str = ""
    last_seq: int = 0
    clock_offset_ms: int = 0  # this clock minus the server's (ZigguratClient.server_clock_offset_ms)

    def load(self, match: match_pb2.Match) -> None:
        """Take the static facts of a match (config, clocks, commitment) from GetMatch."""
        self.config.CopyFrom(match.config)
        self.time_control.CopyFrom(match.time_control)
        self.seed_commitment = match.seed_commitment
        for seat in match.seats:
            self.seats[seat.seat] = seat
        if match.HasField("view") and match.view.seats:
            self.view = match.view

    @property
    def game(self) -> str:
        """The game's registry name (``pylos``, ``phantom-ttt``); empty before the config is known
        or for a game this build does not know."""
        return GAME_NAMES.get(self.config.game, "")

    @property
    def my_turn(self) -> bool:
        """True when this seat must move now (and the server gave its legal moves)."""
        return bool(self.my_seat) and self.turn_seat == self.my_seat and self.ended is None

    def apply(self, event: match_pb2.Event) -> None:
        """Fold one event in; an event already seen (a replay after resume) is ignored."""
        if event.seq <= self.last_seq:
            return
        self.last_seq = event.seq
        kind = event.WhichOneof("kind")
        if kind == "match_created":
            self.config.CopyFrom(event.match_created.config)
            self.time_control.CopyFrom(event.match_created.time_control)
            self.seed_commitment = event.match_created.seed_commitment
        elif kind == "seat_changed":
            self._take_seats([event.seat_changed.seat])
        elif kind == "match_started":
            self._take_seats(event.match_started.seats)
            self.view = event.match_started.view
        elif kind == "turn_started":
            turn = event.turn_started
            self._take_seats(turn.seats)
            self.turn_seat, self.turn_ply = turn.seat, turn.ply
            self.legal_moves = tuple(turn.legal_moves) if turn.seat == self.my_seat else ()
            # On this machine's clock; an event without a server time counts from now.
            started = event.time_ms + self.clock_offset_ms if event.time_ms else _now_ms()
            self.clock = Clock(turn.seat, turn.time_left_ms, started + turn.time_left_ms)
        elif kind == "move_played":
            played = event.move_played
            cancelled = _cancelled(self.view, played.view, played.move)
            self.history.append(PlayedMove(played.seat, played.move, played.substituted, cancelled))
            self.last_move = played
            self.view = played.view
            self.legal_moves, self.turn_seat, self.clock = (), 0, Clock()
        elif kind == "match_ended":
            self.ended = event.match_ended
            self.view = event.match_ended.view
            self.legal_moves, self.turn_seat, self.clock = (), 0, Clock()

    def _take_seats(self, seats: Iterable[match_pb2.Seat]) -> None:
        """Merge seat facts; an unset state or name (turn events carry clocks) keeps the known one."""
        for seat in seats:
            merged = match_pb2.Seat()
            if seat.seat in self.seats:
                merged.CopyFrom(self.seats[seat.seat])
            merged.seat, merged.clock_ms = seat.seat, seat.clock_ms
            if seat.state != match_pb2.SEAT_STATE_UNSPECIFIED:
                merged.state = seat.state
            if seat.player_name:
                merged.player_name = seat.player_name
            self.seats[seat.seat] = merged

    def seed_verified(self) -> bool | None:
        """Whether the revealed seed matches the commitment published at creation.

        None until the match has ended.
        """
        if self.ended is None:
            return None
        try:
            return commitment(bytes.fromhex(self.ended.revealed_seed)) == self.seed_commitment
        except (ValueError, InvalidConfigError):
            return False


def _cancelled(before: game_pb2.GameView | None, after: game_pb2.GameView, move: str) -> bool:
    """A Kabaleo move cancelled when its stack came out lower than it was."""
    if before is None or not before.HasField("kabaleo") or not after.HasField("kabaleo"):
        return False
    try:
        index = int(move[1:]) - 1
        return len(after.kabaleo.stacks[index]) < len(before.kabaleo.stacks[index])
    except (ValueError, IndexError):
        return False
