"""Arena configuration: one TOML file read into frozen values, every mistake named by its key.

An arena runs until it is stopped, so unlike a tournament it has no schedule and no seed:
its file says where it lives (database, ports), what it plays (``[[ladder]]``), how games
are paired and timed, and who may enter (``[[entrant]]`` with an operator-issued token,
built-in bots the arena launches itself, and the self-registration policy). The file is read
again at each start: entrants added there join, entrants removed there keep their lines but
are no longer paired (retired). ``docs/arena.md`` documents every key; ``examples/arena.toml``
is a runnable example.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ziggurat.bots import BOTS
from ziggurat.core.timecontrol import TimeControl
from ziggurat.rules.registry import GAMES
from ziggurat.tournament.config import (
    ConfigError,
    _bot_options,
    _sandbox,
    _server,
    _Table,
    _time_control,
)
from ziggurat.tournament.sandbox import SandboxPolicy

Registration = Literal["closed", "open", "approval"]
REGISTRATIONS: tuple[Registration, ...] = ("closed", "open", "approval")
# An entrant's name: what RegisterEntrant accepts, and what a [[entrant]] may be called (the
# '@' is kept for versions: a bot connects as NAME or NAME@VERSION).
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}")
VERSION_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}")
SHA256_HEX = re.compile(r"[0-9a-f]{64}")
DEFAULT_TIME_CONTROL = TimeControl(base_ms=60_000, increment_ms=1_000)


class ArenaConfigError(ConfigError):
    """An arena configuration is invalid; the message starts with the key path at fault."""


@dataclass(frozen=True)
class LadderConfig:
    """One game the arena plays (any registered game) and the table sizes it is played at,
    within the seats the game declares (Pylos, phantom tic-tac-toe: 2; Kabaleo: 2 to 4)."""

    game: str
    table_sizes: tuple[int, ...]


@dataclass(frozen=True)
class EntrantConfig:
    """An entrant the operator declared: a remote bot (``token_sha256``), a built-in the arena
    launches and keeps running (``builtin``, with its ``options``), or a submitted program the
    arena launches, keeps running and confines as tournaments confine theirs (``command``, with
    its ``cwd``, ``env`` and ``read_only`` paths)."""

    name: str
    token_sha256: str = ""
    builtin: str | None = None
    options: tuple[tuple[str, str | int | float | bool], ...] = ()
    argv: tuple[str, ...] = ()
    cwd: Path | None = None
    env: tuple[tuple[str, str], ...] = ()
    read_only: tuple[Path, ...] = ()


@dataclass(frozen=True)
class ArenaConfig:
    """A whole arena, validated."""

    name: str
    database: Path
    listen: str
    http_port: int | None
    ladders: tuple[LadderConfig, ...]
    entrants: tuple[EntrantConfig, ...]
    time_control: TimeControl = DEFAULT_TIME_CONTROL
    max_games: int = 4  # games at once, in all
    games_per_entrant: int = 1  # games at once per entrant line (also capped by its max_matches)
    repeat_window: int = 2  # not the same opponents as in its last N games, when others are free
    pairing_interval_s: float = 0.2  # how often the free entrants are looked at
    registration: Registration = "closed"
    registrations_per_hour: int = 5  # from one address
    max_entrants: int = 1000
    stop_grace_s: float = 600.0  # on stop, how long games in progress get to end before they are void
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)  # for ``command`` entrants
    base_dir: Path = field(default=Path("."))

    def entrant(self, name: str) -> EntrantConfig | None:
        """The declared entrant of that name, if any."""
        return next((e for e in self.entrants if e.name == name), None)


def load_arena_config(path: str | Path) -> ArenaConfig:
    """Read and validate the TOML file at ``path``; relative paths resolve against its directory."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise ArenaConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ArenaConfigError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise ArenaConfigError(f"{path}: not UTF-8 text (TOML must be)") from None
    return parse_arena_config(data, path.resolve().parent)


def parse_arena_config(data: dict[str, Any], base_dir: Path) -> ArenaConfig:
    """Validate an already-parsed TOML document; ``base_dir`` anchors relative paths."""
    try:
        return _parse(data, base_dir)
    except ArenaConfigError:
        raise
    except ConfigError as exc:
        raise ArenaConfigError(str(exc)) from None


def _parse(data: dict[str, Any], base_dir: Path) -> ArenaConfig:
    top = _Table(data, "")
    name = top.string("name")
    database = Path(top.string("database", "arena.db"))
    if not database.is_absolute():
        database = base_dir / database
    server = _server(top.sub("server"))
    ladders = _ladders(top.raw("ladder"))
    entrants = _entrants(top.raw("entrant"), base_dir)
    sandbox = _sandbox(top.sub("sandbox"))
    time_control = _time_control(top.sub("time_control")) if top.has("time_control") else DEFAULT_TIME_CONTROL
    pairing = top.sub("pairing")
    values: dict[str, Any] = {}
    if pairing is not None:
        values["max_games"] = pairing.integer("max_games", 4, minimum=1)
        values["games_per_entrant"] = pairing.integer("games_per_entrant", 1, minimum=1)
        values["repeat_window"] = pairing.integer("repeat_window", 2)
        interval = pairing.number("interval_seconds", 0.2)
        if not 0.01 <= interval <= 60:
            raise ArenaConfigError(
                f"{pairing.key('interval_seconds')}: seconds from 0.01 to 60, not {interval}"
            )
        values["pairing_interval_s"] = interval
        grace = pairing.number("stop_grace_seconds", 600.0)
        if not 0 <= grace <= 86_400:
            raise ArenaConfigError(
                f"{pairing.key('stop_grace_seconds')}: seconds from 0 to 86400, not {grace}"
            )
        values["stop_grace_s"] = grace
        pairing.done()
    registration = top.sub("registration")
    if registration is not None:
        policy = registration.string("policy", "closed")
        if policy not in REGISTRATIONS:
            raise ArenaConfigError(f"{registration.key('policy')}: must be one of {', '.join(REGISTRATIONS)}")
        values["registration"] = policy
        values["registrations_per_hour"] = registration.integer("per_address_per_hour", 5, minimum=1)
        values["max_entrants"] = registration.integer("max_entrants", 1000, minimum=1)
        registration.done()
    top.done()
    return ArenaConfig(
        name=name,
        database=database,
        listen=server["listen"],
        http_port=server["http_port"],
        ladders=ladders,
        entrants=entrants,
        time_control=time_control,
        sandbox=sandbox,
        base_dir=base_dir,
        **values,
    )


def _ladders(raw: object) -> tuple[LadderConfig, ...]:
    if not isinstance(raw, list) or not raw:
        raise ArenaConfigError(f"ladder: at least one [[ladder]] (game = one of {', '.join(sorted(GAMES))})")
    out: list[LadderConfig] = []
    for i, item in enumerate(raw):
        t = _Table(item, f"ladder[{i}]")
        game = t.string("game")
        if game not in GAMES:
            raise ArenaConfigError(f"{t.key('game')}: must be one of {', '.join(sorted(GAMES))}")
        if any(ladder.game == game for ladder in out):
            raise ArenaConfigError(f"{t.key('game')}: {game} has a ladder already")
        sizes: tuple[int, ...] = (2,)
        if t.has("tables"):
            value = t.raw("tables")
            if not isinstance(value, list) or not value or not all(isinstance(v, int) for v in value):
                raise ArenaConfigError(f"{t.key('tables')}: must be a non-empty list of table sizes")
            sizes = tuple(sorted(set(value)))
        rules = GAMES[game]
        allowed = tuple(range(rules.min_seats, rules.max_seats + 1))
        if any(size not in allowed for size in sizes):
            raise ArenaConfigError(f"{t.key('tables')}: {game} seats {', '.join(map(str, allowed))}")
        t.done()
        out.append(LadderConfig(game, sizes))
    return tuple(out)


def _entrants(raw: object, base_dir: Path) -> tuple[EntrantConfig, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ArenaConfigError("entrant: must be an array of tables ([[entrant]])")
    out: list[EntrantConfig] = []
    for i, item in enumerate(raw):
        t = _Table(item, f"entrant[{i}]")
        name = t.string("name")
        if not NAME_PATTERN.fullmatch(name):
            raise ArenaConfigError(
                f"{t.key('name')}: 1-32 letters, digits, '.', '_' or '-', starting with a letter or digit"
            )
        if any(e.name.casefold() == name.casefold() for e in out):
            raise ArenaConfigError(f"{t.key('name')}: {name!r} is declared twice")
        if t.has("builtin"):
            builtin = t.string("builtin")
            if builtin not in BOTS:
                raise ArenaConfigError(f"{t.key('builtin')}: must be one of {', '.join(sorted(BOTS))}")
            options = _bot_options(t.sub("options"), builtin)
            t.done()
            out.append(EntrantConfig(name, builtin=builtin, options=tuple(sorted(options.items()))))
            continue
        if t.has("command"):
            out.append(_program(t, name, base_dir))
            continue
        token = t.string("token_sha256")
        if not SHA256_HEX.fullmatch(token):
            raise ArenaConfigError(
                f"{t.key('token_sha256')}: the SHA-256 of the entrant's token, 64 lower-case hex digits "
                "(`printf %s TOKEN | sha256sum`)"
            )
        t.done()
        out.append(EntrantConfig(name, token_sha256=token))
    return tuple(out)


def _program(t: _Table, name: str, base_dir: Path) -> EntrantConfig:
    """A ``command`` entrant: paths as a tournament's programs (argv[0] with a '/' and ``cwd``
    relative to the file; ``cwd`` defaults to the file's directory)."""
    argv = list(t.strings("command"))
    if "/" in argv[0] and not Path(argv[0]).is_absolute():
        argv[0] = str((base_dir / argv[0]).resolve())
    cwd = (base_dir / t.string("cwd")).resolve() if t.has("cwd") else base_dir
    read_only = tuple((base_dir / p).resolve() for p in t.strings("read_only")) if t.has("read_only") else ()
    env: list[tuple[str, str]] = []
    env_table = t.sub("env")
    if env_table is not None:
        for key, value in env_table.data.items():
            if not isinstance(value, str):
                raise ArenaConfigError(f"{env_table.key(key)}: must be a string")
            env.append((key, value))
    t.done()
    return EntrantConfig(name, argv=tuple(argv), cwd=cwd, env=tuple(env), read_only=read_only)
