"""Playing one scheduled game: create the match, seat every participant, supervise, judge.

The organiser (this module) creates the match *held*, takes every seat itself and
hands each seat to its participant; once every participant is ready (connected to the
match) it begins the match from the position after the opening, so clocks start then
and the first turn any bot is asked to play is the present one:

* built-in bots and ``keep_alive`` programs are remote bots the tournament launched
  once; ``remote`` participants connected by themselves — all get an Assignment;
* ``command`` programs are launched for this game with the seat in ZIGGURAT_*
  environment variables, and supervised: one that exits before the end has crashed;
* ``stdio`` programs are bridged here (:mod:`ziggurat.stdio.bridge`).

Whatever happens to a participant, its seat is resigned if it can no longer play,
so a game always ends (under the match's time control) and the tournament never
stalls on a dead bot. Each seat gets a verdict: finished, timeout, crashed,
illegal, disconnected or disqualified.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ziggurat.api.bots import BotRegistry
from ziggurat.core.events import Ended, Forfeited, MovePlayed, Started, Substituted, TurnStarted
from ziggurat.core.manager import MatchManager
from ziggurat.core.match import Match
from ziggurat.core.timecontrol import TimeControl
from ziggurat.rules.core import Termination
from ziggurat.stdio.bridge import BridgeSettings, HandshakeError, StdioBot, play_seat
from ziggurat.tournament.cgroups import CgroupUnavailable
from ziggurat.tournament.sandbox import Confinement, Sandbox, SandboxUnavailable
from ziggurat.tournament.schedule import GameSpec
from ziggurat.v1 import bot_service_pb2 as bpb
from ziggurat.wire.codec import config_to_proto
from ziggurat.wire.errors import ApiError
from ziggurat_client.client import MatchHandle, ZigguratClient

log = logging.getLogger("ziggurat.tournament")

FAILURES = frozenset({"timeout", "crashed", "illegal", "disconnected"})
PROGRAM_STOP_GRACE = 2.0
READY_POLL_SECONDS = 0.02
END_GRACE_SECONDS = 5.0
"""After the end of a game, how long its programs and bridges get to read the end (final moves,
reveal, result) and exit by themselves before they are told to quit, then terminated."""


@dataclass(frozen=True, slots=True)
class Seating:
    """How one participant takes a seat (resolved from the configuration by the runner)."""

    kind: str  # "bot" (a connected remote bot, incl. hosted built-ins) | "command" | "stdio"
    bot_name: str = ""  # kind "bot": the registry name
    argv: tuple[str, ...] = ()
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    read_only: tuple[Path, ...] = ()  # more paths a sandboxed program may read
    trusted: bool = False  # ziggurat's own code (a built-in bot's per-game process): never confined
    hide: tuple[Path, ...] = ()  # other participants' files, which its sandbox must not show


@dataclass
class DealBarrier:
    """Holds back the end of every rotation of a duplicate deal until all of them are decided.

    The rotations of a deal share their secret set-up: the outcome or the reveal of one tells
    the objectives of all. Their matches are created with their end held
    (``Match.decided``: the game is over, nothing of its end is in the log); when the last
    rotation is decided every one is revealed in the same step, with nothing in between, so
    no call to the server can ever show a revealed rotation while another is still played.
    The runner schedules the rotations of a deal together and says how many there are.
    """

    sizes: dict[int, int] = field(default_factory=dict)  # deal -> its rotations in this run
    _arrived: dict[int, list[Match]] = field(default_factory=dict)
    _released: dict[int, asyncio.Event] = field(default_factory=dict)

    async def arrive(self, deal: int, match: Match) -> None:
        """``match`` (a rotation of ``deal``) is decided or over; return once the deal is revealed."""
        arrived = self._arrived.setdefault(deal, [])
        arrived.append(match)
        released = self._released.setdefault(deal, asyncio.Event())
        if len(arrived) >= self.sizes.get(deal, 1):
            for rotation in arrived:  # all at once: no await between two reveals
                if rotation.decided:
                    rotation.reveal()
            released.set()
            del self._arrived[deal]
        await released.wait()


@dataclass
class GameHost:
    """Where games are played: the server's match manager and bot registry, and how to reach it."""

    manager: MatchManager
    bots: BotRegistry
    address: str  # for programs (loopback)
    client: ZigguratClient  # in-process client, for bridged stdio bots
    time_control: TimeControl
    log_dir: Path
    remote_wait_seconds: float = 30.0
    startup_seconds: float = 60.0  # how long a game waits for its participants to be ready
    max_illegal: int = 3
    sandbox: Sandbox | None = None  # None: programs run unconfined (the organiser's opt-out)
    barrier: DealBarrier | None = None  # duplicate deals: their reveals are held back together
    # exits so far of each launched remote bot (by bot name): a bot whose connection dropped
    # because its process died has crashed, not merely disconnected
    exits: dict[str, int] = field(default_factory=dict)
    program_address: str = ""  # where confined programs reach the server (a unix: socket)


async def play_game(
    spec: GameSpec,
    host: GameHost,
    seatings: Mapping[str, Seating],
    *,
    disqualified: frozenset[str] = frozenset(),
    on_started: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Play ``spec`` to the end and return its result (JSON-ready)."""
    deadline = asyncio.get_running_loop().time() + host.remote_wait_seconds
    await _bots_ready(
        host,
        [seatings[n].bot_name for n in spec.seats if n not in disqualified and seatings[n].kind == "bot"],
        deadline,
    )
    exits_before = dict(host.exits)
    # Held: the match starts (and its clocks with it) only once every participant is ready.
    grouped = host.barrier is not None and spec.deal is not None
    match = host.manager.create(
        spec.game,
        len(spec.seats),
        dict(spec.options),
        host.time_control,
        "chosen",
        seed=spec.seed,
        held=True,
        end_held=grouped,
    )
    if on_started is not None:
        on_started(match.match_id)
    tokens = [match.join(name, seat)[0] for seat, name in enumerate(spec.seats)]
    reasons: dict[int, str] = {}
    tasks: dict[int, asyncio.Task[None]] = {}
    for seat, name in enumerate(spec.seats):
        handle = MatchHandle(match.match_id, seat + 1, tokens[seat])
        if name in disqualified:
            reasons[seat] = "disqualified"
            continue
        job = _SeatJob(host, match, spec, seat, handle, seatings[name], reasons, deadline)
        play = {"bot": _assign, "command": _run_program, "stdio": _run_stdio}[job.seating.kind](job)
        tasks[seat] = asyncio.create_task(play, name=f"{match.match_id}/{seat + 1}")
    try:
        await _until_ready(match, tasks, host.startup_seconds)
        # The opening is part of the initial position: played as the match starts, no turn
        # is offered for it; the first turn any bot sees is the position after it.
        match.begin(spec.opening)
        for seat, reason in sorted(reasons.items()):  # disqualified, or failed before the start
            _give_up(match, seat, reasons, reason)
        if grouped:
            assert host.barrier is not None and spec.deal is not None
            await _until_decided(match)
            await host.barrier.arrive(spec.deal, match)
        await _until_finished(match)
        # Programs and bridges read the end of the game and exit on their own, if they can.
        await asyncio.wait(tasks.values(), timeout=END_GRACE_SECONDS) if tasks else None
    finally:
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
        for name in spec.seats:
            seating = seatings.get(name)
            if seating is not None and seating.kind == "bot":
                host.bots.release(seating.bot_name, match.match_id)
    result = game_result(spec, match, reasons)
    for seat, name in enumerate(spec.seats):
        bot_name = seatings[name].bot_name
        died = host.exits.get(bot_name, 0) > exits_before.get(bot_name, 0)
        if seatings[name].kind == "bot" and died and result["verdicts"][seat] == "disconnected":
            result["verdicts"][seat] = "crashed"
    return result


@dataclass(frozen=True, slots=True)
class _SeatJob:
    """Everything needed to get one seat played."""

    host: GameHost
    match: Match
    spec: GameSpec
    seat: int
    handle: MatchHandle
    seating: Seating
    reasons: dict[int, str]
    deadline: float  # event-loop time until which a remote bot may take to connect

    def give_up(self, reason: str) -> None:
        """Resign this seat (see :func:`_give_up`)."""
        _give_up(self.match, self.seat, self.reasons, reason)


def game_result(spec: GameSpec, match: Match, reasons: Mapping[int, str]) -> dict[str, Any]:
    """The stored form of a finished game: outcome, verdicts, everything to replay it, and times.

    Times come from the match's log (each event's server time, Unix ms): ``start_ms`` when the
    match began (clocks start), ``end_ms`` when the game was decided (its last move or forfeit;
    a rotation of a duplicate deal is released later), and per move ``time_ms`` (when the server
    recorded it), ``spent_ms`` (from the start of the turn it answered; None for a move no turn
    was offered for: an opening's, or one the server plays for a forfeited seat) and, with a
    base clock, ``clock_ms`` (the seat's clock after it).
    """
    outcome = match.outcome()
    assert outcome is not None
    moves: list[dict[str, Any]] = []
    verdicts = ["finished"] * len(spec.seats)
    start_ms: int | None = None
    end_ms: int | None = None
    turn: tuple[int, int] | None = None  # (seat, time_ms) of the turn being played
    for entry in match.entries:
        event = entry.event
        if isinstance(event, Started):
            start_ms = end_ms = entry.time_ms
        elif isinstance(event, TurnStarted):
            turn = (event.seat, entry.time_ms)
        elif isinstance(event, Ended) and end_ms is None:
            end_ms = entry.time_ms  # aborted before it began
        if isinstance(event, MovePlayed | Forfeited):
            end_ms = entry.time_ms
        if isinstance(event, MovePlayed):
            spent = entry.time_ms - turn[1] if turn is not None and turn[0] == event.seat else None
            turn = None
            move: dict[str, Any] = {
                "seat": event.seat + 1,
                "move": event.move,
                "substituted": event.substituted,
                "time_ms": entry.time_ms,
                "spent_ms": spent,
            }
            if event.clock_ms is not None:
                move["clock_ms"] = event.clock_ms
            moves.append(move)
        elif isinstance(event, Substituted):
            verdicts[event.seat] = "timeout"
        elif isinstance(event, Forfeited):
            if event.termination == Termination.TIMEOUT.value:
                verdicts[event.seat] = "disconnected" if event.cause == "disconnected" else "timeout"
            elif event.termination == Termination.ILLEGAL_MOVE.value:
                verdicts[event.seat] = "illegal"
            else:
                verdicts[event.seat] = reasons.get(event.seat, "finished")  # a bot may resign on its own
            if turn is not None and turn[0] == event.seat:
                turn = None
    for seat, reason in reasons.items():
        if verdicts[seat] == "finished":
            verdicts[seat] = reason
    seed = match.revealed_seed
    return {
        "index": spec.index,
        "round": spec.round,
        "match_id": match.match_id,
        "game": spec.game,
        "options": dict(spec.options),
        "seats": list(spec.seats),
        "opening": list(spec.opening),
        "pair": spec.pair,
        "deal": spec.deal,
        "commitment": match.commitment,
        "revealed_seed": seed.hex() if seed is not None else "",
        "moves": moves,
        "termination": outcome.termination.value,
        "ranks": list(outcome.ranks),
        "verdicts": verdicts,
        "start_ms": start_ms,
        "end_ms": end_ms,
    }


def forfeit_result(spec: GameSpec) -> dict[str, Any]:
    """The stored form of a game every seat of which is forfeited (each participant disqualified).

    Nobody shows up, so nothing is played and no match is made: a match would have to end with a
    winner (the rules end a Pylos game at the first resignation), and a double forfeit has none.
    Every seat ranks last; :func:`ziggurat.tournament.results.game_points` gives each 0.
    """
    seats = len(spec.seats)
    return {
        "index": spec.index,
        "round": spec.round,
        "match_id": None,
        "game": spec.game,
        "options": dict(spec.options),
        "seats": list(spec.seats),
        "opening": list(spec.opening),
        "pair": spec.pair,
        "deal": spec.deal,
        "commitment": "",
        "revealed_seed": "",
        "moves": [],
        "termination": Termination.RESIGNATION.value,
        "ranks": [seats] * seats,
        "verdicts": ["disqualified"] * seats,
        "start_ms": None,
        "end_ms": None,
    }


class ShutdownError(RuntimeError):
    """The server closed the match before it ended (the tournament is being stopped)."""


async def _until_decided(match: Match) -> None:
    """Until the game is over: decided (its end held) or finished (aborted)."""
    if match.decided or match.status == "finished":
        return
    async for _ in match.follow(match.last_seq):
        if match.decided or match.status == "finished":
            return
    if not match.decided and match.status != "finished":
        raise ShutdownError(f"match {match.match_id} was closed before it ended")


async def _until_finished(match: Match) -> None:
    async for entry in match.follow(match.last_seq):
        if isinstance(entry.event, Ended):
            return
    if match.status != "finished":
        raise ShutdownError(f"match {match.match_id} was closed before it ended")


def _give_up(match: Match, seat: int, reasons: dict[int, str], reason: str) -> None:
    """Resign a seat whose participant cannot play, so the game goes on without it."""
    reasons.setdefault(seat, reason)
    if match.status == "active" and not match.decided and seat not in match.forfeited:
        with contextlib.suppress(ApiError):
            match.resign(seat)


async def _until_ready(match: Match, tasks: Mapping[int, asyncio.Task[None]], timeout: float) -> None:
    """Wait (``timeout`` at most) until every seat's participant is ready: its stream to the match
    is open (a program launched and connected, a stdio bridge past its handshake, a remote bot
    that took its assignment) or it has failed already (its task is over).

    A participant not ready by then starts anyway and its clock runs: the tournament must go on.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        waiting = [s for s, task in tasks.items() if not task.done() and match.presence(s) != "connected"]
        if not waiting:
            return
        await asyncio.sleep(READY_POLL_SECONDS)
    log.warning("match %s starts with seats not ready after %.0f s", match.match_id, timeout)


async def _bots_ready(host: GameHost, bot_names: list[str], deadline: float) -> None:
    """Wait (until ``deadline`` at most) for the game's remote bots to be connected with a free slot.

    The match is created only then: its clocks start with it, and a bot still booting (the
    tournament launches built-in bots as it starts) must not lose its first move on time.
    A bot missing at the deadline is dealt with by :func:`_assign`.
    """
    loop = asyncio.get_running_loop()
    for bot_name in bot_names:
        while True:
            try:
                connection = await host.bots.wait_for(bot_name, max(0.0, deadline - loop.time()))
            except TimeoutError:
                return
            if connection.free > 0 or loop.time() > deadline:
                break
            await asyncio.sleep(0.05)


async def _assign(job: _SeatJob) -> None:
    """Hand the seat to a connected remote bot (waiting for it to connect, or to be free)."""
    host, match, spec, seat, seating = job.host, job.match, job.spec, job.seat, job.seating
    deadline = job.deadline
    while True:
        try:
            connection = await host.bots.wait_for(
                seating.bot_name, max(0.0, deadline - asyncio.get_running_loop().time())
            )
        except TimeoutError:
            log.warning(
                "bot %s is not connected: seat %d of %s resigned", seating.bot_name, seat + 1, match.match_id
            )
            job.give_up("disconnected")
            return
        if connection.free > 0:
            break
        if asyncio.get_running_loop().time() > deadline:
            job.give_up("disconnected")
            return
        await asyncio.sleep(0.05)
    assignment = bpb.Assignment(
        match_id=match.match_id,
        seat=seat + 1,
        token=job.handle.token,
        config=config_to_proto(spec.game, len(spec.seats), dict(spec.options)),
        bot_seed=spec.bot_seeds[seat],
    )
    host.bots.assign(seating.bot_name, assignment, spec.game)


async def _run_program(job: _SeatJob) -> None:
    """Launch a gRPC program for this seat and watch it: exiting before the end is a crash.

    The seat token travels in the environment, never on the command line (``ps`` shows that to
    every user). When the game is over the program has :data:`END_GRACE_SECONDS` to read the end
    and exit before it is terminated with everything it started.
    """
    host, match, spec, seat, seating = job.host, job.match, job.spec, job.seat, job.seating
    seat_env = {
        "ZIGGURAT_MATCH": match.match_id,
        "ZIGGURAT_TOKEN": job.handle.token,
        "ZIGGURAT_SEAT": str(seat + 1),
        "ZIGGURAT_GAME": spec.game,
        "ZIGGURAT_BOT_SEED": str(spec.bot_seeds[seat]),
    }
    label = f"{match.match_id}-seat{seat + 1}"
    argv, env, cwd = list(seating.argv), {**os.environ, **seating.env}, seating.cwd
    confined: Confinement | None = None
    if host.sandbox is not None and not seating.trusted:
        confined = _confine(job, label, {**seating.env, **seat_env, "ZIGGURAT_SERVER": host.program_address})
        if confined is None:
            return
        argv, env, cwd = confined.argv, confined.env, None
    else:
        env.update(seat_env, ZIGGURAT_SERVER=host.address)
    log_path = host.log_dir / f"{label}.log"
    with log_path.open("ab") as output:

        def note(line: str) -> None:
            log.warning("%s: %s", label, line)
            output.write(f"ziggurat: {line}\n".encode())
            output.flush()

        try:
            try:
                process = await asyncio.create_subprocess_exec(
                    *argv, cwd=cwd, env=env, stdout=output, stderr=output, start_new_session=True
                )
            except OSError as error:
                log.warning("cannot start %s: %s", seating.argv[0], error)
                job.give_up("crashed")
                return
            watch = asyncio.create_task(confined.watch_memory(note)) if confined is not None else None
            try:
                code = await process.wait()
            finally:
                if watch is not None:
                    watch.cancel()
                await asyncio.shield(stop_process(process))
        finally:
            if confined is not None:
                await asyncio.shield(confined.close())
    if match.status != "finished":
        log.warning(
            "%s exited (%s) before match %s ended: seat %d resigned",
            seating.argv[0],
            code,
            match.match_id,
            seat + 1,
        )
        job.give_up("crashed")


def _confine(job: _SeatJob, label: str, env: Mapping[str, str]) -> Confinement | None:
    """The seat's program in a new sandbox; None (the seat resigned, ``crashed``) when no sandbox
    can be made now (e.g. every sandbox user is taken): the tournament goes on."""
    assert job.host.sandbox is not None
    seating = job.seating
    try:
        return job.host.sandbox.confine(
            list(seating.argv),
            cwd=seating.cwd,
            env=env,
            label=label,
            read_only=seating.read_only,
            hide=seating.hide,
        )
    except (SandboxUnavailable, CgroupUnavailable) as error:
        log.error(
            "%s: no sandbox for seat %d of %s: %s", seating.argv[0], job.seat + 1, job.match.match_id, error
        )
        job.give_up("crashed")
        return None


async def stop_process(process: asyncio.subprocess.Process) -> None:
    """SIGTERM the program's process group, then SIGKILL after a grace period.

    A program that has exited may have left children in its group (a daemon it forked):
    they are killed too. (A confined program's sandbox dies with its first process anyway.)
    """
    if process.returncode is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), PROGRAM_STOP_GRACE)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    await process.wait()


async def _run_stdio(job: _SeatJob) -> None:
    """Bridge a stdio program for this seat; its verdict becomes the seat's.

    The bridge tells the program the end of the game (final moves, reveal, result) before
    ``quit``; whatever happens, the program and everything it started are killed at the end.
    """
    host, seating = job.host, job.seating
    argv, env, cwd = list(seating.argv), dict(seating.env), seating.cwd
    label = f"{job.match.match_id}-seat{job.seat + 1}"
    confined: Confinement | None = None
    if host.sandbox is not None:
        confined = _confine(job, label, env)
        if confined is None:
            return
        argv, env, cwd = confined.argv, confined.env, None
    notes: list[str] = []

    def note(line: str) -> None:
        log.warning("%s: %s", label, line)
        notes.append(f"ziggurat: {line}")

    bot = StdioBot(argv, settings=BridgeSettings(max_illegal=host.max_illegal), env=env, cwd=cwd)
    watch = asyncio.create_task(confined.watch_memory(note)) if confined is not None else None
    try:
        try:
            await bot.start()
        except HandshakeError as error:
            log.warning("%s: %s", seating.argv[0], error)
            job.give_up("crashed")
            return
        try:
            verdict = await play_seat(host.client, job.handle, bot)
            if verdict.value != "finished":
                job.give_up(verdict.value)
        finally:
            # play_seat resigns a failed bot's seat itself, which may end the match and cancel
            # this task before the verdict above is recorded: record it here in any case.
            if bot.verdict is not None and bot.verdict.value != "finished":
                job.reasons.setdefault(job.seat, bot.verdict.value)
            await asyncio.shield(bot.close())
    finally:
        if watch is not None:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(watch)  # its note of a memory-cap kill, if the kernel killed
        bot.process.kill()  # even when cancelled during close(): nothing outlives its game
        if confined is not None:
            await asyncio.shield(confined.close())
        tail = [*bot.process.stderr_tail, *notes]
        if tail:
            log_path = host.log_dir / f"{label}.log"
            with log_path.open("a", encoding="utf-8") as output:
                output.writelines(line + "\n" for line in tail)
