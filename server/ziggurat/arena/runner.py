"""Running a standing arena: its own server, its entrants, continuous pairing, lasting ratings.

``ziggurat arena run ARENA.toml`` starts a ziggurat server on the arena's database (matches,
events, ratings and records in one file) in competition mode: an entrant's credential
connects its bot (``BotService.ConnectBot``) and plays the seats the arena hands it, and
nothing else; everybody else reads. Then, every ``interval_seconds`` until it is stopped:

1. the operator's controls are read from the database (pause, stop, retire, approve);
2. the lines that are connected, active, of the entrant's newest version and free are
   paired (:mod:`ziggurat.arena.pairing`), within ``max_games`` in all and
   ``games_per_entrant`` per entrant;
3. each table is played as a tournament plays a game (:func:`ziggurat.tournament.games.play_game`:
   a held match, seats handed out, clocks from the first move, a seat that cannot play
   resigned), and rated when it ends (:mod:`ziggurat.arena.store`: one transaction).

An entrant that is away is simply not paired. A game it leaves is played on by the time
control and lost, and counts. A game cut off by a stop or a crash is void.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import secrets
import shutil
import signal
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ziggurat.arena.config import ArenaConfig
from ziggurat.arena.ladder import Ladder
from ziggurat.arena.pairing import Candidate, pair
from ziggurat.arena.store import ArenaStore, GameRow, now_ms
from ziggurat.core.botnames import bot_key
from ziggurat.core.match import hash_token
from ziggurat.hosting.server import ExtraService, ServeOptions, ZigguratServer
from ziggurat.rules.core import Termination
from ziggurat.tournament.games import GameHost, Seating, ShutdownError, game_result, play_game
from ziggurat.tournament.runner import SOCKET_NAME, _confine_launch, _Launched
from ziggurat.tournament.sandbox import Confinement, Sandbox, named_paths
from ziggurat.tournament.schedule import GameSpec
from ziggurat.v1 import arena_service_pb2, arena_service_pb2_grpc
from ziggurat.wire.errors import ApiError
from ziggurat_client.client import ZigguratClient

log = logging.getLogger("ziggurat.arena")

ARENA_SERVICE = arena_service_pb2.DESCRIPTOR.services_by_name["ArenaService"]
SERVER_GRACE_SECONDS = 0.5
RATE_RETRY_SECONDS = 1.0  # the database refused a rating: tried again this often, memory untouched
NO_OPTIONS: MappingProxyType[str, str] = MappingProxyType({})


@dataclass
class LiveGame:
    """A game being played now."""

    number: int
    game: str
    seats: tuple[str, ...]
    start_ms: int
    match_id: str = ""
    task: asyncio.Task[None] | None = None


@dataclass
class ArenaState:
    """What the arena knows now, all of it following the database (read by the servicer)."""

    config: ArenaConfig
    ladders: dict[str, Ladder] = field(default_factory=dict)
    live: dict[int, LiveGame] = field(default_factory=dict)
    status: str = "running"  # running | paused | stopping
    games_rated: int = 0
    entrant_states: dict[str, str] = field(default_factory=dict)  # entrant key -> state
    entrant_names: dict[str, str] = field(default_factory=dict)  # entrant key -> name
    versions: dict[str, list[str]] = field(default_factory=dict)  # entrant key -> versions, oldest first
    connected: set[str] = field(default_factory=set)  # lines connected now

    def line_entrant(self, line: str) -> str:
        """The entrant key of a line (``alice@2`` -> key of ``alice``)."""
        return bot_key(line.partition("@")[0])

    def newest(self, key: str) -> str:
        """The entrant's newest version ('' when it never connected with one)."""
        versions = self.versions.get(key)
        return versions[-1] if versions else ""

    def line_state(self, line: str) -> str:
        """The line's state: active, pending, retired or superseded."""
        key = self.line_entrant(line)
        state = self.entrant_states.get(key, "retired")
        if state != "active":
            return state
        version = line.partition("@")[2]
        return "active" if version == self.newest(key) else "superseded"


def rebuild_ladders(config: ArenaConfig, store: ArenaStore) -> tuple[dict[str, Ladder], int]:
    """The ladders from the rated games in rating order, and how many there are.

    Each game's stored ratings are what the ladder computed when it was rated; the replay must
    give the same numbers (the model is deterministic), which :func:`check_ratings` verifies.
    """
    ladders = {ladder.game: Ladder(ladder.game) for ladder in config.ladders}
    rows = store.rated_in_order()
    for row in rows:
        ladder = ladders.setdefault(row.game, Ladder(row.game))
        _apply(ladder, row)
    return ladders, len(rows)


def _apply(ladder: Ladder, row: GameRow) -> None:
    assert row.result is not None and row.ratings is not None
    after = {name: (r["after"][0], r["after"][1]) for name, r in zip(row.seats, row.ratings, strict=True)}
    ladder.apply(row.seats, row.result["ranks"], after, row.end_ms or row.start_ms)


def check_ratings(config: ArenaConfig, store: ArenaStore) -> list[str]:
    """Replays every rated game from the prior and compares with the stored ratings: the lines
    that differ (empty when the ladder is exactly the games played, in their order)."""
    fresh = {ladder.game: Ladder(ladder.game) for ladder in config.ladders}
    problems: list[str] = []
    for row in store.rated_in_order():
        assert row.result is not None and row.ratings is not None
        ladder = fresh.setdefault(row.game, Ladder(row.game))
        ranks = dict(zip(row.seats, row.result["ranks"], strict=True))
        expected = ladder.preview(ranks)
        for name, stored in zip(row.seats, row.ratings, strict=True):
            if tuple(stored["after"]) != expected[name] or tuple(stored["before"]) != (
                ladder.line(name).mu,
                ladder.line(name).sigma,
            ):
                problems.append(
                    f"game {row.number}: {name} stored {stored} but the replay gives {expected[name]}"
                )
        ladder.apply(row.seats, row.result["ranks"], expected, row.end_ms or row.start_ms)
    return problems


class ArenaRunner:
    """Runs an arena until it is stopped (a signal, or ``ziggurat arena stop``)."""

    def __init__(self, config: ArenaConfig, *, log_dir: Path | None = None) -> None:
        self.config = config
        db = config.database
        self.log_dir = log_dir or db.with_name(f"{db.stem}-logs")
        self.store: ArenaStore | None = None
        self.state = ArenaState(config)
        self.server: ZigguratServer | None = None
        self.address = ""
        self.page_url = ""
        self._launched: list[_Launched] = []
        self._exits: dict[str, int] = {}
        self._free_since: dict[str, float] = {}
        self._stop = asyncio.Event()
        self.interrupted = False  # stopped by Ctrl-C (SIGINT)
        self._builtin_tokens: dict[str, str] = {}

    def request_stop(self, signum: int | None = None) -> None:
        """Stop pairing; the games in progress are played to their end (``stop_grace_s``)."""
        if signum == signal.SIGINT:
            self.interrupted = True
        self._stop.set()

    async def run(self) -> int:
        """Run until stopped; the exit code (0).

        Raises SandboxUnavailable (before anything is written) when ``command`` entrants need a
        sandbox this machine cannot make.
        """
        config = self.config
        sandbox: Sandbox | None = None
        socket_dir: Path | None = None
        if config.sandbox.enabled and any(e.argv for e in config.entrants):
            # a short path (sun_path holds 108 bytes), readable by the sandboxes' users
            socket_dir = Path(tempfile.mkdtemp(prefix="ziggurat-a-"))
            socket_dir.chmod(0o755)
            db = config.database.resolve()
            hidden = [
                db,
                db.with_name(db.name + "-wal"),
                db.with_name(db.name + "-shm"),
                self.log_dir.resolve(),
            ]
            sandbox = Sandbox(config.sandbox, hidden=hidden, socket_dir=socket_dir, name="arena")
            try:
                sandbox.check()
                for entrant in config.entrants:
                    sandbox.refuse_databases(entrant.name, entrant.read_only)
            except BaseException:
                shutil.rmtree(socket_dir, ignore_errors=True)
                sandbox.close()
                raise
        try:
            return await self._run(sandbox, socket_dir)
        finally:
            if socket_dir is not None:
                shutil.rmtree(socket_dir, ignore_errors=True)
            if sandbox is not None:
                sandbox.close()

    async def _run(self, sandbox: Sandbox | None, socket_dir: Path | None) -> int:
        config = self.config
        host, port = config.listen.rsplit(":", 1)
        server = ZigguratServer(
            ServeOptions(
                host=host,
                port=int(port),
                db_path=str(config.database),
                rate_per_seat=0,
                mdns=False,
                grace_seconds=SERVER_GRACE_SECONDS,
                http_port=config.http_port,
                competition=True,  # an entrant's credential plays its own seats and nothing else
                unix_socket=str(socket_dir / SOCKET_NAME) if socket_dir is not None else None,
            )
        )
        from ziggurat.arena.servicer import ArenaServicer

        store = ArenaStore(config.database)
        self.store = store
        servicer = ArenaServicer(self, store)
        server.add_service(
            ExtraService(ARENA_SERVICE, servicer, arena_service_pb2_grpc.add_ArenaServiceServicer_to_server)
        )
        bound = await server.start()
        self.server = server
        if socket_dir is not None:
            (socket_dir / SOCKET_NAME).chmod(0o777)  # sandboxes run as users of their own
        assert server.competition is not None
        server.competition.versioned = True
        server.bots.versioned = True
        self.address = f"127.0.0.1:{bound}" if host in ("0.0.0.0", "::", "") else f"{host}:{bound}"
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, self.request_stop, signum)
        client = ZigguratClient(self.address)
        try:
            store.set_control("stop", None)  # a stop asked of an earlier run is done
            self._sync_entrants()
            self._recover(server)
            self.state.ladders, self.state.games_rated = rebuild_ladders(config, store)
            self._say(f"arena {config.name!r}: server {self.address}")
            if server.http_port is not None:
                page_host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
                self.page_url = f"{server.options.web_scheme}://{page_host}:{server.http_port}/#/arena"
                self._say(f"arena {config.name!r}: ladder page {self.page_url}")
            program_address = f"unix:{socket_dir / SOCKET_NAME}" if socket_dir is not None else self.address
            self._launch_entrants(sandbox, program_address)
            game_host = GameHost(
                manager=server.manager,
                bots=server.bots,
                address=self.address,
                client=client,
                time_control=config.time_control,
                log_dir=self.log_dir,
                remote_wait_seconds=10.0,
                startup_seconds=30.0,
                max_illegal=max(1, config.time_control.max_illegal_moves or 3),
                exits=self._exits,
            )
            self.log_dir.mkdir(parents=True, exist_ok=True)
            self._say(f"arena {config.name!r}: pairing (Ctrl-C or `ziggurat arena stop` stops it)")
            await self._pair_until_stopped(game_host)
            await self._finish_live_games()
            self._say(f"arena {config.name!r}: stopped; {self.state.games_rated} games rated in all")
            return 0
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(signum)
            for launched in self._launched:
                await launched.stop()
            await client.close()
            await server.stop()
            store.close()

    def _say(self, line: str) -> None:
        log.info("%s", line)
        print(line, file=sys.stderr, flush=True)

    # Entrants ----------------------------------------------------------------------------
    def _sync_entrants(self) -> None:
        """The file's entrants are registered with their tokens (built-ins with a token of this
        run); entrants the file no longer names are retired; every entrant's name and versions
        connect under its token."""
        assert self.store is not None and self.server is not None
        declared = set()
        for entrant in self.config.entrants:
            key = bot_key(entrant.name)
            declared.add(key)
            if entrant.builtin is not None or entrant.argv:  # the arena launches it: a token of this run
                token = secrets.token_urlsafe(24)
                self._builtin_tokens[entrant.name] = token
                self.store.upsert_declared(key, entrant.name, hash_token(token))
            else:
                self.store.upsert_declared(key, entrant.name, entrant.token_sha256)
        versions = self.store.versions()
        for row in self.store.entrants():
            if row.source == "config" and row.key not in declared and row.state != "retired":
                self.store.set_state(row.key, "retired")
                log.info("entrant %s is not in the file any more: retired", row.name)
            self.register_on_server(row.name, row.token_sha256, versions.get(row.key, []))
        self._read_entrants()

    def register_on_server(self, name: str, token_sha256: str, versions: list[str]) -> None:
        """Let ``name`` (and its versions) connect with the token whose hash is ``token_sha256``."""
        assert self.server is not None
        self.server.preregister_bot(name, token_sha256)
        for version in versions:
            if version:
                self.server.preregister_bot(f"{name}@{version}", token_sha256)

    def _read_entrants(self) -> None:
        assert self.store is not None
        rows = self.store.entrants()
        self.state.entrant_states = {row.key: row.state for row in rows}
        self.state.entrant_names = {row.key: row.name for row in rows}
        self.state.versions = self.store.versions()

    def _launch_entrants(self, sandbox: Sandbox | None, program_address: str) -> None:
        """Built-in entrants (a `ziggurat bot NAME --remote` process each) and program entrants
        (confined in a sandbox of their own, as a tournament's ``keep_alive`` programs are),
        kept running: relaunched when they exit."""
        for entrant in self.config.entrants:
            if entrant.builtin is None and not entrant.argv:
                continue
            bot_env = {
                "ZIGGURAT_BOT_NAME": entrant.name,
                "ZIGGURAT_BOT_TOKEN": self._builtin_tokens[entrant.name],
            }
            confine: Callable[[dict[str, str]], Confinement] | None = None
            cwd: str | None = None
            if entrant.builtin is not None:
                argv = [sys.executable, "-m", "ziggurat.cli.main", "bot", entrant.builtin, "--remote"]
                argv += ["--server", self.address, "--max-matches", str(self.config.games_per_entrant)]
                for key, value in entrant.options:
                    argv += ["--bot-option", f"{key}={value}"]
                env = {**os.environ, **bot_env, "ZIGGURAT_PARENT_PID": str(os.getpid())}
            else:
                argv = list(entrant.argv)
                cwd = str(entrant.cwd) if entrant.cwd else None
                program_env = {**dict(entrant.env), **bot_env, "ZIGGURAT_SERVER": program_address}
                if sandbox is not None:
                    env = {}
                    confine = functools.partial(
                        _confine_launch,
                        sandbox,
                        argv,
                        cwd=cwd,
                        env=program_env,
                        label=f"arena-{entrant.name}",
                        read_only=entrant.read_only,
                        hide=self._foreign_paths(entrant.name),
                    )
                else:  # the operator turned the sandbox off: programs it trusts
                    env = {**os.environ, **program_env, "ZIGGURAT_PARENT_PID": str(os.getpid())}
            launched = _Launched(
                entrant.name,
                argv,
                env,
                cwd,
                self.log_dir / f"{entrant.name}.log",
                exits=self._exits,
                bot_name=entrant.name,
                confine=confine,
            )
            self.log_dir.mkdir(parents=True, exist_ok=True)
            launched.start()
            self._launched.append(launched)

    def _foreign_paths(self, name: str) -> tuple[Path, ...]:
        """The files of every other program entrant: this one's sandbox hides them."""
        out: list[Path] = []
        for other in self.config.entrants:
            if other.name != name and other.argv:
                out += named_paths(other.argv, other.cwd, other.read_only)
        return tuple(dict.fromkeys(out))

    # Recovery ----------------------------------------------------------------------------
    def _recover(self, server: ZigguratServer) -> None:
        """Games left ``playing`` by a crash: rated from the log when their match had ended,
        otherwise their match is aborted and the game is void."""
        assert self.store is not None
        ladders, _ = rebuild_ladders(self.config, self.store)
        for row in sorted(self.store.games(status="playing"), key=lambda r: r.number):
            match = None
            if row.match_id:
                with contextlib.suppress(ApiError):
                    match = server.manager.get(row.match_id)
            outcome = match.outcome() if match is not None else None
            if match is not None and outcome is not None and outcome.termination != Termination.ABORTED:
                result = game_result(_spec(row), match, {})
                ladder = ladders.setdefault(row.game, Ladder(row.game))
                if self._commit_rating(ladder, row.number, row.seats, result) is not None:
                    log.info("game %d (match %s) ended before the crash: rated now", row.number, row.match_id)
                continue
            if match is not None and match.status != "finished":
                match.abort()
            self.store.void(row.number, "cut off by a stop or crash of the server")
            log.info("game %d (match %s) was cut off: void", row.number, row.match_id)

    # Pairing -----------------------------------------------------------------------------
    async def _pair_until_stopped(self, host: GameHost) -> None:
        assert self.store is not None
        while not self._stop.is_set():
            try:
                self._read_controls()
            except sqlite3.Error as error:  # a locked database: pair with what is known
                log.warning("arena controls unreadable: %s", error)
            if self._stop.is_set():
                break
            if self.state.status == "running":
                self._pair_round(host)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), self.config.pairing_interval_s)
        self.state.status = "stopping"

    def _read_controls(self) -> None:
        assert self.store is not None
        if self.store.control("stop"):
            self._stop.set()
        self.state.status = "paused" if self.store.control("paused") else "running"
        self._read_entrants()

    def _connected_lines(self) -> dict[str, Any]:
        """Connected lines (bot name -> connection), noting new versions as they appear."""
        assert self.server is not None and self.store is not None
        out: dict[str, Any] = {}
        for connection in list(self.server.bots.connected.values()):
            line = connection.name
            key = self.state.line_entrant(line)
            if key not in self.state.entrant_states:
                continue
            version = line.partition("@")[2]
            if version not in self.state.versions.get(key, []):
                earlier = self.state.versions.get(key, [])
                if self.store.note_version(key, version) and earlier:
                    self._say(
                        f"arena: {line} connected: a new version of {self.state.entrant_names[key]}; "
                        f"its line {_line_name(self.state.entrant_names[key], earlier[-1])} is superseded"
                    )
                self.state.versions = self.store.versions()
            out[line] = connection
        self.state.connected = set(out)
        return out

    def _pair_round(self, host: GameHost) -> None:
        config = self.config
        connected = self._connected_lines()
        now = time.monotonic()
        busy_entrants: dict[str, int] = {}
        for game in self.state.live.values():
            for line in game.seats:
                key = self.state.line_entrant(line)
                busy_entrants[key] = busy_entrants.get(key, 0) + 1
        free: dict[str, float] = {}
        for line, connection in connected.items():
            key = self.state.line_entrant(line)
            room = min(config.games_per_entrant, connection.max_matches) - busy_entrants.get(key, 0)
            if self.state.line_state(line) == "active" and room > 0:
                free[line] = self._free_since.setdefault(line, now)
            else:
                self._free_since.pop(line, None)
        for line in list(self._free_since):
            if line not in free:
                del self._free_since[line]
        seated: set[str] = set()
        # The ladder with the fewest rated games picks first, so that one game does not take
        # every free entrant round after round.
        order = sorted(
            config.ladders,
            key=lambda lc: sum(self.state.ladders.get(lc.game, Ladder(lc.game)).games_by_size.values()),
        )
        for ladder_config in order:
            if len(self.state.live) >= config.max_games:
                break
            ladder = self.state.ladders.setdefault(ladder_config.game, Ladder(ladder_config.game))
            candidates = [
                Candidate(line, since)
                for line, since in free.items()
                if line not in seated and connected[line].plays(ladder_config.game)
            ]
            for table in pair(
                ladder, candidates, ladder_config.table_sizes, repeat_window=config.repeat_window
            ):
                if len(self.state.live) >= config.max_games:
                    break
                seated.update(table)
                self._start_game(host, ladder_config.game, table, now)

    def _start_game(self, host: GameHost, game: str, table: tuple[str, ...], now: float) -> None:
        assert self.store is not None
        waited = [int((now - self._free_since.pop(line, now)) * 1000) for line in table]
        try:
            number = self.store.add_game(game, list(table), waited)
        except sqlite3.Error as error:
            log.warning("cannot record a new game (%s): not seated", error)
            return
        live = LiveGame(number, game, table, now_ms())
        self.state.live[number] = live
        live.task = asyncio.create_task(self._play(host, live), name=f"arena game {number}")
        log.info("game %d: %s %s", number, game, " vs ".join(table))

    async def _play(self, host: GameHost, live: LiveGame) -> None:
        assert self.store is not None
        spec = GameSpec(
            index=live.number,
            round=0,
            game=live.game,
            options=NO_OPTIONS,
            seats=live.seats,
            seed=secrets.token_bytes(32),
            opening=(),
            pair=None,
            deal=None,
            bot_seeds=tuple(secrets.randbits(63) for _ in live.seats),
        )
        seatings = {line: Seating("bot", bot_name=line) for line in live.seats}
        store = self.store

        def started(match_id: str) -> None:
            live.match_id = match_id
            store.set_match(live.number, match_id)

        try:
            result = await play_game(spec, host, seatings, on_started=started)
        except (ShutdownError, ApiError, asyncio.CancelledError) as error:
            self._void(live, f"not played to its end: {error or 'stopped'}")
            if isinstance(error, asyncio.CancelledError):
                raise
            return
        except Exception:
            log.exception("game %d failed", live.number)
            self._void(live, "the arena could not play it (logged)")
            return
        if result["termination"] == Termination.ABORTED.value:
            self._void(live, "aborted")
            return
        ladder = self.state.ladders.setdefault(live.game, Ladder(live.game))
        while self._commit_rating(ladder, live.number, live.seats, result) is None and self._pending(live):
            await asyncio.sleep(RATE_RETRY_SECONDS)
        self._end(live)

    def _end(self, live: LiveGame) -> None:
        """The game is over for the arena: its lines are free from now (the pairing delay a
        game records runs from here, or from the round that first saw a line connected)."""
        self.state.live.pop(live.number, None)
        now = time.monotonic()
        for line in live.seats:
            self._free_since.setdefault(line, now)

    def _pending(self, live: LiveGame) -> bool:
        """The game is still playing in the database (a refused rating is tried again)."""
        assert self.store is not None
        with contextlib.suppress(sqlite3.Error):
            rows = [r for r in self.store.games(status="playing") if r.number == live.number]
            return bool(rows)
        return True

    def _void(self, live: LiveGame, why: str) -> None:
        assert self.store is not None
        with contextlib.suppress(sqlite3.Error):
            self.store.void(live.number, why)
        self._end(live)
        log.info("game %d is void: %s", live.number, why)

    def _commit_rating(
        self, ladder: Ladder, number: int, seats: tuple[str, ...], result: dict[str, Any]
    ) -> int | None:
        """Rate a game: the new ratings are committed first, then the ladder in memory moves.
        None when the database refused (nothing changed) or the game was rated already."""
        assert self.store is not None
        ranks = dict(zip(seats, result["ranks"], strict=True))
        after = ladder.preview(ranks)
        ratings = [
            {"before": [ladder.line(n).mu, ladder.line(n).sigma], "after": list(after[n])} for n in seats
        ]
        end_ms = int(result.get("end_ms") or now_ms())
        try:
            order = self.store.rate(number, result, ratings, end_ms)
        except sqlite3.Error as error:
            log.warning("game %d: the rating was not recorded (%s); tried again", number, error)
            return None
        if order is not None:
            ladder.apply(seats, result["ranks"], after, end_ms)
            self.state.games_rated += 1
        return order

    async def _finish_live_games(self) -> None:
        """On stop: the games in progress get ``stop_grace_s`` to end; the rest are void."""
        tasks = [g.task for g in self.state.live.values() if g.task is not None]
        if not tasks:
            return
        self._say(
            f"arena: stopping; {len(tasks)} games in progress get {self.config.stop_grace_s:g} s to end "
            "(a second Ctrl-C voids them now)"
        )
        loop = asyncio.get_running_loop()
        second = asyncio.Event()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, second.set)
        waiter = asyncio.ensure_future(second.wait())
        ended = asyncio.ensure_future(asyncio.wait(tasks))
        await asyncio.wait(
            [ended, waiter], timeout=self.config.stop_grace_s, return_when=asyncio.FIRST_COMPLETED
        )
        waiter.cancel()
        ended.cancel()
        for live in list(self.state.live.values()):
            if live.match_id and self.server is not None:
                with contextlib.suppress(ApiError, sqlite3.Error):
                    match = self.server.manager.get(live.match_id)
                    if match.status != "finished":
                        match.abort()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def _spec(row: GameRow) -> GameSpec:
    """The spec of a stored game (enough for :func:`game_result`)."""
    return GameSpec(
        index=row.number,
        round=0,
        game=row.game,
        options=NO_OPTIONS,
        seats=row.seats,
        seed=b"",
        opening=(),
        pair=None,
        deal=None,
        bot_seeds=(),
    )


def _line_name(entrant: str, version: str) -> str:
    return f"{entrant}@{version}" if version else entrant
