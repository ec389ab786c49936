"""The games of a tournament, derived from its configuration and seed alone.

Pure and deterministic: the same :class:`~ziggurat.tournament.config.TournamentConfig`
(including its ``seed`` string) and the same organiser secret always yield the same list
of :class:`GameSpec`, byte for byte, so a runner can resume after a crash by
skipping the indices it has already stored. Every random choice is drawn
from :class:`~ziggurat.rules.seeding.SeedStream` over the tournament seed,
with one label per purpose (``tournament/order/{cycle}``, ``tournament/game/{index}``,
``tournament/swiss/{round}/order`` …), so one choice never shifts another.

Decisions:

* **Ids.** ``index`` is 0-based and stable. ``pair`` and ``deal`` are the index
  of the first game of their group, so ids need no counter and Swiss rounds
  can number theirs without knowing the rounds before.
* **Seeds.** The set-up ``seed`` and ``bot_seeds`` of a game are *not* drawn from the
  configuration: they come from the organiser's secret (:mod:`ziggurat.tournament.sealed`,
  passed as ``secret``), so the public TOML text decides who plays whom but nothing
  hidden. The games of a duplicate deal share their deal's seed. The order of the
  schedule never depends on ``concurrency``, so changing it between runs never renumbers
  games.
* **Two seats** (Pylos, phantom tic-tac-toe, 2-seat Kabaleo in Swiss): each pairing plays
  a pair of games with colours swapped, once per opening. Games are emitted by blocks of
  disjoint pairings (a round of the circle method): the first game of every
  pairing of the block, then the swapped games, so consecutive games rarely
  share a bot.
* **Tables** of size T, for a game that deals (``GameRules.duplicate_deals``: Kabaleo) or
  seats more than two, outside Swiss: every T-subset of the field when there are at
  most :data:`MAX_TABLES` of them per cycle. Otherwise tables are drawn: each
  table takes the T participants who have played least so far this cycle
  (ties by lot), and a cycle has the largest number of tables ≤ :data:`MAX_TABLES`
  that lets everyone play exactly as often (``tables * T`` a multiple of the
  field), or :data:`MAX_TABLES` when no such number exists (then counts differ
  by at most one). With ``duplicate`` a table's deal is played T times, seats
  rotated, so every participant plays every seat of the same deal; else the
  table plays once with seats drawn by lot. A 2-seat duplicate deal is also a
  colour-swapped pair (``pair == deal``).
* **Swiss** (2 seats): see :func:`swiss_round`.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from ziggurat.rules.registry import GAMES
from ziggurat.rules.seeding import SeedStream
from ziggurat.tournament import sealed
from ziggurat.tournament.config import TournamentConfig

MAX_TABLES = 60
BYE_POINTS = 1.0
"""A Swiss bye counts 1 point of the 2 a round's pair of games offers (the score of a drawn pair), in
the Swiss pairing score only: it is not a game, so the standings (points per game played) and the
ratings never see it."""
SEARCH_BUDGET = 20_000
"""Nodes the Swiss pairing search may visit per round; past it, pairing is greedy and may rematch.
Never reached by small fields; it bounds late rounds of large ones, where rematches are forced anyway."""

Results = Sequence[tuple["GameSpec", Sequence[int]]]


@dataclass(frozen=True)
class GameSpec:
    """One game to play, everything the runner needs to set it up and to resume.

    ``options`` is a read-only mapping (``types.MappingProxyType``) of the
    canonical rule options, the same object for every game; it is left out of
    the hash so specs stay hashable.
    """

    index: int  # 0-based, stable: the resume key
    round: int  # 1-based: the cycle (round robin, gauntlet) or the Swiss round
    game: str
    options: Mapping[str, str] = field(hash=False)
    seats: tuple[str, ...]  # participant name per seat, seat 1 first (Pylos seat 1 = light)
    seed: bytes  # 32-byte match set-up seed
    opening: tuple[str, ...]  # moves pre-played by the organiser (a game with openings), else ()
    pair: int | None  # colour-swapped pair id (index of its first game): pentanomial statistics
    deal: int | None  # duplicate-deal id (index of its first game)
    bot_seeds: tuple[int, ...]  # per-seat seeds for built-in bots (reproducibility)


@dataclass(frozen=True)
class _Draft:
    """A game before it has an index; ``group`` is the draft position of its pair's or deal's first game."""

    round: int
    seats: tuple[str, ...]
    opening: tuple[str, ...] = ()
    group: int | None = None
    paired: bool = False  # the group is a colour-swapped pair
    dealt: bool = False  # the group shares one deal seed


def _stream(config: TournamentConfig, label: str) -> SeedStream:
    return SeedStream(config.seed_bytes, "tournament/" + label)


def _finish(config: TournamentConfig, drafts: list[_Draft], start: int, secret: bytes) -> list[GameSpec]:
    """Number the drafts from ``start`` and draw their (first attempt's) seeds from ``secret``."""
    out = []
    for offset, d in enumerate(drafts):
        index = start + offset
        group = None if d.group is None else start + d.group
        deal = group if d.dealt else None
        out.append(
            GameSpec(
                index=index,
                round=d.round,
                game=config.game,
                options=config.options,
                seats=d.seats,
                seed=sealed.game_seed(secret, index, deal, 0),
                opening=d.opening,
                pair=group if d.paired else None,
                deal=deal,
                bot_seeds=sealed.bot_seeds(secret, index, len(d.seats), 0),
            )
        )
    return out


def _pairs(
    drafts: list[_Draft],
    rnd: int,
    block: Sequence[tuple[str, str, tuple[str, ...]]],
    coin: SeedStream,
    dealt: bool,
) -> None:
    """Append colour-swapped pairs for ``(a, b, opening)`` pairings: all first games, then the swaps."""
    base = len(drafts)
    firsts = [((a, b) if coin.below(2) == 0 else (b, a), opening) for a, b, opening in block]
    for k, (seats, opening) in enumerate(firsts):
        drafts.append(_Draft(rnd, seats, opening, base + k, True, dealt))
    for k, ((a, b), opening) in enumerate(firsts):
        drafts.append(_Draft(rnd, (b, a), opening, base + k, True, dealt))


def _pair_blocks(
    config: TournamentConfig, rnd: int, blocks: list[list[tuple[str, str]]], label: str
) -> list[_Draft]:
    """Colour-swapped pairs of every pairing, once per opening, block by block."""
    coin = _stream(config, f"colours/{label}")
    drafts: list[_Draft] = []
    for opening in config.openings or ((),):
        for block in blocks:
            _pairs(drafts, rnd, [(a, b, opening) for a, b in block], coin, config.duplicate)
    return drafts


def _circle(players: Sequence[str]) -> list[list[tuple[str, str]]]:
    """Round-robin rounds of disjoint pairings (the circle method); an odd field sits one out per round."""
    ring: list[str | None] = [*players, None] if len(players) % 2 else list(players)
    rounds = []
    for _ in range(len(ring) - 1):
        half = len(ring) // 2
        pairs = [(ring[i], ring[-1 - i]) for i in range(half)]
        rounds.append([(a, b) for a, b in pairs if a is not None and b is not None])
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return rounds


def _table_count(field_size: int, size: int) -> int:
    """Tables per cycle when drawn: the largest count ≤ MAX_TABLES giving everyone equal play."""
    step = field_size // math.gcd(field_size, size)
    return (MAX_TABLES // step) * step if step <= MAX_TABLES else MAX_TABLES


def _tables(config: TournamentConfig, cycle: int, pool: list[str], size: int) -> list[tuple[str, ...]]:
    """Tables of ``size`` from ``pool`` for one cycle: every subset when few enough, else drawn."""
    stream = _stream(config, f"tables/{cycle}")
    if math.comb(len(pool), size) <= MAX_TABLES:
        return stream.shuffle(list(itertools.combinations(pool, size)))
    played = Counter({name: 0 for name in pool})
    tables = []
    for _ in range(_table_count(len(pool), size)):
        chosen = sorted(stream.shuffle(pool), key=lambda name: played[name])[:size]
        played.update(chosen)
        tables.append(tuple(chosen))
    return tables


def _table_drafts(config: TournamentConfig, cycle: int, tables: list[tuple[str, ...]]) -> list[_Draft]:
    """The games of the tables, by blocks of as many tables as the field could seat at once:
    with ``duplicate`` every rotation of each deal of the block, else one game per table with seats by lot.
    """
    seats = _stream(config, f"seats/{cycle}")
    size = config.seats
    block = max(1, len(config.participants) // size)
    drafts: list[_Draft] = []
    for start in range(0, len(tables), block):
        chunk = [tuple(seats.shuffle(t)) for t in tables[start : start + block]]
        if not config.duplicate:
            drafts.extend(_Draft(cycle, t) for t in chunk)
            continue
        base = len(drafts)
        for turn in range(size):
            for k, t in enumerate(chunk):
                drafts.append(_Draft(cycle, t[turn:] + t[:turn], (), base + k, size == 2, True))
    return drafts


def _shift(d: _Draft, by: int) -> _Draft:
    """``d`` with its group key moved by ``by`` (drafts built apart, then concatenated)."""
    return d if d.group is None else replace(d, group=d.group + by)


def _cycle(config: TournamentConfig, cycle: int) -> list[_Draft]:
    """The games of one cycle of a round robin or gauntlet."""
    names = list(config.names)
    rules = GAMES[config.game]
    # Tables for a game that deals (its deals may be replayed, seats rotated) or seats more than
    # two; any other game is played in colour-swapped pairs.
    tables = rules.duplicate_deals or config.seats > 2
    if config.format == "gauntlet":
        champion = config.champion
        assert champion is not None  # the config guarantees it
        others = [n for n in names if n != champion]
        if tables:
            drawn = _tables(config, cycle, others, config.seats - 1)
            return _table_drafts(config, cycle, [(champion, *t) for t in drawn])
        order = _stream(config, f"order/{cycle}").shuffle(others)
        return _pair_blocks(config, cycle, [[(champion, o) for o in order]], str(cycle))
    if tables:
        return _table_drafts(config, cycle, _tables(config, cycle, names, config.seats))
    blocks = _circle(_stream(config, f"order/{cycle}").shuffle(names))
    return _pair_blocks(config, cycle, blocks, str(cycle))


def plan(config: TournamentConfig, *, secret: bytes) -> list[GameSpec]:
    """Every game of a round robin or gauntlet; round 1 of a Swiss (later rounds: :func:`swiss_round`).

    ``secret`` is the organiser's (:mod:`ziggurat.tournament.sealed`): the set-up and bot seeds.
    """
    if config.format == "swiss":
        return swiss_round(config, 1, [], secret=secret)
    drafts: list[_Draft] = []
    for cycle in range(1, config.rounds + 1):
        offset = len(drafts)
        drafts.extend(_shift(d, offset) for d in _cycle(config, cycle))
    return _finish(config, drafts, 0, secret)


# --- Swiss -----------------------------------------------------------------------------------------


def swiss_points(ranks: Sequence[int]) -> tuple[float, ...]:
    """Points per seat of one game: 1 per seat beaten, 0.5 per seat tied, over the other seats."""
    others = max(1, len(ranks) - 1)
    return tuple((sum(r < o for o in ranks) + 0.5 * (sum(r == o for o in ranks) - 1)) / others for r in ranks)


Withdrawn = Mapping[str, int]
"""Participants out of the Swiss draw (disqualified), each with the first round it no longer plays."""


def swiss_byes(
    config: TournamentConfig, results: Results, withdrawn: Withdrawn | None = None
) -> dict[int, str]:
    """The participant sitting out each Swiss round whose pairing ``results`` determine."""
    rounds = {spec.round for spec, _ in results}
    last = max(rounds, default=0) + 1
    byes: dict[int, str] = {}
    for rnd in range(1, min(last, config.rounds) + 1):
        bye = _pair_round(config, rnd, results, byes, withdrawn or {})[1]
        if bye is not None:
            byes[rnd] = bye
    return byes


def swiss_scores(
    config: TournamentConfig, results: Results, withdrawn: Withdrawn | None = None
) -> dict[str, float]:
    """Swiss score of every participant after the rounds in ``results``: game points plus
    :data:`BYE_POINTS` per bye of those rounds.
    """
    after = max((spec.round for spec, _ in results), default=0)
    return _scores(config, results, after + 1, swiss_byes(config, results, withdrawn))


def _scores(
    config: TournamentConfig, results: Results, before: int, byes: Mapping[int, str]
) -> dict[str, float]:
    scores = dict.fromkeys(config.names, 0.0)
    for spec, ranks in results:
        if spec.round < before:
            for name, points in zip(spec.seats, swiss_points(ranks), strict=True):
                scores[name] += points
    for rnd, name in byes.items():
        if rnd < before:
            scores[name] += BYE_POINTS
    return scores


def swiss_round(
    config: TournamentConfig,
    round: int,
    results: Results,
    *,
    secret: bytes,
    withdrawn: Withdrawn | None = None,
) -> list[GameSpec]:
    """The games of Swiss round ``round`` (1-based), given the results of the rounds before it.

    ``results`` holds ``(spec, ranks by seat)`` of finished games; entries of
    round ``round`` or later are ignored. Pairing ("Monrad" style):

    * standings by score (wins 1, draws 0.5, :data:`BYE_POINTS` per bye), ties
      by a lot drawn for the round, so round 1 is a seeded random pairing;
    * with an odd field one player sits out: among those with the fewest byes,
      the lowest in the standings for whom the others can still be paired
      without a rematch (byes therefore rotate); only when no such player
      exists does a player with more byes sit out, the lowest placed first —
      a second bye comes before a repeated pairing. The bye is not a game: see
      :func:`swiss_byes` and :data:`BYE_POINTS`;
    * from the top of the standings, each player meets the highest-placed
      player left whom they have not met, backtracking when that leaves the
      rest unpairable: no rematch while any pairing of the players in the draw
      (with any one of them sitting out) avoids one, else as few as possible.
      Rematches become forced only when every such pairing repeats one (late
      rounds, or a field shrunk by disqualifications); with at most ``n // 2``
      rounds and no withdrawal they never are. The one exception is a search
      past :data:`SEARCH_BUDGET` nodes in a round (large fields only), which
      pairs greedily down the standings and may repeat a pairing;
    * each pairing plays a colour-swapped pair of games, so colours balance by
      construction. Openings: one drawn by lot per pairing;
    * a participant in ``withdrawn`` (disqualified) leaves the draw from the round
      given: it is neither paired nor given a bye, so nobody scores off it again.

    Indices continue across rounds: round r starts at ``(r - 1) * 2 * (n // 2)``.
    """
    if config.format != "swiss":
        raise ValueError("swiss_round needs a swiss tournament")
    if not 1 <= round <= config.rounds:
        raise ValueError(f"round must be between 1 and {config.rounds}")
    out = withdrawn or {}
    byes = swiss_byes(config, [(s, r) for s, r in results if s.round < round], out)
    pairs, _ = _pair_round(config, round, results, byes, out)
    pick = _stream(config, f"swiss/{round}/openings")
    block = [
        (a, b, config.openings[pick.below(len(config.openings))] if config.openings else ()) for a, b in pairs
    ]
    drafts: list[_Draft] = []
    _pairs(drafts, round, block, _stream(config, f"colours/swiss/{round}"), config.duplicate)
    start = (round - 1) * 2 * (len(config.participants) // 2)
    return _finish(config, drafts, start, secret)


def _pair_round(
    config: TournamentConfig, rnd: int, results: Results, byes: Mapping[int, str], withdrawn: Withdrawn
) -> tuple[list[tuple[str, str]], str | None]:
    """Pairings (higher-placed first) and the bye of round ``rnd``."""
    scores = _scores(config, results, rnd, byes)
    met = {frozenset(spec.seats) for spec, _ in results if spec.round < rnd}
    lot = {name: i for i, name in enumerate(_stream(config, f"swiss/{rnd}/order").shuffle(config.names))}
    playing = [name for name in config.names if withdrawn.get(name, rnd + 1) > rnd]
    standings = sorted(playing, key=lambda n: (-scores[n], lot[n]))
    bye_count = Counter(name for r, name in byes.items() if r < rnd)
    if len(standings) % 2 == 0:
        candidates: list[str | None] = [None]
    else:
        # fewest byes first, then lowest placed first; every player is a candidate, so that a
        # second bye is given before a pairing is repeated (stable sort: placings kept)
        candidates = [*sorted(reversed(standings), key=lambda n: bye_count[n])]
    budget = [SEARCH_BUDGET]
    for repeats in range(len(standings) // 2 + 1):
        for bye in candidates:
            players = [n for n in standings if n != bye]
            found = _match(players, met, repeats, budget)
            if found is not None:
                return found, bye
            if budget[0] < 0:
                return _greedy(players, met), bye
    raise AssertionError("unreachable: with every rematch allowed a pairing always exists")


def _greedy(players: list[str], met: set[frozenset[str]]) -> list[tuple[str, str]]:
    """Out of search: down the standings, each player meets the first one left not met, else the next."""
    left = list(players)
    pairs = []
    while left:
        top = left.pop(0)
        other = next((q for q in left if frozenset((top, q)) not in met), left[0])
        left.remove(other)
        pairs.append((top, other))
    return pairs


def _stuck(players: list[str], met: set[frozenset[str]]) -> int:
    """How many of ``players`` have met every other one (each needs a rematch)."""
    return sum(all(frozenset((p, q)) in met for q in players if q != p) for p in players)


def _match(
    players: list[str], met: set[frozenset[str]], repeats: int, budget: list[int]
) -> list[tuple[str, str]] | None:
    """Pair ``players`` in order with at most ``repeats`` rematches (depth-first, bounded by ``budget``).

    A rematch can rescue at most two players who have met everybody left, which
    prunes the hopeless branches that make late Swiss rounds slow.
    """
    if not players:
        return []
    budget[0] -= 1
    if budget[0] < 0 or (_stuck(players, met) + 1) // 2 > repeats:
        return None
    top, rest = players[0], players[1:]
    for i, other in enumerate(rest):
        rematch = frozenset((top, other)) in met
        if rematch and repeats == 0:
            continue
        tail = _match(rest[:i] + rest[i + 1 :], met, repeats - rematch, budget)
        if tail is not None:
            return [(top, other), *tail]
    return None
