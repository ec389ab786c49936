"""Drawing the games as styled text: pure functions of the state, no widgets.

Why pure: the same drawings serve ``play`` and ``watch``, and tests can read them
as plain strings. Every drawing uses the rules' own notation (``1a1``, stack
numbers, colour letters) so what the player reads is what the player types.
"""

from __future__ import annotations

import re

from rich.text import Text

from ziggurat.tui.model import MatchState
from ziggurat.v1 import game_pb2, match_pb2

# Background colours for Kabaleo letters (text drawn black on them).
COLOURS = {
    "R": "red3",
    "Y": "yellow1",
    "G": "green3",
    "B": "dodger_blue2",
    "O": "dark_orange",
    "P": "hot_pink",
}
COLOUR_NAMES = {"R": "red", "Y": "yellow", "G": "green", "B": "blue", "O": "orange", "P": "pink"}
LEVEL_WIDTH = 14  # columns per drawn level: "Level 1" and a 4x4 grid with labels, plus a gap
BALL_STYLE = {"L": "bold black on grey93", "D": "bold white on dark_red"}
TERMINATIONS = {
    game_pb2.TERMINATION_NORMAL: "every piece placed",
    game_pb2.TERMINATION_PYRAMID_COMPLETE: "pyramid complete",
    game_pb2.TERMINATION_NO_LEGAL_MOVE: "no legal move",
    game_pb2.TERMINATION_REPETITION: "third repetition",
    game_pb2.TERMINATION_MOVE_LIMIT: "move limit",
    game_pb2.TERMINATION_RESIGNATION: "resignation",
    game_pb2.TERMINATION_TIMEOUT: "timeout",
    game_pb2.TERMINATION_ABORTED: "aborted",
}


def colour_letter(letter: str) -> Text:
    """One Kabaleo colour letter on its colour."""
    style = f"bold black on {COLOURS[letter]}" if letter in COLOURS else "bold"
    return Text(letter, style=style)


def format_ms(ms: int) -> str:
    """A clock reading: ``m:ss.t`` (tenths help in the last seconds)."""
    minutes, rest = divmod(max(0, ms), 60_000)
    return f"{minutes}:{rest // 1000:02d}.{rest % 1000 // 100}"


def pylos_levels(view: game_pb2.GameView) -> Text:
    """The four levels side by side, each a grid with column letters and row numbers.

    ``L``/``D`` are balls; ``·`` an empty place a ball may go (supported); blank an
    empty place not yet supported.
    """
    levels = list(view.pylos.levels) or ["." * 16, "." * 9, "." * 4, "."]
    blocks = [_pylos_level(number, levels, 5 - number) for number in range(1, 5)]
    height = max(len(block) for block in blocks)
    out = Text()
    for row in range(height):
        for block in blocks:
            line = block[row] if row < len(block) else Text("")
            out.append_text(line)
            out.append(" " * (LEVEL_WIDTH - line.cell_len))
        out.append("\n")
    out.rstrip()
    return out


def _pylos_level(number: int, levels: list[str], size: int) -> list[Text]:
    lines = [Text(f"Level {number}", style="bold"), Text("   " + " ".join("abcd"[:size]), style="dim")]
    cells = levels[number - 1]
    for r in range(size):
        line = Text(f"{r + 1:>2} ", style="dim")
        for c in range(size):
            if c:
                line.append(" ")
            ball = cells[r * size + c]
            if ball in BALL_STYLE:
                line.append(ball, style=BALL_STYLE[ball])
            else:
                line.append("·" if _supported(levels, number, c, r) else " ", style="dim")
        lines.append(line)
    return lines


def _supported(levels: list[str], number: int, c: int, r: int) -> bool:
    if number == 1:
        return True
    below, size = levels[number - 2], 6 - number
    return all(below[(r + dr) * size + c + dc] != "." for dr in (0, 1) for dc in (0, 1))


def kabaleo_table(view: game_pb2.GameView, per_row: int = 8) -> Text:
    """The stacks as ``number colour height``: the top colour drawn in its colour."""
    out = Text("stack · top colour · height (underlined: last move)\n", style="dim")
    last = view.kabaleo.last_stack
    for index, stack in enumerate(view.kabaleo.stacks, start=1):
        top = stack[-1] if stack else "?"
        out.append(f"{index:>2}", style="bold underline" if index == last else "dim")
        out.append(" ")
        out.append_text(colour_letter(top))
        out.append(f"{len(stack)}", style="bold" if len(stack) > 1 else "dim")
        out.append("\n" if index % per_row == 0 else "  ")
    out.rstrip()
    return out


def kabaleo_hands(state: MatchState) -> Text:
    """Every seat's hand (public), with the viewer's own secret colour and only that."""
    view = state.view
    out = Text()
    if view is None:
        return out
    objectives = list(view.kabaleo.objectives)
    for seat, hand in enumerate(view.kabaleo.hands, start=1):
        out.append(f"{seat_label(state, seat)}: ", style="bold" if seat == state.my_seat else "")
        for letter in hand or "-":
            out.append_text(colour_letter(letter) if letter != "-" else Text("-"))
        if state.ended is not None and seat <= len(objectives):
            out.append("  objective ")
            out.append_text(colour_letter(objectives[seat - 1]))
        out.append("\n")
    if state.my_seat and state.ended is None and state.my_seat <= len(objectives):
        mine = objectives[state.my_seat - 1]
        out.append("Your secret colour: ", style="bold")
        out.append_text(colour_letter(mine))
        out.append(f" ({COLOUR_NAMES.get(mine, mine)})")
    out.rstrip()
    return out


def move_order(moves: tuple[str, ...]) -> list[str]:
    """Moves in reading order: numbers by value (``B2`` before ``B10``), then text."""
    return sorted(moves, key=lambda m: [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", m)])


def seat_label(state: MatchState, seat: int) -> str:
    """``Seat 2 alice`` (``(you)`` for the viewer's own seat)."""
    name = state.seats[seat].player_name if seat in state.seats else ""
    you = " (you)" if seat == state.my_seat else ""
    side = ""
    if state.game == "pylos":
        side = " L" if seat == 1 else " D"
    return f"Seat {seat}{side} {name}{you}".rstrip()


def status(state: MatchState, now: float | None = None) -> Text:
    """Whose turn, the clocks, the last move."""
    out = Text()
    view = state.view
    if state.ended is not None:
        out.append("Game over", style="bold")
    elif view is None or not (state.turn_seat or view.to_move):
        out.append("Waiting for players…", style="italic")
    else:
        seat = state.turn_seat or view.to_move
        who = "Your turn" if seat == state.my_seat else f"{seat_label(state, seat)} to move"
        out.append(who, style="bold green" if seat == state.my_seat else "bold")
        out.append(f" · ply {view.ply}")
    if state.game == "pylos" and view is not None:
        out.append(f"\nReserves: L {view.pylos.light_reserve}  D {view.pylos.dark_reserve}")
    out.append_text(clocks(state, now))
    if state.last_move is not None:
        move = state.last_move
        out.append(f"\nLast move: {seat_label(state, move.seat)} played ")
        out.append(move.move, style="bold")
        if move.substituted:
            out.append(" (played by the server)", style="italic")
    return out


def clocks(state: MatchState, now: float | None = None) -> Text:
    """One line per seat: state and clock (the running one counted down locally)."""
    out = Text()
    timed = state.time_control.per_move_ms or state.time_control.base_ms
    for number in sorted(state.seats):
        seat = state.seats[number]
        out.append(f"\n{seat_label(state, number)}")
        if seat.state not in (match_pb2.SEAT_STATE_JOINED, match_pb2.SEAT_STATE_CONNECTED):
            out.append(f" [{match_pb2.SeatState.Name(seat.state).removeprefix('SEAT_STATE_').lower()}]")
        if not timed:
            continue
        if number == state.clock.seat and state.clock.left_ms:
            out.append(f"  ⏱ {format_ms(state.clock.remaining_ms(now))}", style="bold yellow")
        elif seat.clock_ms:
            out.append(f"  {format_ms(seat.clock_ms)}", style="dim")
    return out


def result(state: MatchState) -> Text:
    """The end: ranks, the reveal of every objective and the seed check."""
    ended = state.ended
    out = Text()
    if ended is None:
        return out
    reason = TERMINATIONS.get(ended.outcome.termination, "ended")
    out.append(f"Result ({reason})\n", style="bold")
    for seat, rank in enumerate(ended.outcome.ranks, start=1):
        mark = "  winner" if seat in ended.outcome.winners else ""
        out.append(f"  {rank}. {seat_label(state, seat)}{mark}\n")
    view = ended.view
    if view.HasField("kabaleo"):
        out.append("Objectives: ")
        for seat, letter in enumerate(view.kabaleo.objectives, start=1):
            out.append(f"seat {seat} ")
            out.append_text(colour_letter(letter))
            out.append("  ")
        out.append(" unheld ")
        for letter in view.kabaleo.unheld:
            out.append_text(colour_letter(letter))
        out.append("\n")
    verified = state.seed_verified()
    out.append(
        "seed verified" if verified else "SEED MISMATCH: the set-up does not match the commitment",
        style="bold green" if verified else "bold red",
    )
    return out


def history(state: MatchState, limit: int = 12) -> Text:
    """The moves played so far, newest last (the last ``limit``), cancellations marked."""
    text = Text()
    start = max(0, len(state.history) - limit)
    for number, played in enumerate(state.history[start:], start + 1):
        seat = state.seats.get(played.seat)
        who = seat.player_name if seat is not None and seat.player_name else f"seat {played.seat}"
        if state.game == "pylos":
            who = ("Light" if played.seat == 1 else "Dark") + f" ({who})"
        text.append(f"{number:>3}. {who}: ")
        text.append(played.move, style="bold")
        if played.cancelled:
            text.append(" ✕ cancelled", style="red")
        if played.substituted:
            text.append(" (by the server)", style="italic")
        text.append("\n")
    return text
