"""A deliberately simple, independent Kabaleo implementation used only to cross-check the engine.

It shares nothing with ``ziggurat.rules.kabaleo*`` except the SeedStream
primitive (so the set-up derivation in docs/setup-derivation.md is re-implemented
from the document, not copied). Everything is spelled out the slow, obvious way:
stacks are lists of letters, hands are lists of letters, games are deep-copied.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from ziggurat.rules.seeding import SeedStream

ORDER = "RYGBOP"


@dataclass
class RefGame:
    players: int
    last_stack: bool
    stacks: list[list[str]]  # bottom to top, base first
    hands: list[list[str]]  # each hand sorted in ORDER
    turn: int | None  # 0-based seat, None when over
    last: int | None  # 0-based stack index
    objectives: list[str]
    unheld: list[str]


def sort_letters(letters: list[str] | str) -> list[str]:
    return sorted(letters, key=ORDER.index)


# ---------------------------------------------------------------- set-up (from the document)


def ref_setup(players: int, deal: str, colours: str | None, seed: bytes, last_stack: bool = False) -> RefGame:
    if colours is None:
        shuffled = SeedStream(seed, "kabaleo/colours").shuffle(list(ORDER))
        in_play = sort_letters(shuffled[: players + 2])
    else:
        in_play = sort_letters(colours)
    base_list = []
    for c in in_play:
        base_list += [c, c, c, c]
    bases = SeedStream(seed, "kabaleo/bases").shuffle(base_list)
    if deal == "equal":
        each = 6 // players
        hands = [sort_letters([c for c in in_play for _ in range(each)]) for _ in range(players)]
    else:
        bag = []
        for c in in_play:
            bag += [c] * 6
        bag = SeedStream(seed, "kabaleo/deal").shuffle(bag)
        hands = [[] for _ in range(players)]
        for i, piece in enumerate(bag):
            hands[i % players].append(piece)
        hands = [sort_letters(h) for h in hands]
    objs = SeedStream(seed, "kabaleo/objectives").shuffle(in_play)
    return RefGame(
        players=players,
        last_stack=last_stack,
        stacks=[[b] for b in bases],
        hands=hands,
        turn=0,
        last=None,
        objectives=objs[:players],
        unheld=sort_letters(objs[players:]),
    )


# ---------------------------------------------------------------- position text


def ref_from_position(text: str, last_stack: bool) -> RefGame:
    stacks_f, hands_f, turn_f, last_f, obj_f = text.split(" ")
    hands = [[] if h == "-" else list(h) for h in hands_f.split("/")]
    held, unheld = obj_f.split("+")
    return RefGame(
        players=len(hands),
        last_stack=last_stack,
        stacks=[list(s) for s in stacks_f.split("/")],
        hands=hands,
        turn=None if turn_f == "-" else int(turn_f) - 1,
        last=None if last_f == "-" else int(last_f) - 1,
        objectives=list(held),
        unheld=list(unheld),
    )


def ref_to_position(g: RefGame) -> str:
    stacks = "/".join("".join(s) for s in g.stacks)
    hands = "/".join("".join(h) if h else "-" for h in g.hands)
    turn = "-" if g.turn is None else str(g.turn + 1)
    last = "-" if g.last is None else str(g.last + 1)
    return f"{stacks} {hands} {turn} {last} {''.join(g.objectives)}+{''.join(g.unheld)}"


# ---------------------------------------------------------------- rules


def ref_is_legal(g: RefGame, colour: str, index: int) -> bool:
    if g.turn is None:
        return False
    if colour not in g.hands[g.turn]:
        return False
    if index < 0 or index >= len(g.stacks):
        return False
    stack = g.stacks[index]
    if len(stack) == 1 and stack[0] == colour:
        return False  # bare base of the same colour
    return not (g.last_stack and g.last == index)


def ref_legal_moves(g: RefGame) -> list[str]:
    moves = set()
    for colour in ORDER:
        for index in range(len(g.stacks)):
            if ref_is_legal(g, colour, index):
                moves.add(colour + str(index + 1))
    return sorted(moves)


def ref_play(g: RefGame, move: str) -> RefGame:
    colour = move[0]
    index = int(move[1:]) - 1
    assert ref_is_legal(g, colour, index), move
    new = copy.deepcopy(g)
    assert new.turn is not None
    new.hands[new.turn].remove(colour)
    stack = new.stacks[index]
    if len(stack) > 1 and stack[-1] == colour:
        stack.pop()  # both pieces leave the game
    else:
        stack.append(colour)
    new.last = index
    if all(len(h) == 0 for h in new.hands):
        new.turn = None
    else:
        new.turn = (new.turn + 1) % new.players
    return new


def ref_key(g: RefGame, colour: str) -> tuple[int, int, int]:
    stacks_of_colour = [s for s in g.stacks if s[-1] == colour]
    covered = [s for s in stacks_of_colour if len(s) >= 2]
    tallest = 0
    for s in covered:
        tallest = max(tallest, len(s))
    return (len(stacks_of_colour), len(covered), tallest)


def ref_ranks(g: RefGame, forfeited: frozenset[int] = frozenset()) -> tuple[int, ...]:
    keys = [ref_key(g, g.objectives[seat]) for seat in range(g.players)]
    active = [s for s in range(g.players) if s not in forfeited]
    ranks = []
    for seat in range(g.players):
        if seat in forfeited:
            ranks.append(len(active) + 1)
        else:
            better = [o for o in active if keys[o] > keys[seat]]
            ranks.append(1 + len(better))
    return tuple(ranks)


def ref_perft(g: RefGame, depth: int) -> int:
    if depth == 0:
        return 1
    if depth == 1:
        return len(ref_legal_moves(g))
    total = 0
    for move in ref_legal_moves(g):
        total += ref_perft(ref_play(g, move), depth - 1)
    return total
