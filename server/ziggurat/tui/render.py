"""Drawing the games as styled text: pure functions of the state, no widgets.

Why pure: the same drawings serve ``play`` and ``watch``, and tests can read them
as plain strings. Every drawing uses the rules' own notation (``1a1``, stack
numbers, colour letters) so what the player reads is what the player types.
"""

from __future__ import annotations

import re

from rich.text import Text

from ziggurat.tui.i18n import t
from ziggurat.tui.kabaleo_board import colour_letter, own_score, seat_scores
from ziggurat.tui.model import MatchState
from ziggurat.v1 import game_pb2, match_pb2

# How a game ended (catalogue keys).
TERMINATIONS = {
    game_pb2.TERMINATION_NORMAL: "term.normal",
    game_pb2.TERMINATION_PYRAMID_COMPLETE: "term.pyramid",
    game_pb2.TERMINATION_NO_LEGAL_MOVE: "term.noMove",
    game_pb2.TERMINATION_REPETITION: "term.repetition",
    game_pb2.TERMINATION_MOVE_LIMIT: "term.moveLimit",
    game_pb2.TERMINATION_RESIGNATION: "term.resignation",
    game_pb2.TERMINATION_TIMEOUT: "term.timeout",
    game_pb2.TERMINATION_ABORTED: "term.aborted",
    game_pb2.TERMINATION_ILLEGAL_MOVE: "term.illegal",
    game_pb2.TERMINATION_ABANDONED: "term.abandoned",
}


# A seat's state in words (catalogue keys). Presence (whether the seat's program is connected) only while the
# match runs; what put a seat out of the game stays after the end, since it explains the result.
PRESENCE = {
    match_pb2.SEAT_STATE_JOINED: "state.joined",
    match_pb2.SEAT_STATE_CONNECTED: "state.online",
    match_pb2.SEAT_STATE_DISCONNECTED: "state.away",
    match_pb2.SEAT_STATE_SUBSTITUTED: "state.substituted",
}
OUT = {
    match_pb2.SEAT_STATE_TIMED_OUT: "state.timedOut",
    match_pb2.SEAT_STATE_RESIGNED: "state.resigned",
    match_pb2.SEAT_STATE_ILLEGAL_MOVES: "state.illegal",
    match_pb2.SEAT_STATE_ABANDONED: "state.abandoned",
}


def seat_state_words(state: match_pb2.SeatState.ValueType, *, finished: bool) -> str:
    """``online``, ``away``, ``timed out``…; "" for presence once the match is over."""
    if state in OUT:
        return t(OUT[state])
    return "" if finished or state not in PRESENCE else t(PRESENCE[state])


def format_ms(ms: int) -> str:
    """A clock reading: ``m:ss.t`` (tenths help in the last seconds)."""
    minutes, rest = divmod(max(0, ms), 60_000)
    return f"{minutes}:{rest // 1000:02d}.{rest % 1000 // 100}"


def kabaleo_hands(state: MatchState) -> Text:
    """Every seat's hand (public), then the viewer's own secret colour and its live score only;
    at the end, every seat's revealed colour and the score that ranked it instead."""
    view = state.view
    out = Text()
    if view is None:
        return out
    if state.ended is not None:
        return final_scores(state)
    for seat, hand in enumerate(view.kabaleo.hands, start=1):
        out.append(f"{seat_label(state, seat)}: ", style="bold" if seat == state.my_seat else "")
        for letter in hand or "-":
            out.append_text(colour_letter(letter) if letter != "-" else Text("-"))
        out.append("\n")
    out.append_text(own_score(view, state.my_seat))
    out.rstrip()
    return out


def final_scores(state: MatchState) -> Text:
    """The end of a Kabaleo game: each seat's revealed colour and its score key, by rank."""
    assert state.ended is not None
    view, outcome = state.ended.view, state.ended.outcome
    keys = {seat: (letter, key) for seat, letter, key in seat_scores(view)}
    forfeited = set(view.kabaleo.forfeited_seats)
    out = Text(t("render.scores") + "\n", style="bold")
    for seat, rank in sorted(enumerate(outcome.ranks, start=1), key=lambda pair: (pair[1], pair[0])):
        letter, (shown, covered, tallest) = keys.get(seat, ("?", (0, 0, 0)))
        out.append(f"{rank}. {seat_label(state, seat)[:20]:<20} ")
        out.append_text(colour_letter(letter))
        out.append(f" {shown:>2} · {covered} · {tallest}")
        out.append(f" {t('render.out')}\n" if seat in forfeited else "\n")
    if forfeited:
        out.append(t("render.outNote") + "\n", style="dim")
    out.append(t("render.unheld"))
    for letter in view.kabaleo.unheld:
        out.append_text(colour_letter(letter))
        out.append(" ")
    out.rstrip()
    return out


def move_order(moves: tuple[str, ...]) -> list[str]:
    """Moves in reading order: numbers by value (``B2`` before ``B10``), then text."""
    return sorted(moves, key=lambda m: [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", m)])


def seat_label(state: MatchState, seat: int) -> str:
    """``Seat 2 alice`` (``(you)`` for the viewer's own seat)."""
    name = state.seats[seat].player_name if seat in state.seats else ""
    you = f" {t('render.you')}" if seat == state.my_seat else ""
    side = ""
    if state.game == "pylos":
        side = " L" if seat == 1 else " D"
    return f"{t('render.seat', seat=seat)}{side} {name}{you}".rstrip()


def status(state: MatchState, now_ms: int | None = None) -> Text:
    """Whose turn, the clocks, the last move."""
    out = Text()
    view = state.view
    if state.ended is not None:
        out.append(t("render.gameOver"), style="bold")
    elif view is None or not (state.turn_seat or view.to_move):
        out.append(t("render.waiting"), style="italic")
    else:
        seat = state.turn_seat or view.to_move
        who = (
            t("render.yourTurn") if seat == state.my_seat else t("render.toMove", who=seat_label(state, seat))
        )
        out.append(who, style="bold green" if seat == state.my_seat else "bold")
        out.append(f" · {t('render.ply', ply=view.ply)}")
    out.append_text(clocks(state, now_ms))
    if state.last_move is not None:
        move = state.last_move
        out.append("\n" + t("render.lastMove", who=seat_label(state, move.seat)))
        out.append(move.move, style="bold")
        if state.history and state.history[-1].cancelled:
            out.append(f" ✕ {t('render.cancelled')}", style="red")
        if move.substituted:
            out.append(f" {t('render.byServer')}", style="italic")
    return out


def clocks(state: MatchState, now_ms: int | None = None) -> Text:
    """One line per seat: clock (the running one counted down locally), then the seat's state
    in words (none for the viewer's own seat while it plays: it is here, watching this)."""
    out = Text()
    timed = state.time_control.per_move_ms or state.time_control.base_ms
    finished = state.ended is not None
    for number in sorted(state.seats):
        seat = state.seats[number]
        out.append(f"\n{seat_label(state, number)}")
        if not timed:
            pass
        elif number == state.clock.seat and state.clock.left_ms:
            out.append(f"  ⏱ {format_ms(state.clock.remaining_ms(now_ms))}", style="bold yellow")
        elif seat.clock_ms:
            out.append(f"  {format_ms(seat.clock_ms)}", style="dim")
        words = seat_state_words(seat.state, finished=finished)
        if words and not (number == state.my_seat and seat.state in PRESENCE):
            out.append(f" · {words}", style="" if seat.state == match_pb2.SEAT_STATE_CONNECTED else "italic")
    return out


def result(state: MatchState) -> Text:
    """The end: ranks by seat and the seed check (a Kabaleo game's scores and objectives are
    drawn beside the board, by :func:`final_scores`)."""
    ended = state.ended
    out = Text()
    if ended is None:
        return out
    reason = t(TERMINATIONS.get(ended.outcome.termination, "term.unknown"))
    out.append(t("render.result", reason=reason) + "\n", style="bold")
    ranked = sorted(enumerate(ended.outcome.ranks, start=1), key=lambda pair: (pair[1], pair[0]))
    for seat, rank in ranked:
        mark = f"  {t('render.winner')}" if seat in ended.outcome.winners else ""
        out.append(f"  {rank}. {seat_label(state, seat)}{mark}\n")
    verified = state.seed_verified()
    out.append(
        t("render.seedOk") if verified else t("render.seedBad"),
        style="bold green" if verified else "bold red",
    )
    return out


def history(state: MatchState, limit: int = 12) -> Text:
    """The moves played so far, newest last (the last ``limit``), cancellations marked."""
    text = Text()
    start = max(0, len(state.history) - limit)
    for number, played in enumerate(state.history[start:], start + 1):
        seat = state.seats.get(played.seat)
        who = seat.player_name if seat is not None and seat.player_name else t("game.seat", seat=played.seat)
        if state.game == "pylos":
            who = t("render.light" if played.seat == 1 else "render.dark") + f" ({who})"
        text.append(f"{number:>3}. {who}: ")
        text.append(played.move, style="bold")
        if played.cancelled:
            text.append(f" ✕ {t('render.bothLeave', colour=played.move[:1])}", style="red")
        if played.substituted:
            text.append(f" {t('render.historyByServer')}", style="italic")
        text.append("\n")
    return text
