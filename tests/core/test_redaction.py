"""Non-interference: what a seat receives does not depend on secrets it may not know.

Two Kabaleo matches that differ only in the objectives of the OTHER seats (and in
which colours nobody holds) must give seat S byte-identical events, match
summaries and error messages until the reveal. The matches are real Match objects
over real (in-memory) SQLite stores, rendered by the same code as the gRPC path.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ziggurat.core import match as match_module
from ziggurat.core.match import Match
from ziggurat.core.render import render_event, render_match
from ziggurat.core.timecontrol import TimeControl
from ziggurat.rules.kabaleo import KABALEO
from ziggurat.rules.seeding import commitment
from ziggurat.store.sqlite import Store
from ziggurat.wire import errors


def _new_match(seed: bytes, seats: int, options: dict[str, str], state_override=None) -> Match:  # type: ignore[no-untyped-def]
    match = Match.create(
        Store(":memory:"),
        match_id="m",
        game="kabaleo",
        seats=seats,
        options=options,
        time_control=TimeControl(),
        seat_assignment="chosen",
        seed=seed,
        commitment=commitment(b"\x00" * 32),  # the same public commitment for both twins
        log_events=lambda line: None,
    )
    if state_override is not None:
        match.current = dataclasses.replace(match.current, game=state_override)
        match.entries[0].game = state_override
    return match


def _observe(match: Match, seat: int, attempts: list[str]) -> list[bytes]:
    """Everything ``seat`` can observe right now: new events, its summary, refusals of ``attempts``."""
    seen = [render_match(match, seat).SerializeToString()]
    for move in attempts:
        try:
            match.submit(seat, move)
        except errors.ApiError as error:
            seen.append(f"{error.code.name}|{error.reason}|{error.message}".encode())
        else:  # pragma: no cover - the attempts are chosen to be refused
            raise AssertionError(f"{move} was accepted")
    return seen


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.binary(min_size=32, max_size=32),
    seats=st.sampled_from([2, 3, 4]),
    deal=st.sampled_from(["random", "equal"]),
    viewer=st.integers(min_value=0, max_value=3),
    play_seed=st.integers(min_value=0, max_value=2**32),
)
def test_a_seat_cannot_tell_twin_matches_apart(
    monkeypatch: pytest.MonkeyPatch, seed: bytes, seats: int, deal: str, viewer: int, play_seed: int
) -> None:
    if deal == "equal" and seats == 4:
        deal = "random"
    viewer %= seats
    monkeypatch.setattr(match_module, "_now_ms", lambda: 1_700_000_000_000)
    options = {"deal": deal}
    first = _new_match(seed, seats, options)
    rng = random.Random(play_seed)
    second = _new_match(seed, seats, options, KABALEO.twin(first.state, viewer, rng))
    assert first.state.objectives[viewer] == second.state.objectives[viewer]
    assert first.state.objectives != second.state.objectives or first.state.unheld != second.state.unheld

    traces: list[list[bytes]] = [[], []]
    for match, trace in zip((first, second), traces, strict=True):
        for s in range(seats):
            match.join(f"p{s}", s)
        trace += _observe(match, viewer, [])
    move_rng = random.Random(play_seed + 1)
    while first.status == "active":
        to_move = KABALEO.to_move(first.state)
        assert to_move is not None
        move = move_rng.choice(KABALEO.legal_moves(first.state))
        bad = ["Q1", "R99"] + ([move] if to_move != viewer else [])
        for match, trace in zip((first, second), traces, strict=True):
            trace += _observe(match, viewer, bad)
            match.submit(to_move, move)
        if first.status != "active":
            break
        # Everything the viewer has been sent so far, byte for byte.
        for match, trace in zip((first, second), traces, strict=True):
            trace.append(b"".join(render_event(match, e, viewer).SerializeToString() for e in match.entries))
        assert traces[0] == traces[1]
    # The game is over: now (and only now) the twins differ for the viewer, in the reveal.
    assert first.status == second.status == "finished"
    end_first = render_event(first, first.entries[-1], viewer)
    end_second = render_event(second, second.entries[-1], viewer)
    assert (
        end_first.match_ended.view.kabaleo.objectives != end_second.match_ended.view.kabaleo.objectives
        or (end_first.match_ended.view.kabaleo.unheld != end_second.match_ended.view.kabaleo.unheld)
    )


def test_spectator_and_seat_views_hide_other_objectives() -> None:
    match = _new_match(b"\x07" * 32, 4, {})
    for s in range(4):
        match.join(f"p{s}", s)
    secrets_of = match.state.objectives
    for audience in (None, 0, 1, 2, 3):
        text = render_match(match, audience).view
        shown = list(text.kabaleo.objectives)
        for s in range(4):
            assert shown[s] == (secrets_of[s] if s == audience else "?")
        assert list(text.kabaleo.unheld) == ["?", "?"]
        assert text.position.split()[-1].count("?") == (6 if audience is None else 5)
