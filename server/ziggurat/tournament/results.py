"""Standings, crosstables, head-to-head statistics and exports, from stored game results.

Points: in a game of T seats a participant scores, against each of the other
T - 1 seats, 1 for ranking better, ½ for a shared rank, 0 for ranking worse, and
the sum is divided by T - 1. Two-player games score 1 / ½ / 0 as usual; a Kabaleo
winner of four scores 1, the last 0.

Forfeits. Once a participant is disqualified its remaining games are forfeited
(verdict ``disqualified``): its seat never plays. As in Swiss events (FIDE: "forfeited
games count for the standings but are not rated") and as fastchess does with games that
were not really played, a comparison with a forfeiting seat counts for *points* — it is
won by the seat that showed up, and two forfeiting seats both get 0 (a double forfeit
gives no one a win) — but is left out of every *rating and statistic* (OpenSkill,
crosstable, Elo, LOS, SPRT), which measure play. The comparisons between the seats that
played stay rated (:func:`rated_seats`): in a Kabaleo table with one forfeiting seat the
others played the whole game against each other (the server plays the forfeited seat's
moves at random, as for any seat that resigns), so their order measures play as in any
game. A game in which every seat forfeits is never played (no match): it is recorded with
termination ``resignation``, every seat ranked last and 0 points each. Every exported
game carries its ``points``, so nobody has to re-derive them. A timeout, a crash or an
illegal move is play, and a loss like any other.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ziggurat.tournament.ratings import (
    EloEstimate,
    OpenSkillTable,
    Pentanomial,
    SprtParameters,
    SprtResult,
    Trinomial,
    elo_pentanomial,
    elo_trinomial,
    sprt,
)

FAILURES = ("timeout", "crashed", "illegal", "disconnected")


def failure_counts(results: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Failing verdicts (timeout, crashed, illegal, disconnected) per participant."""
    counts: dict[str, int] = {}
    for result in results:
        for name, verdict in zip(result["seats"], result["verdicts"], strict=True):
            if verdict in FAILURES:
                counts[name] = counts.get(name, 0) + 1
    return counts


def disqualified(results: Iterable[Mapping[str, Any]], max_failures: int) -> set[str]:
    """Participants with at least ``max_failures`` failing verdicts (none when it is 0)."""
    if not max_failures:
        return set()
    return {name for name, count in failure_counts(results).items() if count >= max_failures}


def withdrawals(results: Iterable[Mapping[str, Any]], max_failures: int) -> dict[str, int]:
    """Disqualified participants, each with the first Swiss round it is out of the draw (the one after
    the round of the game that brought it to ``max_failures``)."""
    if not max_failures:
        return {}
    counts: dict[str, int] = {}
    out: dict[str, int] = {}
    for result in sorted(results, key=lambda r: r["index"]):
        for name, verdict in zip(result["seats"], result["verdicts"], strict=True):
            if verdict in FAILURES:
                counts[name] = counts.get(name, 0) + 1
                if counts[name] >= max_failures and name not in out:
                    out[name] = int(result["round"]) + 1
    return out


def rated_seats(result: Mapping[str, Any]) -> list[int]:
    """The seats whose comparisons with each other are rated: those that played (no ``disqualified``
    verdict), when at least two did; none in an aborted game."""
    if result["termination"] == "aborted":
        return []
    played = [seat for seat, verdict in enumerate(result["verdicts"]) if verdict != "disqualified"]
    return played if len(played) >= 2 else []


def unplayed(result: Mapping[str, Any]) -> bool:
    """A game with nothing rated in it: aborted, or fewer than two seats played (see :func:`rated_seats`)."""
    return not rated_seats(result)


def has_forfeit(result: Mapping[str, Any]) -> bool:
    """A seat of the game was forfeited by a disqualified participant."""
    return "disqualified" in result["verdicts"]


def game_points(result: Mapping[str, Any]) -> list[float]:
    """Points of each seat of one game, forfeits included (see the module docstring)."""
    if result["termination"] == "aborted":
        return [0.0] * len(result["seats"])
    if "disqualified" not in result["verdicts"]:
        return seat_points(result["ranks"])
    ranks, out = result["ranks"], []
    forfeit = [verdict == "disqualified" for verdict in result["verdicts"]]
    for i in range(len(ranks)):
        total = 0.0
        for j in range(len(ranks)):
            if i == j:
                continue
            if forfeit[i] or forfeit[j]:
                total += 0.0 if forfeit[i] else 1.0
            else:
                total += 1.0 if ranks[i] < ranks[j] else 0.5 if ranks[i] == ranks[j] else 0.0
        out.append(total / (len(ranks) - 1))
    return out


def seat_points(ranks: Sequence[int]) -> list[float]:
    """Points of each seat of one game (see the module docstring)."""
    others = len(ranks) - 1
    return [
        sum(1.0 if mine < r else 0.5 if mine == r else 0.0 for j, r in enumerate(ranks) if j != i) / others
        for i, mine in enumerate(ranks)
    ]


@dataclass
class Standing:
    """One participant's line in the standings."""

    rank: int
    name: str
    games: int = 0
    points: float = 0.0
    rating: float = 0.0  # OpenSkill ordinal (mu - 3 sigma)
    mu: float = 0.0
    sigma: float = 0.0
    failures: dict[str, int] = field(default_factory=dict)
    disqualified: bool = False
    forfeits: int = 0  # games with a forfeiting seat (its own or an opponent's): partly or wholly unrated

    @property
    def score(self) -> float:
        """Points per game."""
        return self.points / self.games if self.games else 0.0


def standings(
    participants: Sequence[str], results: Iterable[Mapping[str, Any]], disqualified: Iterable[str] = ()
) -> list[Standing]:
    """Standings, best first: by points per game, then rating; disqualified participants last."""
    games = list(results)
    table = OpenSkillTable()
    rows = {name: Standing(0, name) for name in participants}
    for result in games:
        if result["termination"] == "aborted":
            continue
        rated = rated_seats(result)
        if rated:
            table.record({result["seats"][seat]: result["ranks"][seat] for seat in rated})
        forfeit = has_forfeit(result)
        for name, points, verdict in zip(
            result["seats"], game_points(result), result["verdicts"], strict=True
        ):
            row = rows[name]
            row.games += 1
            row.points += points
            row.forfeits += forfeit
            if verdict in FAILURES:
                row.failures[verdict] = row.failures.get(verdict, 0) + 1
    banned = set(disqualified)
    for name, row in rows.items():
        if row.games:
            rating = table.rating(name)
            row.rating, row.mu, row.sigma = rating.ordinal, rating.mu, rating.sigma
        row.disqualified = name in banned
    ordered = sorted(rows.values(), key=lambda r: (r.disqualified, -r.score, -r.rating, r.name))
    for position, row in enumerate(ordered, start=1):
        row.rank = position
    return ordered


def crosstable(
    participants: Sequence[str], results: Iterable[Mapping[str, Any]]
) -> dict[str, dict[str, tuple[float, int]]]:
    """``table[a][b]`` = (a's points against b, games in which both sat), from pairwise comparisons."""
    table: dict[str, dict[str, tuple[float, int]]] = {a: {} for a in participants}
    for result in results:
        seats, ranks, rated = result["seats"], result["ranks"], rated_seats(result)
        for i in rated:
            a = seats[i]
            for j in rated:
                b = seats[j]
                if i != j:
                    points, count = table[a].get(b, (0.0, 0))
                    score = 1.0 if ranks[i] < ranks[j] else 0.5 if ranks[i] == ranks[j] else 0.0
                    table[a][b] = (points + score, count + 1)
    return table


@dataclass(frozen=True)
class HeadToHead:
    """Two participants' games against each other (2-seat games only)."""

    first: str
    second: str
    trinomial: Trinomial
    pentanomial: Pentanomial | None
    elo: EloEstimate | None
    sprt: SprtResult | None


def head_to_head(
    first: str, second: str, results: Iterable[Mapping[str, Any]], params: SprtParameters | None = None
) -> HeadToHead:
    """W/D/L of ``first`` against ``second``, paired games counted pentanomially (as fastchess)."""
    wins = draws = losses = 0
    by_pair: dict[int, list[float]] = defaultdict(list)
    for result in results:
        seats = result["seats"]
        if unplayed(result) or len(seats) != 2 or set(seats) != {first, second}:
            continue
        mine = seat_points(result["ranks"])[seats.index(first)]
        wins, draws, losses = wins + (mine == 1.0), draws + (mine == 0.5), losses + (mine == 0.0)
        if result.get("pair") is not None:
            by_pair[int(result["pair"])].append(mine)
    trinomial = Trinomial(wins, draws, losses)
    complete = [sum(points) for points in by_pair.values() if len(points) == 2]
    pentanomial = Pentanomial.from_pair_points(complete) if complete else None
    elo: EloEstimate | None = None
    if pentanomial is not None and pentanomial.pairs >= 2:
        elo = elo_pentanomial(pentanomial)
    elif trinomial.games >= 2:
        elo = elo_trinomial(trinomial)
    decision = None
    if params is not None and (pentanomial is not None or trinomial.games):
        decision = sprt(pentanomial if pentanomial is not None else trinomial, params)
    return HeadToHead(first, second, trinomial, pentanomial, elo, decision)


def pairings_to_test(participants: Sequence[str], seats: int, champion: str | None) -> list[tuple[str, str]]:
    """The pairings whose running Elo, LOS and SPRT are followed (2-seat games only), engine first:
    a gauntlet's champion against each opponent, or the two participants of a match."""
    if seats != 2:
        return []
    if champion is not None:
        return [(champion, name) for name in participants if name != champion]
    if len(participants) == 2:
        return [(participants[0], participants[1])]
    return []


def pairwise_elo(
    participants: Sequence[str], results: Iterable[Mapping[str, Any]]
) -> dict[str, dict[str, EloEstimate]]:
    """``table[a][b]``: a's Elo ± 95 % and LOS against b, from their pairwise comparisons in rated games.

    Pairwise, not BayesElo: every cell is the W/D/L of the row against the column alone (in a
    Kabaleo table each pair of seats is one comparison: the better rank wins), estimated as
    cutechess does for two engines. Cells are independent of the rest of the field, so they do not
    add up to one scale; OpenSkill in the standings is the field-wide rating.
    """
    counts: dict[tuple[str, str], list[int]] = {}
    for result in results:
        seats, ranks, rated = result["seats"], result["ranks"], rated_seats(result)
        for i in rated:
            a = seats[i]
            for j in rated:
                b = seats[j]
                if i != j:
                    wdl = counts.setdefault((a, b), [0, 0, 0])
                    wdl[0 if ranks[i] < ranks[j] else 1 if ranks[i] == ranks[j] else 2] += 1
    table: dict[str, dict[str, EloEstimate]] = {a: {} for a in participants}
    for (a, b), (wins, draws, losses) in counts.items():
        if a in table:
            table[a][b] = elo_trinomial(Trinomial(wins, draws, losses))
    return table


def format_elo_table(participants: Sequence[str], table: Mapping[str, Mapping[str, EloEstimate]]) -> str:
    """The pairwise Elo table: each cell the row's Elo ± 95 % against the column."""
    names = [name[:12] for name in participants]
    width = max(12, *(len(n) for n in names))
    lines = [
        "Elo (pairwise, row vs column, ± 95 %)",
        " " * (width + 2) + " ".join(f"{n:>{width}}" for n in names),
    ]
    for a, label in zip(participants, names, strict=True):
        cells = []
        for b in participants:
            estimate = table[a].get(b)
            text = "—" if a == b else "·" if estimate is None else _elo_text(estimate)
            cells.append(f"{text:>{width}}")
        lines.append(f"{label:<{width}}  " + " ".join(cells))
    return "\n".join(lines)


def _elo_text(estimate: EloEstimate) -> str:
    if not math.isfinite(estimate.elo):
        return "+inf" if estimate.elo > 0 else "-inf"
    error = f"{estimate.error:.0f}" if math.isfinite(estimate.error) else "inf"
    return f"{estimate.elo:+.0f}±{error}"


def game_line(result: Mapping[str, Any]) -> str:
    """One finished game as cutechess prints it: number (the game's 0-based index), players, result
    (two seats: its points, so a double forfeit is ``0-0``), termination, plies."""
    seats, ranks = result["seats"], result["ranks"]
    if len(seats) == 2:
        first, second = game_points(result)
        score = "1/2-1/2" if first == second == 0.5 else f"{first:g}-{second:g}"
        players = f"{seats[0]} vs {seats[1]}"
    else:
        score = "ranks " + " ".join(map(str, ranks))
        players = ", ".join(seats)
    notes = [
        f"{name} {verdict}"
        for name, verdict in zip(seats, result["verdicts"], strict=True)
        if verdict != "finished"
    ]
    extra = f" [{', '.join(notes)}]" if notes else ""
    plies, termination = len(result["moves"]), result["termination"]
    return f"Finished game {result['index']} ({players}): {score} {{{termination}}} {plies} plies{extra}"


def format_standings(rows: Sequence[Standing]) -> str:
    """The standings as a plain-text table."""
    lines = [
        f"{'rank':>4}  {'bot':<20} {'games':>5} {'points':>7} {'score':>6} {'rating':>7} {'±':>5}  notes"
    ]
    for row in rows:
        notes = ", ".join(f"{count} {kind}" for kind, count in sorted(row.failures.items()))
        if row.forfeits:
            notes = ", ".join(filter(None, [notes, f"{row.forfeits} forfeit games"]))
        if row.disqualified:
            notes = "DISQUALIFIED" + (f" ({notes})" if notes else "")
        lines.append(
            f"{row.rank:>4}  {row.name[:20]:<20} {row.games:>5} {row.points:>7.1f} {row.score * 100:>5.1f}% "
            f"{row.rating:>7.2f} {2 * row.sigma:>5.2f}  {notes}"
        )
    return "\n".join(lines)


def format_crosstable(
    participants: Sequence[str], table: Mapping[str, Mapping[str, tuple[float, int]]]
) -> str:
    """The crosstable: each cell is the row's points / games against the column."""
    names = [name[:10] for name in participants]
    width = max(10, *(len(n) for n in names))
    lines = [" " * (width + 2) + " ".join(f"{n:>{width}}" for n in names)]
    for a, label in zip(participants, names, strict=True):
        cells = []
        for b in participants:
            if a == b:
                cells.append(f"{'—':>{width}}")
            else:
                points, games = table[a].get(b, (0.0, 0))
                cells.append(f"{f'{points:g}/{games}' if games else '·':>{width}}")
        lines.append(f"{label:<{width}}  " + " ".join(cells))
    return "\n".join(lines)


def format_head_to_head(h2h: HeadToHead) -> str:
    """Elo ± error, LOS and (if run) the SPRT state of a pairing."""
    t = h2h.trinomial
    parts = [f"{h2h.first} vs {h2h.second}: +{t.wins} ={t.draws} -{t.losses}"]
    if h2h.pentanomial is not None:
        parts.append(f"pentanomial {list(h2h.pentanomial.counts())}")
    if h2h.elo is not None:
        parts.append(f"Elo {h2h.elo.elo:+.1f} ± {h2h.elo.error:.1f} (95%), LOS {h2h.elo.los * 100:.1f}%")
    if h2h.sprt is not None:
        s = h2h.sprt
        parts.append(f"SPRT LLR {s.llr:.2f} [{s.lower_bound:.2f}, {s.upper_bound:.2f}]: {s.decision}")
    return "; ".join(parts)


def export_jsonl(results: Iterable[Mapping[str, Any]], path: Path) -> int:
    """One JSON object per game: configuration, seats, commitment, seed, moves, outcome, verdicts and
    the points of each seat (what the standings add up, forfeits included)."""
    count = 0
    with path.open("w") as out:
        for result in results:
            out.write(json.dumps({**result, "points": game_points(result)}, sort_keys=True) + "\n")
            count += 1
    return count


def summary(
    name: str,
    participants: Sequence[str],
    results: Sequence[Mapping[str, Any]],
    disqualified: Iterable[str] = (),
    *,
    status: str = "",
    stop_reason: str | None = None,
    pairings: Sequence[tuple[str, str]] = (),
    sprt_params: SprtParameters | None = None,
    secret: bytes | None = None,
) -> dict[str, Any]:
    """Everything a reader of the results needs, as plain data (the JSON export).

    ``pairings`` are those followed with Elo, LOS and SPRT (:func:`pairings_to_test`);
    ``secret`` (the organiser's) is shown only once the tournament has finished.
    """
    rows = standings(participants, results, disqualified)
    verdicts = Counter(v for r in results for v in r["verdicts"])
    return {
        "tournament": name,
        "status": status,
        "stop_reason": stop_reason,
        "secret": secret.hex() if secret is not None and status == "finished" else None,
        "games": len(results),
        "verdicts": dict(verdicts),
        "head_to_head": [_h2h_data(head_to_head(a, b, results, sprt_params)) for a, b in pairings],
        "elo_table": {
            a: {b: _elo_data(e) for b, e in cells.items()}
            for a, cells in pairwise_elo(participants, results).items()
        },
        "standings": [{**asdict(row), "score": row.score} for row in rows],
        "crosstable": {
            a: {b: {"points": p, "games": g} for b, (p, g) in cells.items()}
            for a, cells in crosstable(participants, results).items()
        },
    }


def _finite(value: float) -> float | None:
    """JSON has no infinity: a whitewash's Elo is null."""
    return value if math.isfinite(value) else None


def _elo_data(estimate: EloEstimate | None) -> dict[str, Any] | None:
    if estimate is None:
        return None
    return {
        "elo": _finite(estimate.elo),
        "error": _finite(estimate.error),
        "los": estimate.los,
        "games": estimate.samples,
    }


def _h2h_data(h2h: HeadToHead) -> dict[str, Any]:
    t = h2h.trinomial
    data: dict[str, Any] = {
        "first": h2h.first,
        "second": h2h.second,
        "wins": t.wins,
        "draws": t.draws,
        "losses": t.losses,
        "pentanomial": list(h2h.pentanomial.counts()) if h2h.pentanomial is not None else None,
        "elo": _elo_data(h2h.elo),
        "sprt": None,
    }
    if h2h.sprt is not None:
        s = h2h.sprt
        data["sprt"] = {
            "llr": s.llr,
            "lower": s.lower_bound,
            "upper": s.upper_bound,
            "decision": str(s.decision),
        }
    return data


def summary_csv(rows: Sequence[Standing]) -> str:
    """The standings as CSV."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(
        ["rank", "bot", "games", "points", "score", "rating", "mu", "sigma", *FAILURES, "disqualified"]
    )
    for row in rows:
        writer.writerow(
            [
                row.rank,
                row.name,
                row.games,
                row.points,
                round(row.score, 6),
                round(row.rating, 6),
                round(row.mu, 6),
                round(row.sigma, 6),
                *(row.failures.get(kind, 0) for kind in FAILURES),
                row.disqualified,
            ]
        )
    return buffer.getvalue()
