"""A deliberately slow, obviously-correct Pylos implementation used only to check the fast one.

Written straight from ../shared/rules/pylos.md without looking at the bit
tricks of ziggurat.rules.pylos: a board is a dict {(level, column, row): "L"/"D"}
with 0-based column and row, every rule is an explicit loop, and legal moves are
found by generating every candidate and keeping those that satisfy the rules.
It shares nothing with the engine but the Outcome/Termination types.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ziggurat.rules.core import Outcome, Termination

Place = tuple[int, int, int]
Board = dict[Place, str]

SIZES = {1: 4, 2: 3, 3: 2, 4: 1}
ALL_PLACES: list[Place] = [
    (level, column, row)
    for level in (1, 2, 3, 4)
    for row in range(SIZES[level])
    for column in range(SIZES[level])
]


def name(place: Place) -> str:
    level, column, row = place
    return f"{level}{'abcd'[column]}{row + 1}"


def place_of(text: str) -> Place:
    return (int(text[0]), "abcd".index(text[1]), int(text[2]) - 1)


def resting_on(place: Place) -> list[Place]:
    level, column, row = place
    if level == 1:
        return []
    return [(level - 1, column + dc, row + dr) for dc in (0, 1) for dr in (0, 1)]


def is_supported(board: Board, place: Place) -> bool:
    return all(p in board for p in resting_on(place))


def is_free(board: Board, place: Place) -> bool:
    return not any(place in resting_on(other) for other in board)


def reserve(board: Board, colour: str) -> int:
    return 15 - sum(1 for c in board.values() if c == colour)


def squares_containing(place: Place) -> list[list[Place]]:
    level = place[0]
    if level > 3:
        return []
    size = SIZES[level]
    out = []
    for c0 in range(size - 1):
        for r0 in range(size - 1):
            block = [(level, c0 + dc, r0 + dr) for dc in (0, 1) for dr in (0, 1)]
            if place in block:
                out.append(block)
    return out


def lines_containing(place: Place) -> list[list[Place]]:
    level, column, row = place
    if level > 2:
        return []
    size = SIZES[level]
    return [[(level, c, row) for c in range(size)], [(level, column, r) for r in range(size)]]


def completes(board: Board, place: Place, colour: str, variant: str) -> bool:
    if variant == "beginner":
        return False
    shapes = squares_containing(place)
    if variant == "advanced":
        shapes += lines_containing(place)
    return any(all(board.get(p) == colour for p in shape) for shape in shapes)


def recovery_order_key(place: Place) -> tuple[int, str]:
    return (-place[0], name(place))


def legal_moves(board: Board, colour: str, variant: str) -> list[str]:
    """Generate every candidate, keep what the rules allow, write it canonically."""
    bases: list[tuple[Place | None, Place]] = []
    empty = [p for p in ALL_PLACES if p not in board]
    if reserve(board, colour) > 0:
        bases += [(None, p) for p in empty if is_supported(board, p)]
    for source in ALL_PLACES:
        if board.get(source) != colour or not is_free(board, source):
            continue
        for target in empty:
            if target[0] <= source[0]:
                continue
            without = {p: c for p, c in board.items() if p != source}
            if is_supported(without, target):
                bases.append((source, target))
    moves: set[str] = set()
    for origin, target in bases:
        after = dict(board)
        if origin is not None:
            del after[origin]
        after[target] = colour
        head = (name(origin) + "-" if origin else "") + name(target)
        if not completes(after, target, colour, variant):
            moves.add(head)
            continue
        for first in [p for p, c in after.items() if c == colour and is_free(after, p)]:
            moves.add(head + "x" + name(first))
            rest = {p: c for p, c in after.items() if p != first}
            for second in [p for p, c in rest.items() if c == colour and is_free(rest, p)]:
                pair = sorted([first, second], key=recovery_order_key)
                moves.add(head + "x" + name(pair[0]) + "x" + name(pair[1]))
    return sorted(moves)


def play(board: Board, colour: str, move: str) -> Board:
    """Apply a move given in (canonical) notation; no checks, the caller took it from legal_moves."""
    after = dict(board)
    parts = move.split("x")
    head, recoveries = parts[0], parts[1:]
    if "-" in head:
        source, target = head.split("-")
        del after[place_of(source)]
    else:
        target = head
    after[place_of(target)] = colour
    for r in recoveries:
        del after[place_of(r)]
    return after


def format_board(board: Board) -> str:
    levels = []
    for level in (1, 2, 3, 4):
        levels.append("".join(board.get(p, ".") for p in ALL_PLACES if p[0] == level))
    return "/".join(levels)


def parse_board(text: str) -> tuple[Board, str]:
    levels_text, side = text.split(" ")
    board: Board = {}
    chars = levels_text.replace("/", "")
    for place, char in zip(ALL_PLACES, chars, strict=True):
        if char != ".":
            board[place] = char
    return board, side


def other(colour: str) -> str:
    return "D" if colour == "L" else "L"


@dataclass
class Game:
    """A game with history, following the page's endings in the engine's documented order."""

    board: Board
    colour: str
    variant: str = "standard"
    max_moves: int | None = None
    ply: int = 0
    history: list[str] = field(default_factory=list)
    outcome: Outcome | None = None

    def __post_init__(self) -> None:
        self.history.append(self.key())

    def key(self) -> str:
        return format_board(self.board) + " " + self.colour

    def moves(self) -> list[str]:
        return [] if self.outcome else legal_moves(self.board, self.colour, self.variant)

    def play(self, move: str) -> None:
        assert move in self.moves(), move
        mover = self.colour
        self.board = play(self.board, mover, move)
        self.colour = other(mover)
        self.ply += 1
        self.history.append(self.key())
        seat = {"L": 0, "D": 1}
        if move.split("x", maxsplit=1)[0].endswith("4a1"):
            self.outcome = Outcome.win_for(2, seat[mover], Termination.PYRAMID_COMPLETE)
        elif not legal_moves(self.board, self.colour, self.variant):
            self.outcome = Outcome.loss_for(2, seat[self.colour], Termination.NO_LEGAL_MOVE)
        elif self.history.count(self.key()) >= 3:
            self.outcome = Outcome.draw(2, Termination.REPETITION)
        elif self.max_moves is not None and self.ply >= self.max_moves:
            self.outcome = Outcome.draw(2, Termination.MOVE_LIMIT)


def perft(board: Board, colour: str, depth: int, variant: str, moves_left: int | None = None) -> int:
    """Count move sequences; repetition is ignored, the top ball, being stuck and the move limit end games."""
    if depth == 0:
        return 1
    total = 0
    for move in legal_moves(board, colour, variant):
        if depth == 1:
            total += 1
            continue
        if move.split("x", maxsplit=1)[0].endswith("4a1") or moves_left == 1:
            continue
        total += perft(
            play(board, colour, move),
            other(colour),
            depth - 1,
            variant,
            None if moves_left is None else moves_left - 1,
        )
    return total


def read_perft_file(path: str) -> list[dict[str, object]]:
    """Parse the perft data file: blocks of id/position/variant/perft lines, '#' comments."""
    blocks: list[dict[str, object]] = []
    current: dict[str, object] | None = None
    with open(path, encoding="utf-8") as handle:
        for raw in handle:
            line = raw.strip()
            if not line or line.startswith("#"):
                current = None if not line else current
                continue
            keyword, _, rest = line.partition(" ")
            if keyword == "id":
                current = {"id": rest, "variant": "standard", "perft": []}
                blocks.append(current)
            elif current is None:
                raise ValueError(f"line outside a block: {line!r}")
            elif keyword in ("position", "variant"):
                current[keyword] = rest
            elif keyword == "perft":
                depth, count = rest.split()
                perfts = current["perft"]
                assert isinstance(perfts, list)
                perfts.append((int(depth), int(count)))
            else:
                raise ValueError(f"unknown keyword {keyword!r}")
    return blocks


def regenerate(path: str) -> None:
    """Recompute every count of the data file with this reference implementation and rewrite it."""
    with open(path, encoding="utf-8") as handle:
        header = [line for line in handle.read().splitlines() if line.startswith("#")]
    out = ["\n".join(header)] if header else []
    for block in read_perft_file(path):
        board, side = parse_board(str(block["position"]))
        lines = [f"id {block['id']}", f"position {block['position']}", f"variant {block['variant']}"]
        depths = block["perft"]
        assert isinstance(depths, list)
        for depth, _ in depths:
            lines.append(f"perft {depth} {perft(board, side, depth, str(block['variant']))}")
        out.append("\n".join(lines))
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n\n".join(out) + "\n")


if __name__ == "__main__":
    regenerate("tests/data/pylos_perft.txt")
