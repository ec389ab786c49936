"""Kabaleo position text: ``STACKS HANDS TO_MOVE LAST OBJECTIVES`` (rules page, "Notation").

Writing is split from the state on purpose: :func:`format_fields` takes only
the fields a viewer may see (``None`` objectives print as ``?``), so a view's
position string is built from public values and never from a blanked state.

Reading (:func:`parse_position`) accepts full positions only (every objective
visible) and checks the necessary conditions listed in
:func:`parse_position`'s docstring. Forfeits are match events, not part of the
notation: a parsed position never has forfeited seats.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence

from ziggurat.rules.core import InvalidPositionError
from ziggurat.rules.kabaleo_model import (
    BASES_PER_COLOUR,
    COLOUR_INDEX,
    COLOURS,
    PIECES_PER_COLOUR,
    Deal,
    Hand,
    KabaleoConfig,
    KabaleoState,
    canonical_colours,
)

_NUMBER = re.compile(r"[1-9][0-9]*")
_LETTERS = re.compile(f"[{COLOURS}]+")


def hand_text(hand: Hand) -> str:
    """Write a hand as letters in RYGBOP order, ``-`` when empty (the notation's HANDS entry)."""
    text = "".join(colour * count for colour, count in zip(COLOURS, hand, strict=True))
    return text or "-"


def format_fields(
    stacks: Sequence[str],
    hands: Sequence[Hand],
    *,
    to_move: int | None,
    last: int | None,
    objectives: Sequence[str | None],
    unheld: Sequence[str | None],
) -> str:
    """Write the five-field position text from explicit, already-filtered values (None prints ``?``)."""
    return " ".join(
        (
            "/".join(stacks),
            "/".join(hand_text(hand) for hand in hands),
            "-" if to_move is None else str(to_move + 1),
            "-" if last is None else str(last + 1),
            "".join(o or "?" for o in objectives) + "+" + "".join(u or "?" for u in unheld),
        )
    )


def format_position(state: KabaleoState) -> str:
    """Write the full (referee) position, every objective visible; round-trips via :func:`parse_position`."""
    return format_fields(
        state.stacks,
        state.hands,
        to_move=state.to_move,
        last=state.last,
        objectives=state.objectives,
        unheld=state.unheld,
    )


def parse_position(text: str, config: KabaleoConfig) -> KabaleoState:
    """Read a full position for ``config``; raise InvalidPositionError if it cannot be a Kabaleo position.

    Checked (all necessary conditions; full reachability is not searched):

    * exactly five fields separated by single spaces;
    * STACKS: ``config.stack_count`` stacks of colour letters; the bases are 4
      of each of ``players + 2`` colours (the configured ones, if fixed);
      every letter is a colour in play; no two adjacent letters are equal
      (a piece never sits on its own colour: it would have cancelled, and a
      bare base refuses its own colour);
    * HANDS: one per seat, letters of colours in play in RYGBOP order or ``-``;
      with the ``equal`` deal no seat holds more of a colour than it was dealt;
    * pieces: per colour, pieces on stacks + in hands is at most 6 and has the
      parity of 6 (cancellations remove pieces two at a time);
    * turns: ``placed = all pieces - pieces in hands``; seats move in turn, so
      seat i has placed ``placed // n + (i < placed % n)`` pieces and its hand
      must hold exactly the rest of its share;
    * TO_MOVE: ``placed % n + 1``, or ``-`` exactly when every piece is placed;
    * LAST: ``-`` exactly when nothing is placed yet, else a stack number;
    * OBJECTIVES: one distinct colour in play per seat, ``+``, the other two
      colours in RYGBOP order; no ``?``.
    """
    fields = text.split(" ")
    if len(fields) != 5:
        raise InvalidPositionError(f"a position has 5 space-separated fields, got {len(fields)}")
    stacks = _parse_stacks(fields[0], config)
    colours = canonical_colours({stack[0] for stack in stacks})
    hands = _parse_hands(fields[1], config, colours)
    _check_piece_counts(stacks, hands, colours)
    placed = config.total_plies - sum(sum(hand) for hand in hands)
    _check_hand_sizes(hands, config, placed)
    to_move = _parse_to_move(fields[2], config, placed)
    last = _parse_last(fields[3], len(stacks), placed)
    objectives, unheld = _parse_objectives(fields[4], config.players, colours)
    return KabaleoState(
        config=config,
        stacks=stacks,
        hands=hands,
        to_move=to_move,
        last=last,
        objectives=objectives,
        unheld=unheld,
        ply=placed,
    )


def _parse_stacks(field: str, config: KabaleoConfig) -> tuple[str, ...]:
    """STACKS: count, letters, base colours, colours in play and no equal neighbours."""
    stacks = tuple(field.split("/"))
    if len(stacks) != config.stack_count:
        raise InvalidPositionError(
            f"{config.players} players play on {config.stack_count} stacks, got {len(stacks)}"
        )
    for number, stack in enumerate(stacks, start=1):
        if not _LETTERS.fullmatch(stack):
            raise InvalidPositionError(f"stack {number} must be colour letters of {COLOURS}, got {stack!r}")
        if any(a == b for a, b in itertools.pairwise(stack)):
            raise InvalidPositionError(f"stack {number} has a piece on its own colour: {stack!r}")
    bases = Counter(stack[0] for stack in stacks)
    if len(bases) != config.colour_count or any(n != BASES_PER_COLOUR for n in bases.values()):
        raise InvalidPositionError(
            f"the bases must be {BASES_PER_COLOUR} of each of {config.colour_count} colours, "
            f"got {''.join(sorted(bases.elements(), key=COLOUR_INDEX.__getitem__))}"
        )
    colours = canonical_colours(bases)
    if config.colours is not None and colours != config.colours:
        raise InvalidPositionError(
            f"the configuration fixes colours {config.colours}, the bases are {colours}"
        )
    stray = set("".join(stacks)) - set(colours)
    if stray:
        raise InvalidPositionError(f"colour {canonical_colours(stray)} is not in play (bases are {colours})")
    return stacks


def _parse_hands(field: str, config: KabaleoConfig, colours: str) -> tuple[Hand, ...]:
    """HANDS: one canonical hand per seat, colours in play only, ``equal`` shares respected."""
    texts = field.split("/")
    if len(texts) != config.players:
        raise InvalidPositionError(f"HANDS needs {config.players} hands, got {len(texts)}")
    hands: list[Hand] = []
    for seat, text in enumerate(texts, start=1):
        if text != "-" and not _LETTERS.fullmatch(text):
            raise InvalidPositionError(f"hand of seat {seat} must be colour letters or '-', got {text!r}")
        letters = "" if text == "-" else text
        counts = [letters.count(colour) for colour in COLOURS]
        hand: Hand = (counts[0], counts[1], counts[2], counts[3], counts[4], counts[5])
        if hand_text(hand) != text:
            raise InvalidPositionError(f"hand of seat {seat} must list its letters in {COLOURS} order")
        if set(letters) - set(colours):
            raise InvalidPositionError(f"hand of seat {seat} holds a colour not in play")
        share = PIECES_PER_COLOUR // config.players
        if config.deal is Deal.EQUAL and max(hand) > share:
            raise InvalidPositionError(f"with the equal deal seat {seat} got only {share} pieces of a colour")
        hands.append(hand)
    return tuple(hands)


def _check_piece_counts(stacks: Sequence[str], hands: Sequence[Hand], colours: str) -> None:
    """Per colour: board pieces + hand pieces <= 6, and 6 minus that is even (pairs cancel)."""
    on_board = Counter("".join(stack[1:] for stack in stacks))
    for colour in colours:
        present = on_board[colour] + sum(hand[COLOUR_INDEX[colour]] for hand in hands)
        if present > PIECES_PER_COLOUR:
            raise InvalidPositionError(f"there are only {PIECES_PER_COLOUR} {colour} pieces, found {present}")
        if (PIECES_PER_COLOUR - present) % 2:
            raise InvalidPositionError(
                f"{present} {colour} pieces on the board and in hands: cancellations remove pairs"
            )


def _check_hand_sizes(hands: Sequence[Hand], config: KabaleoConfig, placed: int) -> None:
    """Seats move in turn from seat 1, so ``placed`` fixes every hand's size."""
    players = config.players
    for seat, hand in enumerate(hands):
        moved = placed // players + (1 if seat < placed % players else 0)
        if sum(hand) != config.pieces_per_player - moved:
            raise InvalidPositionError(
                f"after {placed} moves seat {seat + 1} should hold "
                f"{config.pieces_per_player - moved} pieces, not {sum(hand)}"
            )


def _parse_to_move(field: str, config: KabaleoConfig, placed: int) -> int | None:
    """TO_MOVE must agree with the number of pieces placed."""
    expected = None if placed == config.total_plies else placed % config.players
    shown = "-" if expected is None else str(expected + 1)
    if field != shown:
        raise InvalidPositionError(f"after {placed} moves TO_MOVE must be {shown}, got {field!r}")
    return expected


def _parse_last(field: str, stack_count: int, placed: int) -> int | None:
    """LAST: ``-`` before the first move, afterwards a stack number without leading zeros."""
    if placed == 0:
        if field != "-":
            raise InvalidPositionError(f"LAST must be '-' before the first move, got {field!r}")
        return None
    if not _NUMBER.fullmatch(field) or int(field) > stack_count:
        raise InvalidPositionError(f"LAST must be a stack number from 1 to {stack_count}, got {field!r}")
    return int(field) - 1


def _parse_objectives(field: str, players: int, colours: str) -> tuple[tuple[str, ...], tuple[str, str]]:
    """OBJECTIVES: distinct colours in play per seat, then the other two in RYGBOP order."""
    held, plus, unheld = field.partition("+")
    if not plus or len(held) != players or len(unheld) != 2:
        raise InvalidPositionError(f"OBJECTIVES must be {players} letters, '+', 2 letters; got {field!r}")
    if "?" in field:
        raise InvalidPositionError("a full position shows every objective (no '?')")
    letters = held + unheld
    if set(letters) != set(colours) or len(set(letters)) != len(letters):
        raise InvalidPositionError(f"OBJECTIVES must use each colour in play ({colours}) once, got {field!r}")
    if canonical_colours(unheld) != unheld:
        raise InvalidPositionError(f"the unheld colours must be in {COLOURS} order, got {unheld!r}")
    return tuple(held), (unheld[0], unheld[1])
