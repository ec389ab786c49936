"""Does a tournament ask for more searching than this machine's cores can do at once?

A built-in search bot (``mcts``, ``alphabeta``) thinks for its whole budget on a core of its
own (a worker process, :mod:`ziggurat.bots.workers`). Games are turn-based, so a game has at
most one seat thinking at a time; with ``concurrency`` games at once (Kabaleo duplicate:
``concurrency`` deals, each played in all its ``seats`` rotations together) up to that many
searches can run at once. The rule:

    searches at once = concurrency * (seats if duplicate deals else 1)
    oversubscribed  ⇔ a timed tournament has a built-in search participant
                      and searches at once > usable cores

Oversubscription makes no move late — each search stops at its deadline, counted from the
turn's start — but every search then gets about ``cores / searches`` of a core for its
budget, so the bots play weaker than the same time control gives them on an idle machine,
and how much weaker depends on what else runs. The tournament therefore *warns* at start
(one line, with the concurrency that fits) rather than refusing: a run on a busy machine is
still a fair contest between equally slowed bots, just not one to compare with figures
from another machine. Untimed tournaments are not checked: nobody plays against a clock.
"""

from __future__ import annotations

import os

from ziggurat.bots.workers import SEARCH_BOTS
from ziggurat.tournament.config import TournamentConfig
from ziggurat.v1 import game_pb2
from ziggurat_client.bot import Turn

DEFAULT_MAX_SECONDS = 1.0
"""The search bots' own default budget cap (``max_seconds``)."""


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the platform tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def searches_at_once(config: TournamentConfig) -> int:
    """How many built-in searches can run at the same moment (see the module docstring)."""
    rotations = config.seats if config.duplicate else 1
    return config.concurrency * rotations


def search_budget(config: TournamentConfig, max_seconds: float) -> float:
    """Seconds a search bot with cap ``max_seconds`` thinks on a fresh turn of this time control."""
    time_left = config.time_control.per_move_ms or config.time_control.base_ms
    turn = Turn(
        game=config.game,
        options={},
        seats=config.seats,
        seat=1,
        ply=0,
        view=game_pb2.GameView(),
        legal_moves=(),
        time_left_ms=time_left,
    )
    return turn.budget_seconds(default=max_seconds) * 0.9  # as ziggurat.bots.common.Deadline


def _cap(value: object) -> float:
    """A participant's ``max_seconds`` option (the bots' default when absent or not a number)."""
    try:
        return float(str(value)) if value is not None else DEFAULT_MAX_SECONDS
    except ValueError:
        return DEFAULT_MAX_SECONDS


def oversubscription(config: TournamentConfig, cores: int) -> str | None:
    """The warning line when ``config`` oversubscribes ``cores`` with timed searches, else None."""
    searchers = [p for p in config.participants if p.kind == "builtin" and p.builtin in SEARCH_BOTS]
    if not searchers or not config.time_control.timed:
        return None
    at_once = searches_at_once(config)
    if at_once <= cores:
        return None
    budget = max(search_budget(config, _cap(p.options.get("max_seconds"))) for p in searchers)
    share = cores / at_once
    per_deal = config.seats if config.duplicate else 1
    fits = cores // per_deal
    advice = (
        f"concurrency = {fits} fits the cores"
        if fits
        else f"even concurrency = 1 runs {per_deal} rotations at once"
    )
    how = f"{config.concurrency} deals x {per_deal} rotations" if config.duplicate else "concurrency"
    return (
        f"{at_once} built-in searches can run at once ({how}; "
        f"{', '.join(p.name for p in searchers)}) on {cores} cores: each gets about "
        f"{share:.2f} of a core, {budget * share:.2f} s of CPU for a {budget:.2f} s move — no move is late, "
        f"but the bots play weaker than on an idle machine; {advice}"
    )
