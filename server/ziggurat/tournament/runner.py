"""Running a tournament headless: its own server, its participants, the schedule, the results.

The runner starts a ziggurat server on the tournament's database (so every match,
event and result lives in one file), launches the participants that must be
launched (built-in bots and ``keep_alive`` programs connect back as remote bots
and are restarted if they die), then plays the schedule ``concurrency`` games at a
time. Results are committed as each game ends. ``resume`` after a crash or kill -9
aborts the matches that were cut off and plays those games again from the start
with fresh seeds (a whole duplicate deal when one of its rotations was cut off:
see :mod:`ziggurat.tournament.sealed`), so no game is lost or counted twice.
Where games are played is an executor (:mod:`ziggurat.tournament.executors`): on this
server (default), or as Ray tasks on a cluster (``--executor ray``), whose finished matches are imported here.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import hmac
import logging
import os
import secrets
import shutil
import sys
import tempfile
import tomllib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ziggurat.core.match import hash_token
from ziggurat.hosting.server import ExtraService, ServeOptions, ZigguratServer
from ziggurat.tournament import sealed
from ziggurat.tournament.cgroups import CgroupUnavailable
from ziggurat.tournament.config import ConfigError, Participant, TournamentConfig, parse_config
from ziggurat.tournament.cores import oversubscription, usable_cores
from ziggurat.tournament.executors import (
    EXECUTORS,
    Executor,
    LocalExecutor,
    RayExecutor,
    check_ray_config,
    entrants_of,
)
from ziggurat.tournament.games import DealBarrier, GameHost, Seating, forfeit_result, stop_process
from ziggurat.tournament.preflight import Entrant, Setting, preflight
from ziggurat.tournament.progress import Progress
from ziggurat.tournament.results import (
    disqualified,
    failure_counts,
    format_elo_table,
    format_head_to_head,
    format_standings,
    game_line,
    game_points,
    head_to_head,
    pairings_to_test,
    pairwise_elo,
    standings,
    withdrawals,
)
from ziggurat.tournament.sandbox import Confinement, Sandbox, SandboxUnavailable, named_paths
from ziggurat.tournament.schedule import GameSpec, plan, swiss_round
from ziggurat.tournament.servicer import TournamentServicer
from ziggurat.tournament.store import GameRow, TournamentStore
from ziggurat.v1 import tournament_service_pb2, tournament_service_pb2_grpc
from ziggurat_client.client import ZigguratClient

log = logging.getLogger("ziggurat.tournament")

RESTART_DELAY = 0.5
SOCKET_NAME = "server.sock"
SERVER_GRACE_SECONDS = 0.5
# After the end, the live page stays up this long (final standings) unless interrupted.
PAGE_LINGER_SECONDS = 300.0
TOURNAMENT_SERVICE = tournament_service_pb2.DESCRIPTOR.services_by_name["TournamentService"]


def spec_to_dict(spec: GameSpec) -> dict[str, Any]:
    """A schedule entry in its stored (JSON) form."""
    return {
        "index": spec.index,
        "round": spec.round,
        "game": spec.game,
        "options": dict(spec.options),
        "seats": list(spec.seats),
        "seed": spec.seed.hex(),
        "opening": list(spec.opening),
        "pair": spec.pair,
        "deal": spec.deal,
        "bot_seeds": list(spec.bot_seeds),
    }


def spec_from_dict(data: dict[str, Any]) -> GameSpec:
    """Inverse of :func:`spec_to_dict`."""
    return GameSpec(
        index=data["index"],
        round=data["round"],
        game=data["game"],
        options=dict(data["options"]),
        seats=tuple(data["seats"]),
        seed=bytes.fromhex(data["seed"]),
        opening=tuple(data["opening"]),
        pair=data["pair"],
        deal=data["deal"],
        bot_seeds=tuple(data["bot_seeds"]),
    )


def load_tournament_config(config_text: str, config_path: Path) -> TournamentConfig:
    """The configuration from its stored text (a resumed tournament ignores later edits of the file).

    Raises :class:`ConfigError` for text that is not TOML, as for TOML that is not a tournament.
    """
    try:
        data = tomllib.loads(config_text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{config_path.name}: not valid TOML: {error}") from None
    return parse_config(data, config_path.parent)


class _Launched:
    """A participant process launched once for the whole tournament, restarted when it dies.

    A confined one gets a new sandbox (``confine``) for each launch: a fresh work directory, a
    control group, a sandbox user; the old one is removed when its process has exited. Nothing
    it wrote survives a restart, so each launch is told how many came before it
    (``ZIGGURAT_RESTARTS``).
    """

    def __init__(
        self,
        name: str,
        argv: list[str],
        env: dict[str, str],
        cwd: str | None,
        log_path: Path,
        *,
        exits: dict[str, int],
        bot_name: str,
        confine: Callable[[dict[str, str]], Confinement] | None = None,
    ) -> None:
        self.name = name
        self.exits = exits  # shared with the GameHost: exits by bot name
        self.bot_name = bot_name
        self.argv = argv
        self.env = env
        self.cwd = cwd
        self.log_path = log_path
        self.confine = confine
        self.restarts = 0
        self.process: asyncio.subprocess.Process | None = None
        self.confinement: Confinement | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start supervising (launch now, relaunch after each exit)."""
        self._task = asyncio.create_task(self._supervise(), name=f"launch {self.name}")

    async def _supervise(self) -> None:
        while True:
            restarts = {"ZIGGURAT_RESTARTS": str(self.restarts)}
            argv, env, cwd = self.argv, {**self.env, **restarts}, self.cwd
            if self.confine is not None:
                try:
                    self.confinement = self.confine(restarts)
                except (SandboxUnavailable, CgroupUnavailable) as error:
                    log.error("cannot launch %s: no sandbox: %s", self.name, error)
                    return
                argv, env, cwd = self.confinement.argv, self.confinement.env, None
            with self.log_path.open("ab") as output:

                def note(line: str) -> None:
                    log.warning("%s: %s", self.name, line)
                    output.write(f"ziggurat: {line}\n".encode())
                    output.flush()

                try:
                    self.process = await asyncio.create_subprocess_exec(
                        *argv, env=env, cwd=cwd, stdout=output, stderr=output, start_new_session=True
                    )
                except OSError as error:
                    log.error("cannot launch %s: %s", self.name, error)
                    await self._close_sandbox()
                    return
                watch = None
                if self.confinement is not None:
                    watch = asyncio.create_task(self.confinement.watch_memory(note))
                try:
                    code = await self.process.wait()
                finally:
                    if watch is not None:
                        watch.cancel()
            await self._close_sandbox()
            self.exits[self.bot_name] = self.exits.get(self.bot_name, 0) + 1
            self.restarts += 1
            log.warning("%s exited with %s; restarting it", self.name, code)
            await asyncio.sleep(RESTART_DELAY)

    async def _close_sandbox(self) -> None:
        if self.confinement is not None:
            confinement, self.confinement = self.confinement, None
            await asyncio.shield(confinement.close())

    async def stop(self) -> None:
        """Stop supervising and terminate the process (and remove its sandbox)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.process is not None:
            await stop_process(self.process)
        await self._close_sandbox()


class TournamentRunner:
    """Runs (or resumes) one tournament to its end."""

    def __init__(
        self,
        db_path: Path,
        *,
        config_text: str,
        config_path: Path,
        tournament_id: str | None = None,
        listen: str | None = None,
        http_port: int | None = None,
        page_linger: float = PAGE_LINGER_SECONDS,
        show_progress: bool = True,
        on_result: Callable[[dict[str, Any]], None] | None = None,
        executor: str = "local",
        ray_address: str | None = None,
        seed_text: str | None = None,
    ) -> None:
        if executor not in EXECUTORS:
            raise ValueError(f"unknown executor {executor!r} (known: {', '.join(EXECUTORS)})")
        self.db_path = db_path
        self.config_text = config_text
        self.config_path = config_path
        self.config = load_tournament_config(config_text, config_path)
        if executor == "ray":
            check_ray_config(self.config)
        self.executor = executor
        self.ray_address = ray_address
        self.store = TournamentStore(db_path)
        self.tournament_id = tournament_id or secrets.token_hex(6)
        self.resuming = tournament_id is not None
        stored_secret = self.store.secret(self.tournament_id) if self.resuming else None
        if stored_secret is not None:
            self.secret = stored_secret
        else:
            self.secret = sealed.secret_from_text(seed_text) if seed_text is not None else sealed.new_secret()
        self.listen = listen or self.config.listen
        # the live tournament page: the flag, else the configuration's [server] http_port
        self.http_port = http_port if http_port is not None else self.config.http_port
        self.page_url: str | None = None  # the live page's address, once served
        self.page_linger = page_linger
        self.finished = False  # the schedule was played to its end (or an SPRT stop)
        self.show_progress = show_progress
        self.on_result = on_result
        self.log_dir = db_path.parent / f"{db_path.stem}-logs" / self.tournament_id
        self.disqualified: set[str] = set()
        self.address: str | None = None  # where the tournament's server listens, once started
        self._launched: list[_Launched] = []
        self.exits: dict[str, int] = {}  # exits of launched remote bots, by bot name
        # duplicate deals: the rotations of a deal run together and their reveals wait for all
        self.barrier = DealBarrier() if self.config.duplicate else None  # only a game that deals has it
        self.server: ZigguratServer | None = None

    def bot_name(self, participant: Participant) -> str:
        """The registry name a participant plays under (tournament-scoped for what we launch)."""
        if participant.kind == "remote":
            return participant.name
        return f"{self.tournament_id}/{participant.name}"

    def bot_token(self, participant: Participant) -> str:
        """A token for what the tournament launches: stable across resume, and from the secret, since
        anyone holding it could play under that participant's name."""
        material = f"ziggurat-tournament-bot/{self.tournament_id}/{participant.name}".encode()
        return hmac.new(self.secret, material, hashlib.sha256).hexdigest()

    def _needs_sandbox(self) -> bool:
        return self.config.sandbox.enabled and any(
            p.kind in ("command", "stdio") for p in self.config.participants
        )

    async def run(self) -> str:
        """Play every game not yet played; returns why the tournament stopped."""
        config = self.config
        sandbox: Sandbox | None = None
        socket_dir: Path | None = None
        if self._needs_sandbox() and self.executor == "local":
            # a short path (sun_path holds 108 bytes), readable by the sandboxes' users
            socket_dir = Path(tempfile.mkdtemp(prefix="ziggurat-t-"))
            socket_dir.chmod(0o755)
            sandbox = Sandbox(
                config.sandbox, hidden=self._hidden_paths(), socket_dir=socket_dir, name=self.tournament_id
            )
            try:
                sandbox.check()  # SandboxUnavailable: say so before anything is created
                for participant in config.participants:
                    sandbox.refuse_databases(participant.name, participant.read_only)
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

    def _hidden_paths(self) -> list[Path]:
        """What no sandbox may read: the database (it holds the secret) and the logs."""
        db = self.db_path.resolve()
        logs = db.parent / f"{db.stem}-logs"
        return [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm"), logs]

    async def _run(self, sandbox: Sandbox | None, socket_dir: Path | None) -> str:
        config = self.config
        if self.resuming and self.store.get(self.tournament_id) is None:
            raise ValueError(f"no tournament {self.tournament_id!r} in {self.db_path}")
        host, port = self.listen.rsplit(":", 1)
        # First, so that a database another process owns is refused before anything is written.
        server = ZigguratServer(
            ServeOptions(
                host=host,
                port=int(port),
                db_path=str(self.db_path),
                rate_per_seat=0,
                mdns=False,
                # at the end every game is over: only idle remote-bot streams are left to cut
                grace_seconds=SERVER_GRACE_SECONDS,
                unix_socket=str(socket_dir / SOCKET_NAME) if socket_dir is not None else None,
                http_port=self.http_port,
                # participants play their own seats and nothing else (docs/tournaments.md)
                competition=True,
            )
        )
        server.add_service(
            ExtraService(
                TOURNAMENT_SERVICE,
                TournamentServicer(self.store, self.tournament_id, config),
                tournament_service_pb2_grpc.add_TournamentServiceServicer_to_server,
            )
        )
        self.log_dir.mkdir(parents=True, exist_ok=True)
        bound = await server.start()
        self.server = server
        if socket_dir is not None:
            (socket_dir / SOCKET_NAME).chmod(0o777)  # sandboxes run as users of their own
        address = f"127.0.0.1:{bound}" if host in ("0.0.0.0", "::", "") else f"{host}:{bound}"
        self.address = address
        log.info("tournament %s (%s): server on %s", self.tournament_id, config.name, address)
        print(
            f"tournament {self.tournament_id}: {config.name} — server {address}", file=sys.stderr, flush=True
        )
        crowded = oversubscription(config, usable_cores()) if self.executor != "ray" else None
        if crowded is not None:  # games on Ray run on the workers' cores, not this machine's
            print(f"tournament {self.tournament_id}: warning: {crowded}", file=sys.stderr, flush=True)
        if server.http_port is not None:
            page_host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
            scheme = server.options.web_scheme
            self.page_url = f"{scheme}://{page_host}:{server.http_port}/#/tournament/{self.tournament_id}"
            log.info("tournament %s: live page %s", self.tournament_id, self.page_url)
            print(f"tournament {self.tournament_id}: live page {self.page_url}", file=sys.stderr, flush=True)
        self._replay_cut_off(server)
        self._preregister(server)
        client = ZigguratClient(address)
        executor: Executor | None = None
        try:
            max_illegal = max(1, config.time_control.max_illegal_moves or 3)
            if self.executor == "ray":
                # Games run on Ray workers with their own servers; this one keeps the records.
                executor = RayExecutor(
                    address=self.ray_address,
                    entrants=entrants_of(config, self.bot_name, self.bot_token),
                    time_control=config.time_control,
                    max_illegal=max_illegal,
                    store=server.store,
                    log_dir=self.log_dir,
                )
            else:
                program_address = f"unix:{socket_dir / SOCKET_NAME}" if socket_dir is not None else ""
                self._launch_participants(address, sandbox, program_address)
                game_host = GameHost(
                    manager=server.manager,
                    bots=server.bots,
                    address=address,
                    client=client,
                    time_control=config.time_control,
                    log_dir=self.log_dir,
                    max_illegal=max_illegal,
                    sandbox=sandbox,
                    program_address=program_address,
                    exits=self.exits,
                    barrier=self.barrier,
                )
                # every program starts and says it is ready before the tournament is recorded
                await self._preflight(game_host)
                executor = LocalExecutor(game_host, self.seatings())
            if self.resuming:
                if self.store.secret(self.tournament_id) is None:  # stored before secrets were kept
                    self.store.set_secret(self.tournament_id, self.secret)
            else:
                self.store.create(
                    self.tournament_id, config.name, str(self.config_path), self.config_text, self.secret
                )
            await executor.start()
            return await self._play_all(executor)
        finally:
            if executor is not None:
                await executor.stop()
            for launched in self._launched:
                await launched.stop()
            await client.close()
            try:
                await self._linger(server)
            finally:
                await server.stop()
                self.store.close()

    async def _linger(self, server: ZigguratServer) -> None:
        """With a live page, keep it up a while after the end so people can read the final standings."""
        if not self.finished or server.http_port is None or self.page_linger <= 0:
            return
        print(
            f"tournament {self.tournament_id}: the live page shows the final standings for "
            f"{self.page_linger:g} s more (Ctrl-C stops it now): {self.page_url}",
            file=sys.stderr,
            flush=True,
        )
        await asyncio.sleep(self.page_linger)

    def _replay_cut_off(self, server: ZigguratServer) -> None:
        """Abort the matches a crash cut off and schedule their games again with fresh seeds.

        Aborting a match publishes its seed, so the replay is a new attempt with a new one. A
        duplicate deal is one unit: when any rotation was cut off, every rotation of the deal is
        replayed with the new deal seed (results already in are dropped), or the rotations would
        no longer share a deal.
        """
        rows = self.store.games(self.tournament_id)
        cut_off = [row for row in rows if row.status == "running"]
        if not cut_off:
            return
        for row in cut_off:
            if row.match_id is None:
                continue
            match = server.manager.get(row.match_id)
            if match.status != "finished":
                match.abort()
                log.info("aborted match %s cut off by the previous run; its game is replayed", row.match_id)
        deals = {row.spec["deal"] for row in cut_off if row.spec.get("deal") is not None}
        again = [row for row in rows if row.status == "running" or row.spec.get("deal") in deals - {None}]
        attempt_of: dict[object, int] = {}
        for row in again:
            key = row.spec.get("deal") if row.spec.get("deal") is not None else ("game", row.index)
            attempt_of[key] = max(attempt_of.get(key, 0), row.attempt + 1)
        replays = []
        for row in again:
            key = row.spec.get("deal") if row.spec.get("deal") is not None else ("game", row.index)
            attempt = attempt_of[key]
            spec = spec_from_dict(row.spec)
            fresh = dataclasses.replace(
                spec,
                seed=sealed.game_seed(self.secret, spec.index, spec.deal, attempt),
                bot_seeds=sealed.bot_seeds(self.secret, spec.index, len(spec.seats), attempt),
            )
            replays.append((row.index, attempt, spec_to_dict(fresh)))
        self.store.replay(self.tournament_id, replays, "cut off")

    def _hosted(self, participant: Participant) -> bool:
        """A built-in bot played by one host process for the whole tournament (a remote bot the
        tournament launches). In a duplicate tournament each of its games gets a fresh process
        instead (:meth:`seatings`): one process playing two rotations of a deal would know it."""
        return participant.kind == "builtin" and not self.config.duplicate

    def _preregister(self, server: ZigguratServer) -> None:
        """Every name the tournament's bots play under belongs to its token before anyone connects:
        the tokens the organiser issued to remote participants, its own for what it launches."""
        for participant in self.config.participants:
            if participant.kind == "remote":
                server.preregister_bot(participant.name, participant.token_sha256)
            elif self._hosted(participant) or participant.keep_alive:
                server.preregister_bot(self.bot_name(participant), hash_token(self.bot_token(participant)))

    def _launch_participants(self, address: str, sandbox: Sandbox | None, program_address: str) -> None:
        """Start the built-in bots and ``keep_alive`` programs (bot tokens in the environment)."""
        for participant in self.config.participants:
            confine: Callable[[dict[str, str]], Confinement] | None = None
            bot_env = {
                "ZIGGURAT_BOT_NAME": self.bot_name(participant),
                "ZIGGURAT_BOT_TOKEN": self.bot_token(participant),
            }
            if self._hosted(participant):
                argv = [
                    sys.executable,
                    "-m",
                    "ziggurat.cli.main",
                    "bot",
                    str(participant.builtin),
                    "--remote",
                ]
                # the rotations of a deal run together: a bot plays every seat of its table at once
                at_once = self.config.concurrency * (self.config.seats if self.barrier is not None else 1)
                argv += ["--server", address, "--max-matches", str(at_once)]
                for key, value in participant.options.items():
                    argv += ["--bot-option", f"{key}={value}"]
                env = {**os.environ, **bot_env, "ZIGGURAT_PARENT_PID": str(os.getpid())}
                cwd = None
            elif participant.kind == "command" and participant.keep_alive:
                argv = list(participant.argv)
                cwd = str(participant.cwd) if participant.cwd else None
                env = {}
                if sandbox is not None:
                    # no ZIGGURAT_PARENT_PID: the sandbox dies with the tournament by itself
                    confine = functools.partial(
                        _confine_launch,
                        sandbox,
                        argv,
                        cwd=cwd,
                        env={**participant.env, **bot_env, "ZIGGURAT_SERVER": program_address},
                        label=f"keep-alive-{participant.name}",
                        read_only=participant.read_only,
                        hide=self._foreign_paths(participant),
                    )
                else:
                    env = {
                        **os.environ,
                        **participant.env,
                        **bot_env,
                        "ZIGGURAT_SERVER": address,
                        "ZIGGURAT_PARENT_PID": str(os.getpid()),
                    }
            else:
                continue
            launched = _Launched(
                participant.name,
                argv,
                env,
                cwd,
                self._launch_log(participant),
                exits=self.exits,
                bot_name=self.bot_name(participant),
                confine=confine,
            )
            launched.start()
            self._launched.append(launched)

    def _launch_log(self, participant: Participant) -> Path:
        """Where a launched participant's output goes (all its launches)."""
        return self.log_dir / f"{participant.name.replace('/', '_')}.log"

    def _foreign_paths(self, participant: Participant) -> tuple[Path, ...]:
        """The files of every other program participant: ``participant``'s sandbox hides them."""
        out: list[Path] = []
        for other in self.config.participants:
            if other.name != participant.name and other.kind in ("command", "stdio"):
                out += named_paths(other.argv, other.cwd, other.read_only)
        return tuple(dict.fromkeys(out))

    async def _preflight(self, host: GameHost) -> None:
        """Start every program once in its sandbox; PreflightError when one cannot say it is ready."""
        seatings = self.seatings()
        entrants = []
        for participant in self.config.participants:
            if participant.kind not in ("command", "stdio"):
                continue
            entrants.append(
                Entrant(participant.name, seatings[participant.name], self._launch_log(participant))
            )
        if not entrants:
            return
        setting = Setting(self.config.game, self.config.seats, dict(self.config.options))
        await preflight(entrants, host, setting, self.config.sandbox.preflight_seconds)

    def seatings(self) -> dict[str, Seating]:
        """How each participant takes a seat."""
        out: dict[str, Seating] = {}
        for p in self.config.participants:
            cwd = str(p.cwd) if p.cwd else None
            if p.kind == "builtin" and not self._hosted(p):
                # a fresh `ziggurat bot NAME` process per game, on the seat the environment names;
                # our own code, so not confined (it remembers nothing: it writes nothing)
                argv = [sys.executable, "-m", "ziggurat.cli.main", "bot", str(p.builtin)]
                for key, value in p.options.items():
                    argv += ["--bot-option", f"{key}={value}"]
                out[p.name] = Seating("command", argv=tuple(argv), trusted=True)
            elif p.kind in ("builtin", "remote") or (p.kind == "command" and p.keep_alive):
                out[p.name] = Seating("bot", bot_name=self.bot_name(p))
            else:
                out[p.name] = Seating(
                    "command" if p.kind == "command" else "stdio",
                    argv=p.argv,
                    cwd=cwd,
                    env=dict(p.env),
                    read_only=p.read_only,
                    hide=self._foreign_paths(p),
                )
        return out

    def _schedule_more(self) -> bool:
        """Add the next games (the whole plan, or the next Swiss round); False when there are none."""
        rows = self.store.games(self.tournament_id)
        if not rows:
            specs = plan(self.config, secret=self.secret)
        elif self.config.format == "swiss":
            if any(row.status != "done" for row in rows):
                return False
            current = max(row.round for row in rows)
            if current >= self.config.rounds:
                return False
            results = [(spec_from_dict(row.spec), row.result["ranks"]) for row in rows if row.result]
            out = withdrawals([row.result for row in rows if row.result], self.config.max_failures)
            specs = swiss_round(self.config, current + 1, results, secret=self.secret, withdrawn=out)
        else:
            return False
        self.store.add_games(self.tournament_id, [(s.index, s.round, spec_to_dict(s)) for s in specs])
        return bool(specs)

    def _results(self) -> list[dict[str, Any]]:
        return [row.result for row in self.store.games(self.tournament_id) if row.result is not None]

    def _update_disqualified(self, results: list[dict[str, Any]]) -> None:
        counts = failure_counts(results)
        for name in sorted(disqualified(results, self.config.max_failures) - self.disqualified):
            log.warning("%s disqualified after %d failures", name, counts[name])
            print(f"{name} is disqualified after {counts[name]} failures", file=sys.stderr, flush=True)
            self.disqualified.add(name)

    def _pairings(self) -> list[tuple[str, str]]:
        return pairings_to_test(list(self.config.names), self.config.seats, self.config.champion)

    def _sprt_stop(self, by_pair: dict[tuple[str, str], list[dict[str, Any]]]) -> str | None:
        """Why to stop: the SPRT of a two-participant match decided, or of every gauntlet pairing."""
        params = self.config.sprt
        if params is None:
            return None
        decisions = []
        for first, second in self._pairings():
            decision = head_to_head(first, second, by_pair.get((first, second), []), params).sprt
            if decision is None or decision.decision == "continue":
                return None
            decisions.append(f"{second}: {decision.decision} (LLR {decision.llr:.2f})")
        if len(decisions) == 1:
            return "sprt: " + decisions[0].split(": ", 1)[1]
        return "sprt: every pairing decided (" + "; ".join(decisions) + ")"

    def _report(self, result: dict[str, Any], by_pair: dict[tuple[str, str], list[dict[str, Any]]]) -> None:
        """A line per finished game and, for the pairings followed, the running Elo, LOS and SPRT."""
        print(game_line(result), flush=True)
        for first, second in self._pairings():
            if set(result["seats"]) == {first, second}:
                games = by_pair.setdefault((first, second), [])
                games.append(result)
                h2h = head_to_head(first, second, games, self.config.sprt)
                if h2h.trinomial.games:
                    print(format_head_to_head(h2h), flush=True)

    async def _play_all(self, executor: Executor) -> str:
        # Everything the loop needs is kept in memory and updated game by game: re-reading
        # every row (and parsing every result) after each game made a tournament quadratic.
        names = [p.name for p in self.config.participants]
        self._schedule_more()
        rows = self.store.games(self.tournament_id)
        results = [row.result for row in rows if row.result is not None]
        queue = [row for row in rows if row.status == "pending"]
        total = len(rows)
        points = dict.fromkeys(names, 0.0)
        for result in results:
            _add_points(points, result)
        self._update_disqualified(results)
        progress = Progress(total) if self.show_progress else None
        running: dict[asyncio.Task[dict[str, Any]], GameRow] = {}
        by_pair: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for first, second in self._pairings():
            by_pair[first, second] = [r for r in results if set(r["seats"]) == {first, second}]
        stop_reason: str | None = self._sprt_stop(by_pair)
        try:
            while True:
                if self.barrier is not None:
                    self.barrier.sizes.update(
                        Counter(r.spec["deal"] for r in queue if r.spec.get("deal") is not None)
                    )
                while stop_reason is None and queue and len(running) < self.config.concurrency:
                    lead = queue.pop(0)
                    batch = [lead]
                    if self.barrier is not None and lead.spec.get("deal") is not None:
                        # every rotation of a deal at once: their ends are revealed together
                        batch += [r for r in queue if r.spec.get("deal") == lead.spec["deal"]]
                        queue = [r for r in queue if r not in batch]
                    for scheduled in batch:
                        spec = spec_from_dict(scheduled.spec)

                        def started(match_id: str, index: int = scheduled.index) -> None:
                            self.store.start_game(self.tournament_id, index, match_id)

                        if set(spec.seats) <= self.disqualified:  # nobody comes: nothing to play
                            task = asyncio.create_task(_forfeited(spec))
                        else:
                            task = asyncio.create_task(
                                executor.play(
                                    spec, disqualified=frozenset(self.disqualified), on_started=started
                                )
                            )
                        running[task] = scheduled
                if not running:
                    if stop_reason is None and self._schedule_more():
                        rows = self.store.games(self.tournament_id)
                        queue = [row for row in rows if row.status == "pending"]
                        total = len(rows)
                        continue
                    break
                done, _ = await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    finished = running.pop(task)
                    result = task.result()
                    result["attempt"] = finished.attempt
                    result["replaced"] = self.store.attempts(self.tournament_id, finished.index)
                    result["points"] = game_points(result)  # recorded as the standings count it
                    self.store.finish_game(self.tournament_id, finished.index, result)
                    results.append(result)
                    _add_points(points, result)
                    self._report(result, by_pair)
                    if self.on_result is not None:
                        self.on_result(result)
                self._update_disqualified(results)
                stop_reason = stop_reason or self._sprt_stop(by_pair)
                if progress is not None:
                    leader = max(names, key=lambda name: points[name]) if results else "-"
                    progress.update(len(results), total, f"{leader} ({points[leader]:g})" if results else "-")
        finally:
            # Interrupted (Ctrl-C) or failed: the games still running are stopped here and their
            # ends read, or each would report "exception never retrieved" when the server closes.
            await _cancel_all(running)
            if progress is not None:
                progress.close()
        reason = stop_reason or "completed"
        self.store.finish(self.tournament_id, reason)
        self.finished = True
        final = self._results()
        print(format_standings(standings(names, final, self.disqualified)), flush=True)
        if len(names) > 2:
            print(format_elo_table(names, pairwise_elo(names, final)), flush=True)
        print(f"tournament {self.tournament_id}: {reason}", flush=True)
        return reason


async def _forfeited(spec: GameSpec) -> dict[str, Any]:
    """The result of a game whose every seat is forfeited (see :func:`forfeit_result`)."""
    return forfeit_result(spec)


def _confine_launch(
    sandbox: Sandbox,
    argv: list[str],
    extra: dict[str, str],
    *,
    cwd: str | None,
    env: dict[str, str],
    label: str,
    read_only: tuple[Path, ...],
    hide: tuple[Path, ...],
) -> Confinement:
    """A new sandbox for one launch of a kept-alive program (``extra``: that launch's variables)."""
    return sandbox.confine(argv, cwd=cwd, env={**env, **extra}, label=label, read_only=read_only, hide=hide)


async def _cancel_all(tasks: dict[asyncio.Task[dict[str, Any]], GameRow]) -> None:
    """Cancel ``tasks`` and wait for them to end (their results or errors are not wanted)."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def _add_points(points: dict[str, float], result: dict[str, Any]) -> None:
    """Add one game's points (see :func:`ziggurat.tournament.results.game_points`) to ``points``."""
    if result["termination"] == "aborted":
        return
    for name, gained in zip(result["seats"], game_points(result), strict=True):
        points[name] = points.get(name, 0.0) + gained
