"""The Kabaleo set-up derived from a 32-byte seed (documented in ``docs/setup-derivation.md``).

Each random decision reads its own labelled :class:`SeedStream`, so the
decisions are independent of one another: fixing the colours in the
configuration (which skips the colour draw) does not change the base order,
the deal or the objectives drawn for the same seed. Anyone holding the
revealed seed can re-derive the set-up in another language from the document.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import replace

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
from ziggurat.rules.seeding import SeedStream, check_seed

LABEL_COLOURS = "kabaleo/colours"
LABEL_BASES = "kabaleo/bases"
LABEL_DEAL = "kabaleo/deal"
LABEL_OBJECTIVES = "kabaleo/objectives"


def draw_colours(config: KabaleoConfig, seed: bytes) -> str:
    """Colours in play: the configured ones, else the first ``players + 2`` of a shuffled RYGBOP."""
    if config.colours is not None:
        return config.colours
    shuffled = SeedStream(seed, LABEL_COLOURS).shuffle(COLOURS)
    return canonical_colours(shuffled[: config.colour_count])


def draw_bases(colours: str, seed: bytes) -> tuple[str, ...]:
    """Board order: ``RRRRGGGG…`` (4 per colour, RYGBOP order) shuffled once."""
    bases = [colour for colour in colours for _ in range(BASES_PER_COLOUR)]
    return tuple(SeedStream(seed, LABEL_BASES).shuffle(bases))


def deal_hands(config: KabaleoConfig, colours: str, seed: bytes) -> tuple[Hand, ...]:
    """Hands by the configured method; ``equal`` uses no randomness at all."""
    players = config.players
    if config.deal is Deal.EQUAL:
        share = PIECES_PER_COLOUR // players
        return tuple(_hand(colour * share for colour in colours) for _ in range(players))
    bag = [colour for colour in colours for _ in range(PIECES_PER_COLOUR)]
    drawn = SeedStream(seed, LABEL_DEAL).shuffle(bag)
    # Players draw in turn one piece at a time: seat i takes bag[i], bag[i + n], ...
    return tuple(_hand(drawn[seat::players]) for seat in range(players))


def draw_objectives(colours: str, players: int, seed: bytes) -> tuple[tuple[str, ...], tuple[str, str]]:
    """Objectives: shuffle the colours in play, seat i takes the i-th, the last two are unheld."""
    shuffled = SeedStream(seed, LABEL_OBJECTIVES).shuffle(colours)
    rest = canonical_colours(shuffled[players:])
    return tuple(shuffled[:players]), (rest[0], rest[1])


def _hand(chunks: Iterable[str]) -> Hand:
    """Count the letters of colour strings (``"RRR"``, ``"G"``…) into a RYGBOP count tuple."""
    counts = [0] * len(COLOURS)
    for chunk in chunks:
        for letter in chunk:
            counts[COLOUR_INDEX[letter]] += 1
    return (counts[0], counts[1], counts[2], counts[3], counts[4], counts[5])


def new_game(config: KabaleoConfig, seed: bytes) -> KabaleoState:
    """Derive the initial state from ``seed`` alone (every hidden or random part); seat 0 moves first."""
    check_seed(seed)
    colours = draw_colours(config, seed)
    objectives, unheld = draw_objectives(colours, config.players, seed)
    return KabaleoState(
        config=config,
        stacks=draw_bases(colours, seed),
        hands=deal_hands(config, colours, seed),
        to_move=0,
        last=None,
        objectives=objectives,
        unheld=unheld,
    )


def twin(state: KabaleoState, seat: int | None, rng: random.Random) -> KabaleoState:
    """The same game under another secret set-up that ``seat`` (None: a spectator) cannot rule out.

    Every objective ``seat`` may not see and the two unheld colours are redrawn from the
    colours they use between them (a seat keeps its own objective); the board, the hands and
    the history are the public part and stay. The twin always differs: there are at least
    three letters to redraw (another seat's objective and the two unheld colours), so when
    the shuffle gives the same set-up back, rotating the letters by one changes it.
    """
    hidden = [s for s in range(state.config.players) if s != seat]
    pool = [state.objectives[s] for s in hidden] + list(state.unheld)
    rng.shuffle(pool)
    if pool[: len(hidden)] == [state.objectives[s] for s in hidden]:
        pool = pool[1:] + pool[:1]
    objectives = list(state.objectives)
    for s, letter in zip(hidden, pool, strict=False):
        objectives[s] = letter
    unheld = canonical_colours(pool[len(hidden) :])
    return replace(state, objectives=tuple(objectives), unheld=(unheld[0], unheld[1]))
