"""The oversubscription rule (searches at once vs cores) and its warning at a tournament's start."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.tournament.fixtures.harness import run_tournament, write_config
from ziggurat.tournament import runner as runner_module
from ziggurat.tournament.config import TournamentConfig, parse_config
from ziggurat.tournament.cores import oversubscription, search_budget, searches_at_once, usable_cores


def _config(tmp_path: Path, text: str) -> TournamentConfig:
    return parse_config(tomllib.loads(text), tmp_path)


PYLOS = """
name = "crowded"
seed = "s"
game = "pylos"
concurrency = 3
{extra}

[options]
max_moves = 12

[[participants]]
name = "mcts"
builtin = "mcts"
options = {{ max_seconds = 0.5 }}

[[participants]]
name = "{second}"
builtin = "{second}"
"""
TIMED = '[time_control]\nper_move_ms = 1000\non_timeout = "forfeit"\n'


def test_timed_searches_beyond_the_cores_are_named_with_the_concurrency_that_fits(tmp_path: Path) -> None:
    config = _config(tmp_path, PYLOS.format(extra="", second="alphabeta") + TIMED)
    assert searches_at_once(config) == 3
    assert oversubscription(config, cores=3) is None
    line = oversubscription(config, cores=2)
    assert line is not None
    assert line.startswith("3 built-in searches can run at once (concurrency; mcts, alphabeta) on 2 cores")
    # mcts thinks min(0.5, (1.0 - 0.1) / 4) * 0.9 = 0.2025 s a move; 2/3 of a core of it is CPU
    assert search_budget(config, 0.5) == pytest.approx(0.2025)
    assert "each gets about 0.67 of a core, 0.14 s of CPU for a 0.20 s move — no move is late" in line
    assert line.endswith("concurrency = 2 fits the cores")
    documented = (Path(__file__).parents[2] / "docs" / "tournaments.md").read_text()
    assert f"\ntournament ID: warning: {line}\n" in documented


def test_untimed_or_search_free_tournaments_are_not_checked(tmp_path: Path) -> None:
    untimed = _config(tmp_path, PYLOS.format(extra="", second="alphabeta"))
    assert oversubscription(untimed, cores=1) is None  # nobody plays against a clock
    text = (
        PYLOS.format(extra="", second="greedy")
        .replace('builtin = "mcts"', 'builtin = "random"')
        .replace("options = { max_seconds = 0.5 }", "")
    )
    no_search = _config(tmp_path, text + TIMED)
    assert oversubscription(no_search, cores=1) is None


def test_duplicate_rotations_count_as_searches_at_once(tmp_path: Path) -> None:
    text = """
name = "dup"
seed = "s"
game = "kabaleo"
seats = 3
concurrency = 2
duplicate = true

[time_control]
per_move_ms = 2000

[[participants]]
name = "mcts"
builtin = "mcts"

[[participants]]
name = "greedy"
builtin = "greedy"

[[participants]]
name = "random"
builtin = "random"
"""
    config = _config(tmp_path, text)
    assert searches_at_once(config) == 6
    line = oversubscription(config, cores=4)
    assert line is not None and "(2 deals x 3 rotations; mcts)" in line
    assert line.endswith("concurrency = 1 fits the cores")
    assert oversubscription(config, cores=2) is not None
    assert (oversubscription(config, cores=2) or "").endswith("even concurrency = 1 runs 3 rotations at once")
    assert oversubscription(config, cores=6) is None


def test_usable_cores_is_this_process_affinity() -> None:
    assert 1 <= usable_cores() <= 4096


async def test_a_crowded_tournament_warns_at_start_and_its_search_bots_never_lose_on_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(runner_module, "usable_cores", lambda: 2)
    config = write_config(tmp_path, PYLOS.format(extra="", second="alphabeta") + TIMED)
    done = await run_tournament(config, tmp_path / "t.db", timeout=240)
    assert done.reason == "completed"
    warning = [line for line in capsys.readouterr().err.splitlines() if "warning:" in line]
    assert len(warning) == 1 and "3 built-in searches can run at once" in warning[0]
    results = done.results()
    assert len(results) == 2
    for result in results:
        assert result["verdicts"] == ["finished", "finished"], result
        assert result["termination"] != "timeout"
