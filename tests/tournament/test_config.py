"""Tournament configuration: the examples load, and every mistake is reported under its key path."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

import pytest

from ziggurat.core.timecontrol import TimeControl
from ziggurat.tournament.config import ConfigError, load_config, parse_config

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "tournaments"


def base(game: str = "pylos", n: int = 3) -> dict[str, Any]:
    return {
        "name": "t",
        "seed": "s",
        "game": game,
        "participants": [{"name": f"p{i}", "builtin": "random"} for i in range(n)],
    }


def test_pylos_example_loads() -> None:
    config = load_config(EXAMPLES / "pylos-round-robin.toml")
    assert config.game == "pylos" and config.seats == 2 and config.format == "round_robin"
    assert len(config.openings) == 12
    assert all(2 <= len(opening) <= 4 for opening in config.openings)
    assert config.options == {"max_moves": "200"}  # canonical: the default variant is omitted
    assert config.time_control == TimeControl(
        per_move_ms=2000, disconnect_grace_ms=10000, max_illegal_moves=3
    )
    assert config.max_failures == 3 and config.listen == "127.0.0.1:0"
    assert config.http_port is None  # commented out in the example: no live page
    stdio = config.participant("random-sh")
    assert stdio.kind == "stdio" and stdio.argv == ("sh", "../stdio/random_bot.sh")
    assert stdio.cwd == EXAMPLES
    assert config.participant("alphabeta").options == {"max_seconds": 0.5, "max_depth": 8}


def test_kabaleo_example_loads() -> None:
    config = load_config(EXAMPLES / "kabaleo-duplicate.toml")
    assert config.game == "kabaleo" and config.seats == 3 and config.duplicate
    assert config.time_control.on_timeout == "random_move"
    assert len(config.participants) == 4


def test_seed_bytes_is_sha256_of_the_string() -> None:
    config = parse_config(base(), Path("/x"))
    assert config.seed_bytes == hashlib.sha256(b"s").digest()


def test_defaults() -> None:
    config = parse_config(base("kabaleo"), Path("/x"))
    assert (config.seats, config.format, config.rounds, config.concurrency) == (2, "round_robin", 1, 1)
    # duplicate deals are opted into: they are refused for participants that can remember
    assert config.duplicate is False and config.max_failures == 3 and config.sprt is None
    assert config.time_control == TimeControl()
    assert not parse_config(base(), Path("/x")).duplicate


def test_program_paths_resolve_against_the_config_directory(tmp_path: Path) -> None:
    data = base()
    data["participants"] += [
        {"name": "prog", "command": ["./bots/b", "--x"], "keep_alive": True, "env": {"A": "1"}},
        {"name": "py", "stdio": ["python3", "bot.py"], "cwd": "sub"},
        {
            "name": "lan",
            "remote": True,
            "token_sha256": "abababababababababababababababababababababababababababababababab",
        },
    ]
    config = parse_config(data, tmp_path)
    prog = config.participant("prog")
    assert prog.argv == (str(tmp_path / "bots" / "b"), "--x") and prog.keep_alive
    assert prog.cwd == tmp_path and prog.env == {"A": "1"}
    py = config.participant("py")
    assert py.argv == ("python3", "bot.py") and py.cwd == tmp_path / "sub"
    assert config.participant("lan").kind == "remote"


def _set(data: dict[str, Any], path: str, value: Any) -> None:
    keys: list[Any] = [int(k) if k.isdigit() else k for k in path.split(".")]
    for key in keys[:-1]:
        data = data[key]
    data[keys[-1]] = value


ERRORS = [
    ("name", 3, "name: must be a non-empty string"),
    ("game", "chess", "game: unknown game 'chess'"),
    ("seats", 3, "seats: pylos is played by 2 to 2 seats"),
    ("format", "knockout", "format: must be one of"),
    ("rounds", 0, "rounds: must be a whole number >= 1"),
    ("concurrency", True, "concurrency: must be a whole number >= 1"),
    (
        "duplicate",
        True,
        "duplicate: pylos deals nothing hidden to replay (games with duplicate deals: kabaleo)",
    ),
    ("options", {"variant": "huge"}, "options: unknown pylos variant 'huge'"),
    ("options", {"max_moves": 1.5}, "options.max_moves: must be a string, whole number or boolean"),
    ("typo", 1, "typo: unknown key"),
    ("participants", [{"name": "a", "builtin": "random"}], "participants: a tournament needs at least 2"),
    ("participants.1.name", "p0", "participants[1].name: 'p0' is already used"),
    (
        "participants.2",
        {"name": "x", "command": "bot"},
        "participants[2].command: must be a non-empty list of",
    ),
    ("participants.2", {"name": "x", "remote": 1}, "participants[2].remote: must be true"),
    (
        "participants.2",
        {"name": "x", "stdio": ["b"], "env": {"A": 1}},
        "participants[2].env.A: must be a string",
    ),
    ("participants.2", {"name": " x", "remote": True}, "participants[2].name: 1 to 64 printable"),
    ("participants.2", {"name": "x", "remote": True}, "participants[2].token_sha256: required, the SHA-256"),
    (
        "participants.2",
        {"name": "x", "remote": True, "token_sha256": "secret"},
        "participants[2].token_sha256: required, the SHA-256",
    ),
    ("participants.2.builtin", "deep", "participants[2].builtin: unknown bot 'deep'"),
    ("participants.2.options", {"seed": 1}, "participants[2].options.seed: set per game"),
    ("participants.2.options", {"depth": 1}, "participants[2].options.depth: random has no such option"),
    ("participants.2.remote", False, "participants[2]: needs exactly one of builtin, command"),
    ("participants.2.cmd", ["x"], "participants[2].cmd: unknown key"),
    ("time_control", {"per_move_ms": -1}, "time_control.per_move_ms: must be a whole number >= 0"),
    ("time_control", {"on_timeout": "pass"}, "time_control.on_timeout: must be one of forfeit"),
    ("time_control", {"increment_ms": 5}, "time_control: increment_ms needs base_ms"),
    ("time_control", {"per_move": 5}, "time_control.per_move: unknown key"),
    ("gauntlet", {"champion": "p0"}, 'gauntlet: only with format = "gauntlet"'),
    ("sprt", {"elo0": 0, "elo1": 5}, "sprt: needs exactly 2 participants"),
    ("disqualify", {"max_failures": -1}, "disqualify.max_failures: must be a whole number >= 0"),
    ("server", {"listen": "localhost"}, "server.listen: must be HOST:PORT"),
    ("server", {"http_port": -1}, "server.http_port: must be a whole number >= 0"),
    ("server", {"http_port": 70000}, "server.http_port: must be a port"),
    ("server", {"http_port": "8081"}, "server.http_port: must be a whole number"),
    ("openings", "missing.txt", "openings: cannot read"),
]


@pytest.mark.parametrize(("path", "value", "message"), ERRORS)
def test_errors_name_the_key(path: str, value: Any, message: str) -> None:
    data = copy.deepcopy(base())
    _set(data, path, value)
    with pytest.raises(ConfigError) as info:
        parse_config(data, Path("/nonexistent"))
    assert message in str(info.value)


KABALEO_ERRORS = [
    ({"seats": 5}, "seats: kabaleo is played by 2 to 4 seats"),
    ({"seats": 4}, "seats: a table of 4 needs at least 4 participants"),
    ({"seats": 3, "format": "swiss"}, "format: swiss pairs two players"),
    ({"openings": "o.txt"}, "openings: kabaleo does not start from openings (its set-up depends on the seed"),
    ({"options": {"deal": "equal"}, "seats": 3, "participants": None}, None),
    ({"format": "gauntlet"}, "gauntlet.champion: required"),
    ({"format": "gauntlet", "gauntlet": {"champion": "zz"}}, "gauntlet.champion: 'zz' is not a participant"),
    ({"participants.0.builtin": "alphabeta"}, "participants[0].builtin: alphabeta does not play kabaleo"),
]


@pytest.mark.parametrize(("changes", "message"), KABALEO_ERRORS)
def test_kabaleo_errors(changes: dict[str, Any], message: str | None) -> None:
    data = base("kabaleo")
    for path, value in changes.items():
        if value is not None:
            _set(data, path, value)
    if message is None:
        assert parse_config(data, Path("/x")).options == {"deal": "equal"}
        return
    with pytest.raises(ConfigError) as info:
        parse_config(data, Path("/x"))
    assert message in str(info.value)


def test_equal_deal_with_four_players_is_refused() -> None:
    data = base("kabaleo", 4)
    data.update(seats=4, options={"deal": "equal"})
    with pytest.raises(ConfigError, match=r"^options: "):
        parse_config(data, Path("/x"))


def test_sprt_with_two_participants() -> None:
    data = base(n=2)
    data["sprt"] = {"elo0": 0, "elo1": 5, "alpha": 0.1}
    sprt = parse_config(data, Path("/x")).sprt
    assert sprt is not None and (sprt.elo0, sprt.elo1, sprt.alpha, sprt.beta) == (0.0, 5.0, 0.1, 0.05)
    data["sprt"] = {"elo0": 5, "elo1": 0}
    with pytest.raises(ConfigError, match=r"^sprt: elo0 must be less than elo1"):
        parse_config(data, Path("/x"))
    data["sprt"] = {"elo1": 5}
    with pytest.raises(ConfigError, match=r"^sprt\.elo0: required"):
        parse_config(data, Path("/x"))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1a1 1a1\n", "line 1: move '1a1'"),
        ("# only comments\n\n", "holds no opening"),
        ("1a1 1b1\n1a1   1b1 # same\n", "line 2: repeats line 1"),
        ("1a1\n1zz\n", "line 2: move '1zz'"),
    ],
)
def test_bad_openings(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "o.txt").write_text(text)
    data = base()
    data["openings"] = "o.txt"
    with pytest.raises(ConfigError) as info:
        parse_config(data, tmp_path)
    assert str(info.value).startswith("openings: o.txt") and message in str(info.value)


def test_openings_are_read_canonically(tmp_path: Path) -> None:
    (tmp_path / "o.txt").write_text("# c\n1a1 1b1  # two moves\n\n1d4 1c3 1a1\n")
    data = base()
    data["openings"] = "o.txt"
    config = parse_config(data, tmp_path)
    assert config.openings == (("1a1", "1b1"), ("1d4", "1c3", "1a1"))
    assert config.openings_path == tmp_path / "o.txt"


def test_load_config_reports_bad_toml(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_text("name = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(path)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "absent.toml")


@pytest.mark.parametrize(
    ("participant", "sandbox", "why"),
    [
        ({"remote": True, "token_sha256": "ab" * 32}, True, "a remote bot plays every rotation"),
        ({"command": ["./bot"], "keep_alive": True}, True, "a keep_alive program plays every rotation"),
        ({"command": ["./bot"]}, False, "with [sandbox] enabled = false a program can keep files"),
        ({"stdio": ["./bot"]}, False, "with [sandbox] enabled = false a program can keep files"),
    ],
)
def test_duplicate_deals_are_refused_for_a_participant_that_can_remember(
    participant: dict[str, Any], sandbox: bool, why: str
) -> None:
    data = base("kabaleo")
    data["duplicate"] = True
    data["participants"][1] = {"name": "cheat", **participant}
    data["sandbox"] = {"enabled": sandbox}
    with pytest.raises(ConfigError) as raised:
        parse_config(data, Path("/x"))
    message = str(raised.value)
    assert message.startswith("participants[1]: duplicate = true needs participants that cannot remember")
    assert "'cheat'" in message and why in message and "set duplicate = false" in message
    data["duplicate"] = False  # the same field without duplicate deals is fine
    assert not parse_config(data, Path("/x")).duplicate


@pytest.mark.parametrize("participant", [{"builtin": "greedy"}, {"command": ["./bot"]}, {"stdio": ["./bot"]}])
def test_duplicate_deals_take_built_in_bots_and_sandboxed_per_game_programs(
    participant: dict[str, Any],
) -> None:
    data = base("kabaleo")
    data["duplicate"] = True
    data["participants"][1] = {"name": "fresh", **participant}
    assert parse_config(data, Path("/x")).duplicate


def test_sandbox_keys_and_their_defaults() -> None:
    policy = parse_config(base(), Path("/x")).sandbox
    assert (policy.total_memory_mb, policy.total_processes, policy.cpus) == (4096, 128, 1.0)
    assert (policy.workdir_mb, policy.tmp_mb, policy.preflight_seconds) == (256, 64, 30.0)
    assert policy.cgroups is True
    data = base()
    data["sandbox"] = {
        "total_memory_mb": 512,
        "total_processes": 32,
        "cpus": 0.5,
        "workdir_mb": 16,
        "tmp_mb": 8,
        "preflight_seconds": 5,
        "cgroups": False,
    }
    policy = parse_config(data, Path("/x")).sandbox
    assert (policy.total_memory_mb, policy.total_processes, policy.cpus) == (512, 32, 0.5)
    assert (policy.workdir_mb, policy.tmp_mb, policy.preflight_seconds, policy.cgroups) == (16, 8, 5.0, False)
    assert policy.limits.memory_bytes == 512 << 20


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("cpus", 0, r"sandbox\.cpus: a number of CPUs from 0\.01 to 1024"),
        ("preflight_seconds", 0, r"sandbox\.preflight_seconds: seconds, more than 0"),
        ("total_processes", 2, r"sandbox\.total_processes: must be a whole number >= 8"),
        ("cgroups", "no", r"sandbox\.cgroups: must be true or false"),
    ],
)
def test_bad_sandbox_keys(key: str, value: object, message: str) -> None:
    data = base()
    data["sandbox"] = {key: value}
    with pytest.raises(ConfigError, match=message):
        parse_config(data, Path("/x"))
