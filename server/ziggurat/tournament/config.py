"""Tournament configuration: a TOML file read into frozen values, every mistake named by its key.

A tournament is declared in one TOML file (see ``examples/tournaments/``) so a
run can be repeated exactly: the same file, the same ``seed`` string, the same
schedule (:mod:`ziggurat.tournament.schedule`). Everything that can be wrong is
checked here, before any bot is launched, and every :class:`ConfigError` names
the offending key path (``participants[2].command: must be a list of strings``)
because a tournament that fails an hour in on a typo is worse than one that
never starts.

Decisions:

* **Seed.** ``seed`` is any non-empty string; the 32-byte schedule seed is
  ``SHA-256(seed.encode("utf-8"))`` (:attr:`TournamentConfig.seed_bytes`). It draws
  the schedule only (public): hidden set-ups come from the organiser's secret
  (:mod:`ziggurat.tournament.sealed`), never from this text.
* **Rule options** may be written as TOML strings, integers or booleans
  (``max_moves = 200``, ``last_stack = true``); they are turned into the
  strings the rules expect, validated by the game's ``parse_config`` and kept
  in canonical form (``config_options``, defaults omitted) for records.
* **Program paths.** ``argv[0]`` of ``command``/``stdio`` is resolved against
  the config file's directory when it contains a ``/`` (``./bots/mine``); a bare
  name (``python3``) is left for the ``PATH`` search. ``cwd`` defaults to the
  config file's directory (a relative ``cwd`` is resolved against it), so
  ``command = ["python3", "bot.py"]`` finds ``bot.py`` beside the config.
* **Built-in bots** are the ones of :mod:`ziggurat.bots`; their options
  are checked against the constructor's keyword names. ``seed`` is refused:
  every game gives each seat its own seed (``GameSpec.bot_seeds``) so a run is
  reproducible.
* **Duplicate deals and openings** are for the games that declare them
  (``GameRules.duplicate_deals``: Kabaleo; ``GameRules.openings``: Pylos), never chosen by
  the game's name; a key the game does not declare is refused with one line saying why.
* **Openings** are checked move by move with the tournament's
  rule options and stored in canonical notation; duplicate lines are refused
  because they would silently weight one opening twice.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from ziggurat.bots import BOTS, GAMES_OF
from ziggurat.core.timecontrol import POLICIES, TimeControl
from ziggurat.rules.core import RulesError
from ziggurat.rules.registry import GAMES, AnyRules
from ziggurat.tournament.ratings_sprt import EloModel, SprtParameters
from ziggurat.tournament.sandbox import SandboxPolicy

MAX_NAME = 64  # the server's limit on a bot name (ziggurat.core.match.MAX_NAME)
DEFAULT_LISTEN = "127.0.0.1:0"

Format = Literal["round_robin", "gauntlet", "swiss"]
Kind = Literal["builtin", "command", "stdio", "remote"]
BotOption = str | int | float | bool
FORMATS: tuple[Format, ...] = ("round_robin", "gauntlet", "swiss")
KINDS: tuple[Kind, ...] = ("builtin", "command", "stdio", "remote")


class ConfigError(ValueError):
    """A tournament configuration is invalid; the message starts with the key path at fault."""


def _frozen(mapping: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Participant:
    """One entrant. ``kind`` says which of the other fields apply.

    * ``builtin``: ``builtin`` (bot name) and ``options`` (constructor keywords);
    * ``command``: ``argv`` of a gRPC program launched per game, or once per
      tournament when ``keep_alive`` (it then connects as a remote bot);
    * ``stdio``: ``argv`` of a program speaking the stdio line protocol;
    * ``remote``: a bot connects by itself under ``name``, with the token whose SHA-256
      (hex) is ``token_sha256``: the organiser issued it and pre-registers the name.

    ``cwd``, ``env`` (extra environment variables) and ``read_only`` (more paths the
    sandboxed program may read) apply to programs only. Mappings are read-only views,
    excluded from hashing.
    """

    name: str
    kind: Kind
    builtin: str | None = None
    options: Mapping[str, BotOption] = field(default_factory=_frozen, hash=False)
    argv: tuple[str, ...] = ()
    keep_alive: bool = False
    cwd: Path | None = None
    env: Mapping[str, str] = field(default_factory=_frozen, hash=False)
    read_only: tuple[Path, ...] = ()
    token_sha256: str = ""  # remote participants: the hash of the token the organiser issued


@dataclass(frozen=True)
class TournamentConfig:
    """A whole tournament, validated. ``options`` is a read-only mapping of canonical rule options."""

    name: str
    seed: str
    game: str
    seats: int
    format: Format
    participants: tuple[Participant, ...]
    base_dir: Path
    options: Mapping[str, str] = field(default_factory=_frozen, hash=False)
    rounds: int = 1
    concurrency: int = 1
    duplicate: bool = False
    openings: tuple[tuple[str, ...], ...] = ()
    openings_path: Path | None = None
    time_control: TimeControl = field(default_factory=TimeControl)
    champion: str | None = None
    sprt: SprtParameters | None = None
    max_failures: int = 3
    listen: str = DEFAULT_LISTEN
    # The live tournament page's port (web client + TournamentService over Connect) on the
    # listen host; 0 picks a free one; None serves no page.
    http_port: int | None = None
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)

    @property
    def seed_bytes(self) -> bytes:
        """The 32-byte schedule seed: SHA-256 of the UTF-8 ``seed`` string (no hidden set-up uses it)."""
        return hashlib.sha256(self.seed.encode("utf-8")).digest()

    @property
    def names(self) -> tuple[str, ...]:
        """Participant names in the order of the file."""
        return tuple(p.name for p in self.participants)

    def participant(self, name: str) -> Participant:
        """The participant called ``name`` (KeyError otherwise)."""
        for p in self.participants:
            if p.name == name:
                return p
        raise KeyError(name)


class _Table:
    """A TOML table being read: typed getters that name the key path, and a check for unknown keys."""

    def __init__(self, data: object, path: str) -> None:
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: must be a table")
        self.data: dict[str, object] = data
        self.path = path
        self.read: set[str] = set()

    def key(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def has(self, name: str) -> bool:
        return name in self.data

    def raw(self, name: str) -> object:
        self.read.add(name)
        return self.data.get(name)

    def string(self, name: str, default: str | None = None) -> str:
        value = self.raw(name)
        if value is None and default is not None:
            return default
        if value is None:
            raise ConfigError(f"{self.key(name)}: required")
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{self.key(name)}: must be a non-empty string")
        return value

    def integer(self, name: str, default: int, minimum: int = 0) -> int:
        value = self.raw(name)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(f"{self.key(name)}: must be a whole number >= {minimum}")
        return value

    def number(self, name: str, default: float | None = None) -> float:
        value = self.raw(name)
        if value is None and default is not None:
            return default
        if value is None:
            raise ConfigError(f"{self.key(name)}: required")
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ConfigError(f"{self.key(name)}: must be a number")
        return float(value)

    def boolean(self, name: str, default: bool) -> bool:
        value = self.raw(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ConfigError(f"{self.key(name)}: must be true or false")
        return value

    def strings(self, name: str) -> tuple[str, ...]:
        value = self.raw(name)
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
            raise ConfigError(f"{self.key(name)}: must be a non-empty list of strings")
        return tuple(value)

    def sub(self, name: str) -> _Table | None:
        value = self.raw(name)
        return None if value is None else _Table(value, self.key(name))

    def done(self) -> None:
        unknown = sorted(set(self.data) - self.read)
        if unknown:
            known = ", ".join(sorted(self.read))
            raise ConfigError(f"{self.key(unknown[0])}: unknown key (known here: {known})")


def load_config(path: str | Path) -> TournamentConfig:
    """Read and validate the TOML file at ``path``; relative paths inside resolve against its directory."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    return parse_config(data, path.resolve().parent)


def parse_config(data: dict[str, Any], base_dir: Path) -> TournamentConfig:
    """Validate an already-parsed TOML document; ``base_dir`` anchors relative paths."""
    top = _Table(data, "")
    top.read.update(("duplicate", "openings"))  # read only for the game they belong to
    name = top.string("name")
    seed = top.string("seed")
    game = top.string("game")
    if game not in GAMES:
        raise ConfigError(f"game: unknown game {game!r} (known: {', '.join(sorted(GAMES))})")
    rules = GAMES[game]
    participants = _participants(top, game, base_dir)
    seats = top.integer("seats", rules.min_seats, minimum=1)
    if not rules.min_seats <= seats <= rules.max_seats:
        raise ConfigError(f"seats: {game} is played by {rules.min_seats} to {rules.max_seats} seats")
    if seats > len(participants):
        raise ConfigError(f"seats: a table of {seats} needs at least {seats} participants")
    options, rules_config = _rule_options(top, rules, seats)
    fmt_text = top.string("format", "round_robin")
    fmt = next((f for f in FORMATS if f == fmt_text), None)
    if fmt is None:
        raise ConfigError(f"format: must be one of {', '.join(FORMATS)}, not {fmt_text!r}")
    if fmt == "swiss" and seats != 2:
        raise ConfigError("format: swiss pairs two players; it needs a 2-seat game")
    if top.has("duplicate") and not rules.duplicate_deals:
        raise ConfigError(
            f"duplicate: {game} deals nothing hidden to replay (games with duplicate deals: {_dealers()})"
        )
    openings: tuple[tuple[str, ...], ...] = ()
    openings_path = None
    if top.has("openings"):
        if not rules.openings:
            raise ConfigError(f"openings: {game} does not start from openings ({_why_no_openings(rules)})")
        openings_path = (base_dir / top.string("openings")).resolve()
        openings = _read_openings(openings_path, rules, rules_config)
    champion = _champion(top, fmt, participants)
    config = TournamentConfig(
        name=name,
        seed=seed,
        game=game,
        seats=seats,
        format=fmt,
        participants=participants,
        base_dir=base_dir,
        options=_frozen(options),
        rounds=top.integer("rounds", 1, minimum=1),
        concurrency=top.integer("concurrency", 1, minimum=1),
        duplicate=top.boolean("duplicate", False) if rules.duplicate_deals else False,
        openings=openings,
        openings_path=openings_path,
        time_control=_time_control(top.sub("time_control")),
        champion=champion,
        sprt=_sprt(top.sub("sprt"), seats, len(participants), fmt),
        max_failures=_max_failures(top.sub("disqualify")),
        **_server(top.sub("server")),
        sandbox=_sandbox(top.sub("sandbox")),
    )
    top.done()
    if config.duplicate:
        _check_duplicate(config)
    return config


def _dealers() -> str:
    """The games whose set-up is a deal a tournament may replay, for the error line."""
    return ", ".join(sorted(name for name, rules in GAMES.items() if rules.duplicate_deals)) or "none"


def _why_no_openings(rules: AnyRules) -> str:
    """Why a game declares no openings (``GameRules.openings``), for the error line."""
    if rules.private_moves:
        return "its moves are private, and an opening book is public"
    games = ", ".join(sorted(name for name, other in GAMES.items() if other.openings)) or "none"
    return f"its set-up depends on the seed; games with openings: {games}"


def _check_duplicate(config: TournamentConfig) -> None:
    """Duplicate deals only for participants that cannot remember across the rotations of a deal.

    The rotations of a deal share its secret objectives: a participant that plays two of them
    from one process (a remote bot, a keep_alive program) knows every objective from the first
    move, and one that keeps anything between them (an unconfined program writing a file) knows
    in the second rotation what was a rival's secret in the first. Allowed: built-in bots (each
    of their games is played by a fresh process of its own in a duplicate tournament) and
    ``command``/``stdio`` programs launched per game in the sandbox (no network, a private work
    directory and ``/tmp`` per game, the tournament's socket serving only the program's own seat).
    """
    for i, p in enumerate(config.participants):
        if p.kind == "remote":
            why = "a remote bot plays every rotation of a deal in one process"
        elif p.kind == "command" and p.keep_alive:
            why = "a keep_alive program plays every rotation of a deal in one process"
        elif p.kind in ("command", "stdio") and not config.sandbox.enabled:
            why = "with [sandbox] enabled = false a program can keep files from one rotation for the next"
        else:
            continue
        raise ConfigError(
            f"participants[{i}]: duplicate = true needs participants that cannot remember across the "
            f"rotations of a deal, and {p.name!r} can: {why}, so it would know every objective of the "
            "deal from its first rotation on. Use built-in bots or per-game command/stdio programs "
            "in the sandbox, or set duplicate = false"
        )


def _participants(top: _Table, game: str, base_dir: Path) -> tuple[Participant, ...]:
    value = top.raw("participants")
    if not isinstance(value, list) or not value:
        raise ConfigError("participants: required, as [[participants]] tables")
    out: list[Participant] = []
    for i, item in enumerate(value):
        p = _participant(_Table(item, f"participants[{i}]"), game, base_dir)
        if any(other.name == p.name for other in out):
            raise ConfigError(f"participants[{i}].name: {p.name!r} is already used")
        out.append(p)
    if len(out) < 2:
        raise ConfigError("participants: a tournament needs at least 2 participants")
    return tuple(out)


def _participant(t: _Table, game: str, base_dir: Path) -> Participant:
    name = t.string("name")
    if len(name) > MAX_NAME or not name.isprintable() or name != name.strip():
        raise ConfigError(f"{t.key('name')}: 1 to {MAX_NAME} printable characters, no outer spaces")
    kinds = [k for k in KINDS if t.has(k)]
    if len(kinds) != 1:
        raise ConfigError(f"{t.path}: needs exactly one of {', '.join(KINDS)}")
    kind = kinds[0]
    if kind == "builtin":
        bot = t.string("builtin")
        if bot not in BOTS:
            raise ConfigError(f"{t.key('builtin')}: unknown bot {bot!r} (known: {', '.join(sorted(BOTS))})")
        if game not in GAMES_OF[bot]:
            raise ConfigError(f"{t.key('builtin')}: {bot} does not play {game}")
        options = _bot_options(t.sub("options"), bot)
        t.done()
        return Participant(name, "builtin", builtin=bot, options=_frozen(options))
    if kind == "remote":
        if t.raw("remote") is not True:
            raise ConfigError(f"{t.key('remote')}: must be true (the bot connects by itself)")
        digest = t.string("token_sha256") if t.has("token_sha256") else ""
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ConfigError(
                f"{t.key('token_sha256')}: required, the SHA-256 (64 lowercase hex digits) of the token "
                'you issue to this bot, e.g. printf %s "$TOKEN" | sha256sum'
            )
        t.done()
        return Participant(name, "remote", token_sha256=digest)
    argv = list(t.strings(kind))
    if "/" in argv[0] and not Path(argv[0]).is_absolute():
        argv[0] = str((base_dir / argv[0]).resolve())
    keep_alive = t.boolean("keep_alive", False) if kind == "command" else False
    cwd = (base_dir / t.string("cwd")).resolve() if t.has("cwd") else base_dir
    read_only = (
        tuple((base_dir / path).resolve() for path in t.strings("read_only")) if t.has("read_only") else ()
    )
    env: dict[str, str] = {}
    env_table = t.sub("env")
    if env_table is not None:
        for key, value in env_table.data.items():
            if not isinstance(value, str):
                raise ConfigError(f"{env_table.key(key)}: must be a string")
            env[key] = value
    t.done()
    return Participant(
        name,
        kind,
        argv=tuple(argv),
        keep_alive=keep_alive,
        cwd=cwd,
        env=_frozen(env),
        read_only=read_only,
    )


def _bot_options(t: _Table | None, bot: str) -> dict[str, BotOption]:
    if t is None:
        return {}
    accepted = set(inspect.signature(BOTS[bot]).parameters) - {"seed"}
    out: dict[str, BotOption] = {}
    for key, value in t.data.items():
        if key == "seed":
            raise ConfigError(f"{t.key(key)}: set per game by the organiser; remove it")
        if key not in accepted:
            raise ConfigError(
                f"{t.key(key)}: {bot} has no such option (known: {', '.join(sorted(accepted))})"
            )
        if not isinstance(value, str | int | float | bool):
            raise ConfigError(f"{t.key(key)}: must be a string, number or boolean")
        out[key] = value
    return out


def _rule_options(top: _Table, rules: AnyRules, seats: int) -> tuple[dict[str, str], Any]:
    table = top.sub("options")
    options: dict[str, str] = {}
    for key, value in (table.data if table else {}).items():
        if isinstance(value, bool):
            options[key] = "true" if value else "false"
        elif isinstance(value, int | str):
            options[key] = str(value)
        else:
            raise ConfigError(f"options.{key}: must be a string, whole number or boolean")
    try:
        parsed = rules.parse_config(options, seats)
    except RulesError as exc:
        raise ConfigError(f"options: {exc}") from None
    return rules.config_options(parsed), parsed


def _read_openings(path: Path, rules: AnyRules, rules_config: Any) -> tuple[tuple[str, ...], ...]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"openings: cannot read {path}: {exc.strerror}") from None
    seen: dict[tuple[str, ...], int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        moves = line.split("#", 1)[0].split()
        if not moves:
            continue
        where = f"openings: {path.name} line {number}"
        state = rules.new_game(rules_config, bytes(32))  # openings: the same set-up from any seed
        canonical: list[str] = []
        for move in moves:
            try:
                canonical.append(rules.canonical_move(state, move))
                state = rules.apply(state, move)
            except RulesError as exc:
                raise ConfigError(f"{where}: move {move!r}: {exc}") from None
            if rules.outcome(state) is not None:
                raise ConfigError(f"{where}: the game is over after {move!r}")
        opening = tuple(canonical)
        if opening in seen:
            raise ConfigError(f"{where}: repeats line {seen[opening]}")
        seen[opening] = number
    if not seen:
        raise ConfigError(f"openings: {path.name} holds no opening")
    return tuple(seen)


def _champion(top: _Table, fmt: str, participants: tuple[Participant, ...]) -> str | None:
    table = top.sub("gauntlet")
    if fmt != "gauntlet":
        if table is not None:
            raise ConfigError(f'gauntlet: only with format = "gauntlet" (format is {fmt!r})')
        return None
    if table is None:
        raise ConfigError("gauntlet.champion: required for a gauntlet")
    champion = table.string("champion")
    table.done()
    if champion not in {p.name for p in participants}:
        raise ConfigError(f"gauntlet.champion: {champion!r} is not a participant")
    return champion


def _time_control(t: _Table | None) -> TimeControl:
    if t is None:
        return TimeControl()
    ints = ("per_move_ms", "base_ms", "increment_ms", "disconnect_grace_ms", "max_illegal_moves")
    values = {key: t.integer(key, 0) for key in ints}
    on_timeout = t.string("on_timeout", "forfeit")
    if on_timeout not in POLICIES:
        raise ConfigError(f"{t.key('on_timeout')}: must be one of {', '.join(POLICIES)}")
    t.done()
    try:
        return TimeControl(on_timeout=on_timeout, **values)
    except RulesError as exc:
        raise ConfigError(f"time_control: {exc}") from None


def _sprt(t: _Table | None, seats: int, participants: int, fmt: str) -> SprtParameters | None:
    if t is None:
        return None
    if seats != 2 or (participants != 2 and fmt != "gauntlet"):
        raise ConfigError(
            "sprt: needs exactly 2 participants in a 2-seat game, or a 2-seat gauntlet "
            "(the champion is tested against each opponent)"
        )
    model = t.string("model", EloModel.NORMALIZED.value)
    if model not in {m.value for m in EloModel}:
        raise ConfigError(f"{t.key('model')}: must be one of {', '.join(m.value for m in EloModel)}")
    values = (t.number("elo0"), t.number("elo1"), t.number("alpha", 0.05), t.number("beta", 0.05))
    t.done()
    try:
        return SprtParameters(*values, model=EloModel(model))
    except ValueError as exc:
        raise ConfigError(f"sprt: {exc}") from None


def _max_failures(t: _Table | None) -> int:
    if t is None:
        return 3
    value = t.integer("max_failures", 3)
    t.done()
    return value


def _server(t: _Table | None) -> dict[str, Any]:
    """``[server]``: ``listen`` (HOST:PORT of the gRPC server) and ``http_port`` (the live page)."""
    if t is None:
        return {"listen": DEFAULT_LISTEN, "http_port": None}
    listen = t.string("listen", DEFAULT_LISTEN)
    http_port = t.integer("http_port", 0) if t.has("http_port") else None
    t.done()
    host, sep, port = listen.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"{t.key('listen')}: must be HOST:PORT (port 0 picks a free one), not {listen!r}")
    if http_port is not None and http_port > 65535:
        raise ConfigError(f"{t.key('http_port')}: must be a port (0 picks a free one), not {http_port}")
    return {"listen": listen, "http_port": http_port}


def _sandbox(t: _Table | None) -> SandboxPolicy:
    if t is None:
        return SandboxPolicy()
    default = SandboxPolicy()
    cpus = t.number("cpus", default.cpus)
    preflight = t.number("preflight_seconds", default.preflight_seconds)
    policy = SandboxPolicy(
        enabled=t.boolean("enabled", True),
        cpu_seconds=t.integer("cpu_seconds", default.cpu_seconds, minimum=1),
        memory_mb=t.integer("memory_mb", default.memory_mb, minimum=16),
        max_processes=t.integer("max_processes", default.max_processes, minimum=1),
        max_file_mb=t.integer("max_file_mb", default.max_file_mb, minimum=1),
        cgroups=t.boolean("cgroups", True),
        total_memory_mb=t.integer("total_memory_mb", default.total_memory_mb, minimum=16),
        total_processes=t.integer("total_processes", default.total_processes, minimum=8),
        cpus=cpus,
        workdir_mb=t.integer("workdir_mb", default.workdir_mb, minimum=1),
        tmp_mb=t.integer("tmp_mb", default.tmp_mb, minimum=1),
        preflight_seconds=preflight,
    )
    if not 0.01 <= cpus <= 1024:
        raise ConfigError(f"{t.key('cpus')}: a number of CPUs from 0.01 to 1024, not {cpus}")
    if not 0 < preflight <= 3600:
        raise ConfigError(
            f"{t.key('preflight_seconds')}: seconds, more than 0 and at most 3600, not {preflight}"
        )
    t.done()
    return policy
