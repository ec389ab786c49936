"""Arena configuration: every mistake named by its key, defaults as documented."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ziggurat.arena.config import ArenaConfigError, load_arena_config, parse_arena_config

TOKEN = "a" * 64


def _config(**extra: Any) -> dict[str, Any]:
    return {"name": "x", "ladder": [{"game": "pylos"}], **extra}


def test_defaults(tmp_path: Path) -> None:
    config = parse_arena_config(_config(), tmp_path)
    assert config.database == tmp_path / "arena.db"
    assert config.listen == "127.0.0.1:0" and config.http_port is None
    assert (config.max_games, config.games_per_entrant, config.repeat_window) == (4, 1, 2)
    assert config.registration == "closed"
    assert (config.time_control.base_ms, config.time_control.increment_ms) == (60_000, 1_000)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"ladder": []}, "ladder: at least one"),
        ({"ladder": [{"game": "chess"}]}, "ladder[0].game: must be one of"),
        ({"ladder": [{"game": "pylos", "tables": [3]}]}, "ladder[0].tables: pylos seats 2"),
        ({"ladder": [{"game": "kabaleo", "tables": [5]}]}, "ladder[0].tables: kabaleo seats 2, 3, 4"),
        ({"ladder": [{"game": "pylos"}, {"game": "pylos"}]}, "ladder[1].game: pylos has a ladder already"),
        ({"entrant": [{"name": "a b", "token_sha256": TOKEN}]}, "entrant[0].name: 1-32 letters"),
        ({"entrant": [{"name": "a", "token_sha256": "x"}]}, "entrant[0].token_sha256: the SHA-256"),
        ({"entrant": [{"name": "a", "builtin": "chess"}]}, "entrant[0].builtin: must be one of"),
        (
            {"entrant": [{"name": "a", "token_sha256": TOKEN}, {"name": "A", "token_sha256": TOKEN}]},
            "entrant[1].name: 'A' is declared twice",
        ),
        ({"registration": {"policy": "maybe"}}, "registration.policy: must be one of closed, open, approval"),
        ({"pairing": {"interval_seconds": 0}}, "pairing.interval_seconds: seconds from 0.01 to 60"),
        ({"pairing": {"max_games": 0}}, "pairing.max_games: must be a whole number >= 1"),
        ({"colour": "blue"}, "colour: unknown key"),
    ],
)
def test_mistakes_are_named_by_key(tmp_path: Path, data: dict[str, Any], message: str) -> None:
    with pytest.raises(ArenaConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_arena_config(_config(**data), tmp_path)


def test_a_file_that_is_not_toml_is_named(tmp_path: Path) -> None:
    path = tmp_path / "a.toml"
    path.write_text("name = \n")
    with pytest.raises(ArenaConfigError, match="not valid TOML"):
        load_arena_config(path)
    with pytest.raises(ArenaConfigError, match="cannot read"):
        load_arena_config(tmp_path / "missing.toml")
