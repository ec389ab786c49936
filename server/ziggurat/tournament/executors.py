"""Where a tournament's games are played: on its own server (local) or on a Ray cluster.

The runner does not care where a game runs: it hands a :class:`~ziggurat.tournament.schedule.GameSpec`
to an :class:`Executor` and gets the same JSON-ready result dict back
(:func:`ziggurat.tournament.games.game_result`), which it commits to the same
standings either way.

* :class:`LocalExecutor` is the default: :func:`~ziggurat.tournament.games.play_game`
  against the tournament's own server, with the participants the runner launched.
* :class:`RayExecutor` (``--executor ray``, extra ``ziggurat[ray]``) sends each game
  to a Ray worker as a task. The worker is self-sufficient: it starts a throw-away
  server (temporary database, loopback, random port), plays built-in bots as remote
  bots (the search bots think in worker processes, :mod:`ziggurat.bots.workers`, never on
  the worker's server loop), launches ``command``/``stdio`` programs *there*, plays the game
  with the very same ``play_game``, and returns the result together with the
  match's stored row and event log. The driver imports that match into the
  tournament database, so records, replays and ``ziggurat verify`` work from the
  main database exactly as for a local game. A game is a pure function of its spec
  (set-up seed, opening, bot seeds), so a task Ray retries or a game resume replays
  gives the same result. ``remote`` participants connect to the tournament's server
  by themselves and cannot follow a game onto a worker: they are refused.

On a real cluster every worker node needs ziggurat installed (same version) and the
programs of ``command``/``stdio`` participants at the same absolute paths as in the
configuration (a shared file system, or the same checkout everywhere): nothing is
shipped with the task but the game itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import logging
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ziggurat.bots import make_bot
from ziggurat.bots.workers import SEARCH_BOTS, SearchPool
from ziggurat.core.match import hash_token
from ziggurat.core.timecontrol import TimeControl
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.store.sqlite import Store, StoredMatch
from ziggurat.tournament.config import Participant, TournamentConfig
from ziggurat.tournament.games import GameHost, Seating, play_game, stop_process
from ziggurat.tournament.schedule import GameSpec
from ziggurat.v1 import bot_service_pb2 as bpb
from ziggurat_client.bot import Bot
from ziggurat_client.client import ZigguratClient
from ziggurat_client.remote import RemoteBot

log = logging.getLogger("ziggurat.tournament")

EXECUTORS = ("local", "ray")
RAY_MISSING = "--executor ray needs Ray: install it with `pip install 'ziggurat[ray]'`"
LOG_TAIL_BYTES = 64 * 1024  # of each program log brought back from a worker
WORKER_GRACE_SECONDS = 0.5  # a worker's server has no one to drain for once its game has ended


class Executor(Protocol):
    """Plays games for the runner; ``play`` may be awaited concurrently (``concurrency`` games)."""

    async def start(self) -> None:
        """Get ready (connect to a cluster…) before the first game."""

    async def play(
        self, spec: GameSpec, *, disqualified: frozenset[str], on_started: Callable[[str], None]
    ) -> dict[str, Any]:
        """Play ``spec`` to the end; ``on_started(match_id)`` once its match is in the tournament db."""
        ...

    async def stop(self) -> None:
        """Release what :meth:`start` took."""


@dataclass
class LocalExecutor:
    """Today's path: every game on the tournament's own server."""

    host: GameHost
    seatings: Mapping[str, Seating]

    async def start(self) -> None:
        """Nothing to do: the runner started the server and launched the participants."""

    async def play(
        self, spec: GameSpec, *, disqualified: frozenset[str], on_started: Callable[[str], None]
    ) -> dict[str, Any]:
        """:func:`play_game` on the tournament's server."""
        return await play_game(
            spec, self.host, self.seatings, disqualified=disqualified, on_started=on_started
        )

    async def stop(self) -> None:
        """Nothing to release."""


# ---------------------------------------------------------------------------------------- Ray


def require_ray() -> Any:
    """The ``ray`` module, or RuntimeError saying how to install it.

    Imported by name (typed ``Any``) so that ziggurat neither needs Ray nor type-checks it.
    """
    try:
        return importlib.import_module("ray")
    except ImportError:
        raise RuntimeError(RAY_MISSING) from None


def check_ray_config(config: TournamentConfig) -> None:
    """ValueError if a participant cannot be played on a Ray worker (``remote`` bots)."""
    remote = [p.name for p in config.participants if p.kind == "remote"]
    if remote:
        raise ValueError(
            f"--executor ray cannot seat remote participants ({', '.join(remote)}): they connect to "
            "the tournament's server, but Ray games run on the workers' servers; use --executor local"
        )
    programs = [p.name for p in config.participants if p.kind in ("command", "stdio")]
    if config.duplicate and programs:
        # Ray workers run programs unconfined: one could keep a file from one rotation of a
        # deal for the next, which duplicate deals must rule out (docs/tournaments.md)
        raise ValueError(
            f"--executor ray runs programs unconfined, so duplicate deals cannot take them "
            f"({', '.join(programs)}): use --executor local, or duplicate = false"
        )


@dataclass(frozen=True)
class Entrant:
    """What a worker needs to seat one participant: plain data, since it travels to Ray workers."""

    name: str
    kind: str  # "builtin" | "command" | "stdio"
    bot_name: str = ""  # remote-bot name for built-ins and keep_alive programs
    bot_token: str = ""
    builtin: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    argv: tuple[str, ...] = ()
    cwd: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    keep_alive: bool = False


@dataclass(frozen=True)
class WorkerJob:
    """One game as sent to a worker."""

    spec: GameSpec
    entrants: tuple[Entrant, ...]  # those seated in the game
    time_control: dict[str, int | str]
    max_illegal: int
    disqualified: frozenset[str]


@dataclass(frozen=True)
class WorkerGame:
    """What comes back from a worker: the result, the finished match as stored, program logs."""

    result: dict[str, Any]
    match: StoredMatch
    logs: dict[str, str]


def entrants_of(
    config: TournamentConfig,
    bot_name: Callable[[Participant], str],
    bot_token: Callable[[Participant], str],
) -> dict[str, Entrant]:
    """Every participant as an :class:`Entrant` (names and tokens as the runner gives them)."""
    out: dict[str, Entrant] = {}
    for p in config.participants:
        out[p.name] = Entrant(
            name=p.name,
            kind=p.kind,
            bot_name=bot_name(p),
            bot_token=bot_token(p),
            builtin=str(p.builtin or ""),
            options=dict(p.options),
            argv=tuple(p.argv),
            cwd=str(p.cwd) if p.cwd else None,
            env=dict(p.env),
            keep_alive=p.keep_alive,
        )
    return out


def run_game_on_worker(job: WorkerJob) -> WorkerGame:
    """The Ray task body: a whole game on this worker, in a fresh event loop."""
    return asyncio.run(_play_here(job))


async def _play_here(job: WorkerJob) -> WorkerGame:
    with tempfile.TemporaryDirectory(prefix="ziggurat-ray-") as tmp:
        log_dir = Path(tmp) / "logs"
        log_dir.mkdir()
        options = ServeOptions(
            host="127.0.0.1",
            port=0,
            db_path=str(Path(tmp) / "game.db"),
            rate_per_seat=0,
            mdns=False,
            grace_seconds=WORKER_GRACE_SECONDS,
            competition=True,  # as the tournament's own server (docs/tournaments.md)
        )
        server = ZigguratServer(options)
        address = f"127.0.0.1:{await server.start()}"
        for entrant in job.entrants:
            if entrant.kind == "builtin" or entrant.keep_alive:  # the only names ConnectBot accepts
                server.preregister_bot(entrant.bot_name, hash_token(entrant.bot_token))
        client = ZigguratClient(address)
        helpers = _Helpers(log_dir)
        try:
            seatings = {e.name: helpers.seat(e, client, address) for e in job.entrants}
            host = GameHost(
                manager=server.manager,
                bots=server.bots,
                address=address,
                client=client,
                time_control=TimeControl.from_dict(job.time_control),
                log_dir=log_dir,
                max_illegal=job.max_illegal,
            )
            result = await play_game(job.spec, host, seatings, disqualified=job.disqualified)
            match = server.store.load(result["match_id"])
        finally:
            await helpers.stop()
            await client.close()
            await server.stop()
        assert match is not None, "play_game returns the id of a match it stored"
        return WorkerGame(result, match, _log_tails(log_dir))


class _Helpers:
    """What a worker runs beside its game: in-process built-in bots, keep_alive programs."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.pool = _search_pool()
        self.tasks: list[asyncio.Task[None]] = []
        self.processes: list[asyncio.subprocess.Process] = []
        self.pending: list[Entrant] = []

    def seat(self, entrant: Entrant, client: ZigguratClient, address: str) -> Seating:
        """Start what ``entrant`` needs and say how it takes its seat."""
        if entrant.kind == "builtin":
            remote = RemoteBot(
                client,
                lambda assignment: _builtin(entrant, assignment, self.pool),
                name=entrant.bot_name,
                token=entrant.bot_token,
            )
            self.tasks.append(asyncio.create_task(remote.run(), name=f"bot {entrant.name}"))
            return Seating("bot", bot_name=entrant.bot_name)
        if entrant.kind == "command" and entrant.keep_alive:
            self.tasks.append(asyncio.create_task(self._keep_alive(entrant, address)))
            return Seating("bot", bot_name=entrant.bot_name)
        if entrant.kind in ("command", "stdio"):
            return Seating(entrant.kind, argv=entrant.argv, cwd=entrant.cwd, env=dict(entrant.env))
        raise ValueError(f"{entrant.name}: a {entrant.kind} participant cannot play on a Ray worker")

    async def _keep_alive(self, entrant: Entrant, address: str) -> None:
        """A keep_alive program, here only for this one game (it connects back as a remote bot)."""
        env = {
            **os.environ,
            **entrant.env,
            "ZIGGURAT_SERVER": address,
            "ZIGGURAT_BOT_NAME": entrant.bot_name,
            "ZIGGURAT_BOT_TOKEN": entrant.bot_token,
        }
        safe = entrant.name.replace("/", "_")
        with (self.log_dir / f"{safe}.log").open("ab") as output:
            process = await asyncio.create_subprocess_exec(
                *entrant.argv,
                env=env,
                cwd=entrant.cwd,
                stdout=output,
                stderr=output,
                start_new_session=True,
            )
        self.processes.append(process)
        await process.wait()

    async def stop(self) -> None:
        """Cancel the bots, terminate the programs (process groups: they may have children)."""
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        for process in self.processes:
            await stop_process(process)


_POOL: list[SearchPool] = []
MAX_SEATS = 4  # a game has at most 4 seats, hence at most 4 search bots of one game


def _search_pool() -> SearchPool:
    """The search pool of this Ray worker, kept for every game it plays (a worker process
    plays one game at a time): its forkserver and workers are started once, not per game."""
    if not _POOL:
        _POOL.append(SearchPool(MAX_SEATS))
    return _POOL[0]


def _builtin(entrant: Entrant, assignment: bpb.Assignment, pool: SearchPool | None) -> Bot:
    """A built-in bot for one seat, seeded by the organiser as ``ziggurat bot --remote`` does
    (a search bot as a session of the worker processes' ``pool``)."""
    options = dict(entrant.options)
    if assignment.bot_seed and "seed" not in options:
        options["seed"] = assignment.bot_seed
    if pool is not None and entrant.builtin in SEARCH_BOTS:
        return pool.open(entrant.builtin, options)
    return make_bot(entrant.builtin, **options)


def _log_tails(log_dir: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in sorted(log_dir.glob("*.log")):
        data = path.read_bytes()[-LOG_TAIL_BYTES:]
        if data:
            out[path.name] = data.decode("utf-8", "replace")
    return out


def import_match(store: Store, match: StoredMatch) -> None:
    """Copy a finished match played elsewhere (row, seats, events) into ``store``."""
    if store.load(match.match_id) is not None:
        return  # already imported (a resumed run replaying a game whose result was lost)
    store.create_match(dataclasses.replace(match, seat_rows=[]))
    for seat, name, token_hash in match.seat_rows:
        store.commit(match.match_id, [], seat=(seat, name, token_hash))


class RayExecutor:
    """Each game a Ray task on whichever worker Ray picks; results come home to the tournament db."""

    def __init__(
        self,
        *,
        address: str | None,
        entrants: Mapping[str, Entrant],
        time_control: TimeControl,
        max_illegal: int,
        store: Store,
        log_dir: Path,
        max_retries: int = 2,
    ) -> None:
        self.address = address
        self.entrants = dict(entrants)
        self.time_control = time_control
        self.max_illegal = max_illegal
        self.store = store
        self.log_dir = log_dir
        self.max_retries = max_retries
        self._ray: Any = None
        self._task: Any = None
        self._owns_ray = False
        self._in_flight: set[Any] = set()  # object refs of the games being played

    async def start(self) -> None:
        """Connect to the cluster at ``address`` (None: Ray's default — RAY_ADDRESS or a local one)."""
        ray = require_ray()
        if not ray.is_initialized():
            if self.address is None:
                # A private single-node cluster: no dashboard, no usage report leaving the machine.
                os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
                ray.init(include_dashboard=False, log_to_driver=False)
            else:
                ray.init(address=self.address, log_to_driver=False)
            self._owns_ray = True
        self._ray = ray
        # Ray re-runs a task whose worker died (max_retries); exceptions are real errors, not retried.
        self._task = ray.remote(num_cpus=1, max_retries=self.max_retries)(run_game_on_worker)

    async def play(
        self, spec: GameSpec, *, disqualified: frozenset[str], on_started: Callable[[str], None]
    ) -> dict[str, Any]:
        """Run the game remotely; import its match, then report it started (and it is over)."""
        assert self._task is not None, "start() first"
        seated = list(dict.fromkeys(spec.seats))  # unique names, seat order
        job = WorkerJob(
            spec=dataclasses.replace(spec, options=dict(spec.options)),  # a mappingproxy does not pickle
            entrants=tuple(self.entrants[name] for name in seated if name not in disqualified),
            time_control=self.time_control.to_dict(),
            max_illegal=self.max_illegal,
            disqualified=disqualified,
        )
        ref = self._task.remote(job)
        self._in_flight.add(ref)
        try:
            game: WorkerGame = await ref
        except asyncio.CancelledError:
            self._cancel(ref)
            raise
        finally:
            self._in_flight.discard(ref)
        import_match(self.store, game.match)
        on_started(game.match.match_id)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for name, text in game.logs.items():
            with (self.log_dir / name).open("a", encoding="utf-8") as handle:
                handle.write(text)
        return game.result

    def _cancel(self, ref: Any) -> None:
        """Stop a game on its worker (its result is not wanted: a resume replays it)."""
        with contextlib.suppress(Exception):
            self._ray.cancel(ref, force=True)

    async def stop(self) -> None:
        """Cancel the games still in flight; disconnect if we connected (a local cluster stops)."""
        for ref in list(self._in_flight):
            self._cancel(ref)
        if self._owns_ray and self._ray is not None:
            self._ray.shutdown()
        self._ray = self._task = None
        self._owns_ray = False
