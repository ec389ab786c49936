"""The history pane's model: a Kabaleo move that cancels is marked, one that stacks is not."""

from __future__ import annotations

from ziggurat.tui import render
from ziggurat.tui.model import MatchState
from ziggurat.v1 import game_pb2, match_pb2


def _view(*stacks: str) -> game_pb2.GameView:
    return game_pb2.GameView(game=game_pb2.GAME_KABALEO, kabaleo=game_pb2.KabaleoView(stacks=list(stacks)))


def _played(seq: int, seat: int, move: str, view: game_pb2.GameView) -> match_pb2.Event:
    return match_pb2.Event(seq=seq, move_played=match_pb2.MovePlayedEvent(seat=seat, move=move, view=view))


def test_cancellations_are_marked_in_the_history() -> None:
    state = MatchState("m", my_seat=1)
    state.apply(match_pb2.Event(seq=1, match_started=match_pb2.MatchStartedEvent(view=_view("R", "G"))))
    state.apply(_played(2, 1, "B1", _view("RB", "G")))  # stacks: not cancelled
    state.apply(_played(3, 2, "B1", _view("R", "G")))  # same colour on top: both leave
    assert "Last move: Seat 2 played B1 ✕ cancelled" in render.status(state).plain
    state.apply(_played(4, 1, "R2", _view("R", "GR")))
    assert "cancelled" not in render.status(state).plain
    assert [(m.seat, m.move, m.cancelled) for m in state.history] == [
        (1, "B1", False),
        (2, "B1", True),
        (1, "R2", False),
    ]
    state.apply(_played(3, 2, "B1", _view("R", "G")))  # a replayed event is ignored
    assert len(state.history) == 3
