"""Preflight: every program is started once in its sandbox before the first game, and must say it is ready.

A program that cannot start in its sandbox (an interpreter the sandbox does not show, files
other users cannot read, a missing library) would otherwise "crash" in every game, with the
reason only in a per-game log, until it is disqualified. Preflight makes that a start-up
failure with the reason and the likely fix, before any game is played:

* ``stdio``: started in a sandbox of its own, it must answer the handshake (``ziggurat 1`` →
  ``ready NAME``, docs/stdio-protocol.md); then it is told ``quit``;
* ``command`` (a gRPC program launched per game): started as for a game, for a *throwaway
  match* — held (it never starts, no clock runs), created by the organiser with every seat
  taken — whose seat 1 it receives in ``ZIGGURAT_MATCH``/``ZIGGURAT_TOKEN``; it must open its
  Play stream on it. The match is then aborted: it is no game of the tournament and is never
  in its results or standings;
* ``keep_alive``: launched for the tournament as usual, it must connect as a remote bot.

Each gets ``[sandbox] preflight_seconds``; all are checked at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ziggurat.core.match import Match
from ziggurat.stdio.bridge import BridgeSettings, HandshakeError, StdioBot
from ziggurat.tournament.cgroups import CgroupUnavailable
from ziggurat.tournament.games import READY_POLL_SECONDS, GameHost, Seating, stop_process
from ziggurat.tournament.sandbox import Confinement, SandboxUnavailable
from ziggurat.wire.errors import ApiError

log = logging.getLogger("ziggurat.tournament")

TAIL_LINES = 5
TAIL_CHARS = 400


class PreflightError(RuntimeError):
    """A program could not start and say it is ready: the tournament stops before its first game."""


@dataclass(frozen=True, slots=True)
class Entrant:
    """One program to check: how it takes a seat, and (``keep_alive``) where its output goes."""

    name: str
    seating: Seating
    log_path: Path | None = None


@dataclass(frozen=True, slots=True)
class Setting:
    """The game a throwaway match is created for."""

    game: str
    seats: int
    options: Mapping[str, str]


async def preflight(entrants: Sequence[Entrant], host: GameHost, setting: Setting, timeout: float) -> None:
    """Check every entrant at once; PreflightError naming each that failed, its output and the fix."""
    checks = [_check(entrant, host, setting, timeout) for entrant in entrants]
    failures = [reason for reason in await asyncio.gather(*checks) if reason]
    if failures:
        raise PreflightError("; ".join(failures))


async def _check(entrant: Entrant, host: GameHost, setting: Setting, timeout: float) -> str:
    """Empty when the entrant started and said it is ready, else the line saying why not."""
    kind = entrant.seating.kind
    if kind == "stdio":
        return await _check_stdio(entrant, host, timeout)
    if kind == "command":
        return await _check_command(entrant, host, setting, timeout)
    return await _check_keep_alive(entrant, host, timeout)


async def _check_stdio(entrant: Entrant, host: GameHost, timeout: float) -> str:
    seating = entrant.seating
    confined = _confine(entrant, host, dict(seating.env))
    if isinstance(confined, str):
        return confined
    argv, env, cwd = (
        (confined.argv, confined.env, None)
        if confined
        else (list(seating.argv), dict(seating.env), seating.cwd)
    )
    bot = StdioBot(argv, settings=BridgeSettings(handshake_timeout=timeout), env=env, cwd=cwd)
    try:
        try:
            await asyncio.wait_for(bot.start(), timeout + 1)
        except (HandshakeError, TimeoutError) as error:
            reason = str(error) or f"no answer within {timeout:g} s"
            return _failure(
                entrant, "did not answer the stdio handshake", reason, list(bot.process.stderr_tail)
            )
        with contextlib.suppress(Exception):
            await bot.process.close("quit", grace=1.0)
        return ""
    finally:
        bot.process.kill()
        if confined is not None:
            await confined.close()


async def _check_command(entrant: Entrant, host: GameHost, setting: Setting, timeout: float) -> str:
    seating = entrant.seating
    try:
        match = host.manager.create(
            setting.game,
            setting.seats,
            dict(setting.options),
            host.time_control,
            "chosen",
            seed=secrets.token_bytes(32),
            held=True,
        )
    except ApiError as error:
        return f"participant {entrant.name!r}: no throwaway match for its preflight: {error}"
    tokens = [match.join(f"preflight-{seat + 1}", seat)[0] for seat in range(setting.seats)]
    seat_env = {
        "ZIGGURAT_MATCH": match.match_id,
        "ZIGGURAT_TOKEN": tokens[0],
        "ZIGGURAT_SEAT": "1",
        "ZIGGURAT_GAME": setting.game,
        "ZIGGURAT_BOT_SEED": "0",
    }
    log_path = host.log_dir / f"preflight-{_safe(entrant.name)}.log"
    confined = _confine(entrant, host, {**seating.env, **seat_env, "ZIGGURAT_SERVER": host.program_address})
    if isinstance(confined, str):
        match.abort()
        return confined
    if confined is not None:
        argv, env, cwd = confined.argv, confined.env, None
    else:
        argv = list(seating.argv)
        env = {**os.environ, **seating.env, **seat_env, "ZIGGURAT_SERVER": host.address}
        cwd = seating.cwd
    try:
        with log_path.open("wb") as output:
            try:
                process = await asyncio.create_subprocess_exec(
                    *argv, cwd=cwd, env=env, stdout=output, stderr=output, start_new_session=True
                )
            except OSError as error:
                return _failure(entrant, "could not be started", str(error), [])
            try:
                reason = await _until_connected(match, process, timeout)
            finally:
                await stop_process(process)
        if reason:
            return _failure(entrant, "did not open its Play stream", reason, _tail(log_path))
        return ""
    finally:
        if match.status != "finished":
            match.abort()
        if confined is not None:
            await confined.close()


async def _until_connected(match: Match, process: asyncio.subprocess.Process, timeout: float) -> str:
    """Empty once the stream of the program to seat 1 is open; else why not (it exited, or timed out)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if match.presence(0) == "connected":
            return ""
        if process.returncode is not None:
            return f"it exited with status {process.returncode} before connecting"
        await asyncio.sleep(READY_POLL_SECONDS)
    return f"it did not connect within {timeout:g} s"


async def _check_keep_alive(entrant: Entrant, host: GameHost, timeout: float) -> str:
    try:
        await host.bots.wait_for(entrant.seating.bot_name, timeout)
    except TimeoutError:
        tail = _tail(entrant.log_path) if entrant.log_path is not None else []
        return _failure(entrant, "did not connect as a bot", f"not connected within {timeout:g} s", tail)
    return ""


def _confine(entrant: Entrant, host: GameHost, env: Mapping[str, str]) -> Confinement | str | None:
    """Its sandbox (None: unconfined), or the failure line when none can be made."""
    if host.sandbox is None:
        return None
    seating = entrant.seating
    try:
        return host.sandbox.confine(
            list(seating.argv),
            cwd=seating.cwd,
            env=env,
            label=f"preflight-{entrant.name}",
            read_only=seating.read_only,
            hide=seating.hide,
        )
    except (SandboxUnavailable, CgroupUnavailable) as error:
        return f"participant {entrant.name!r}: no sandbox can be made for it: {error}"


def _failure(entrant: Entrant, what: str, reason: str, tail: list[str]) -> str:
    """One line: who, what failed, why, the end of its stderr, and the likely fix."""
    shown = " | ".join(line.strip() for line in tail[-TAIL_LINES:] if line.strip())
    if len(shown) > TAIL_CHARS:
        shown = "…" + shown[-TAIL_CHARS:]
    line = f"participant {entrant.name!r} {what} in its preflight: {reason}"
    if shown and "stderr ended with" not in reason:  # the stdio bridge's errors quote it already
        line += f"; its stderr ends: {shown}"
    return f"{line}; fix: {likely_fix(reason + ' ' + shown, entrant.seating.kind)}"


def likely_fix(text: str, kind: str) -> str:
    """The most likely fix for what a program's failure says (its error and stderr)."""
    lowered = text.lower()
    if "permission denied" in lowered:
        return (
            "the sandbox runs it as a user of its own: make its files readable by other users "
            "(chmod -R o+rX DIR), or list its directory under read_only"
        )
    if any(
        word in lowered
        for word in ("modulenotfounderror", "no module named", "cannot find module", "classnotfound")
    ):
        return (
            "list the directory holding its libraries under read_only "
            "(a sandbox sees only the program's own files)"
        )
    if any(word in lowered for word in ("no such file", "not found", "execvp", "cannot execute")):
        return (
            "give its interpreter as an absolute path in the command, or list the directory it is "
            "installed in under read_only (the sandbox shows only the system directories, the "
            "program's own files and what you list)"
        )
    if kind == "stdio":
        return (
            'run its command by hand: it must answer "ziggurat 1" with "ready NAME" (docs/stdio-protocol.md)'
        )
    return (
        "run its command by hand: it must connect to ZIGGURAT_SERVER and play the seat of "
        "ZIGGURAT_MATCH with ZIGGURAT_TOKEN (docs/tournaments.md)"
    )


def _tail(path: Path) -> list[str]:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    return text.splitlines()[-TAIL_LINES:]


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
