"""``ziggurat tournament``: run, resume, standings, export — headless tournaments."""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ziggurat.cli import exits
from ziggurat.cli.commands import summary_of
from ziggurat.store.owner import DatabaseOwner
from ziggurat.store.startup import StartupError, check_database_path
from ziggurat.tournament.config import ConfigError
from ziggurat.tournament.executors import EXECUTORS, require_ray
from ziggurat.tournament.preflight import PreflightError
from ziggurat.tournament.results import (
    crosstable,
    disqualified,
    export_jsonl,
    format_crosstable,
    format_elo_table,
    format_head_to_head,
    format_standings,
    head_to_head,
    pairings_to_test,
    pairwise_elo,
    standings,
    summary,
    summary_csv,
)
from ziggurat.tournament.runner import PAGE_LINGER_SECONDS, TournamentRunner, load_tournament_config
from ziggurat.tournament.sandbox import SandboxUnavailable
from ziggurat.tournament.store import TournamentStore

# Its own file, not the match server's ./ziggurat.db: a tournament runs its own server on
# it, and one database has one owner (a second process on the same file is refused).
DEFAULT_DB = os.environ.get("ZIGGURAT_TOURNAMENT_DB", "ziggurat-tournaments.db")


def register(commands: Any) -> None:
    """Add ``tournament`` and its sub-commands."""
    parser = commands.add_parser(
        "tournament",
        help=summary_of("tournament"),
        description="Tournaments from a TOML file (see examples/tournaments/), stored in the database.",
    )
    sub = parser.add_subparsers(dest="tournament_command", metavar="ACTION", required=True)

    run = sub.add_parser("run", help="start a tournament from CONFIG.toml")
    run.add_argument("config", type=Path, metavar="CONFIG.toml")
    _common(run)
    run.add_argument("--listen", help="HOST:PORT for the tournament's server (default from the config)")
    _http_port(run)
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument(
        "--seed",
        metavar="TEXT",
        help="derive the organiser's secret from TEXT instead of drawing it at random: the same TEXT "
        "replays the same set-ups and bot seeds. For private runs only (anyone knowing TEXT knows "
        "every hidden set-up)",
    )
    _executor_options(run)
    run.set_defaults(handler=_run)

    resume = sub.add_parser("resume", help="continue an interrupted tournament")
    resume.add_argument("tournament_id", metavar="ID")
    _common(resume)
    resume.add_argument("--listen", help="HOST:PORT for the tournament's server")
    _http_port(resume)
    resume.add_argument("--quiet", action="store_true", help="no progress bar")
    _executor_options(resume)
    resume.set_defaults(handler=_resume)

    show = sub.add_parser("standings", help="standings, crosstable and head-to-head statistics")
    show.add_argument("tournament_id", metavar="ID")
    _common(show)
    show.set_defaults(handler=_standings)

    export = sub.add_parser("export", help="export games (JSONL) and the summary (JSON, CSV)")
    export.add_argument("tournament_id", metavar="ID")
    _common(export)
    export.add_argument("--jsonl", type=Path, help="one JSON object per game")
    export.add_argument("--json", type=Path, help="summary: standings, crosstable, verdicts")
    export.add_argument("--csv", type=Path, help="standings as CSV")
    export.set_defaults(handler=_export)

    listing = sub.add_parser("list", help="the tournaments in the database")
    _common(listing)
    listing.set_defaults(handler=_list)
    for reader in (resume, show, export, listing):
        reader.set_defaults(handler=_existing_db(reader.get_default("handler")))


def _existing_db(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """``handler`` for a command that reads a tournament database: refused in one line when the file
    is missing (a mistyped --db must not create an empty database) or is not a tournament database."""

    def guarded(args: argparse.Namespace) -> int:
        if not args.db.is_file():
            print(f"error: no database file {args.db}", file=sys.stderr)
            return exits.USAGE
        try:
            return handler(args)
        except sqlite3.Error as error:
            print(f"error: cannot read the tournament database {args.db}: {error}", file=sys.stderr)
            return exits.USAGE
        except OSError as error:  # an export file that cannot be written
            print(f"error: {error.strerror or error}: {error.filename}", file=sys.stderr)
            return exits.USAGE

    return guarded


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        type=Path,
        default=Path(DEFAULT_DB),
        help="database file (default ./ziggurat-tournaments.db, or $ZIGGURAT_TOURNAMENT_DB)",
    )


def _http_port(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--http-port",
        type=int,
        metavar="PORT",
        help="serve the live tournament page (standings, crosstable, games to spectate) on this HTTP "
        "port of the listen host; 0 picks a free one (default: the config's [server] http_port, else none)",
    )
    parser.add_argument(
        "--page-linger",
        type=float,
        default=PAGE_LINGER_SECONDS,
        metavar="SECONDS",
        help=f"with a live page: keep it up this long after the end (default {PAGE_LINGER_SECONDS:g}; "
        "Ctrl-C stops it sooner)",
    )


def _executor_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=("debug", "info", "warning", "error"),
        help="log lines shown above the progress bar (default warning)",
    )
    parser.add_argument(
        "--executor",
        choices=EXECUTORS,
        default="local",
        help="where games run: here (local, default) or as Ray tasks on a cluster (ray; ziggurat[ray])",
    )
    parser.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="--executor ray: the cluster to join (default RAY_ADDRESS, else a local single-node one)",
    )


def _make_runner(args: argparse.Namespace, **kwargs: Any) -> TournamentRunner | None:
    """The runner, or None after printing why it cannot run (Ray missing, remote bots with Ray,
    a database another process owns)."""
    try:
        DatabaseOwner.check_free(args.db)
        check_database_path(args.db)  # the runner opens it before its server's own check
    except StartupError as error:
        print(f"error: {error}", file=sys.stderr)
        return None
    try:
        if args.executor == "ray":
            require_ray()
        return TournamentRunner(
            args.db,
            listen=args.listen,
            http_port=args.http_port,
            page_linger=args.page_linger,
            show_progress=not args.quiet,
            executor=args.executor,
            ray_address=args.ray_address,
            **kwargs,
        )
    except (RuntimeError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return None


def _logging(args: argparse.Namespace) -> None:
    """Log lines on stderr; on a terminal they are printed above the progress bar, never onto it."""
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )


def _run(args: argparse.Namespace) -> int:
    _logging(args)
    try:
        text = args.config.read_text()
        load_tournament_config(text, args.config.resolve())
    except (OSError, ConfigError) as error:
        print(f"error: {error}", file=sys.stderr)
        return exits.USAGE
    except UnicodeDecodeError:
        print(f"error: {args.config} is not UTF-8 text (TOML must be)", file=sys.stderr)
        return exits.USAGE
    runner = _make_runner(args, config_text=text, config_path=args.config.resolve(), seed_text=args.seed)
    if runner is None:
        return 2
    print(
        f"tournament id {runner.tournament_id} "
        f"(resume with: ziggurat tournament resume {runner.tournament_id})",
        file=sys.stderr,
        flush=True,
    )
    return _go(runner)


def _resume(args: argparse.Namespace) -> int:
    _logging(args)
    store = TournamentStore(args.db)
    row = store.get(args.tournament_id)
    store.close()
    if row is None:
        print(f"error: no tournament {args.tournament_id!r} in {args.db}", file=sys.stderr)
        return 2
    if row.status == "finished":
        print(f"tournament {row.tournament_id} already finished ({row.stop_reason})", file=sys.stderr)
        return 0
    runner = _make_runner(
        args, config_text=row.config_text, config_path=Path(row.config_path), tournament_id=row.tournament_id
    )
    if runner is None:
        return 2
    return _go(runner)


LEFTOVER_SECONDS = 5.0
"""How long, after the run, what it left behind may take to finish while the event loop is open."""


async def _run_to_the_end(runner: TournamentRunner) -> str:
    """The run, then what it left behind, finished while this event loop is still open.

    A stop that was shielded from a cancellation (a program's SIGTERM grace, a stdio bridge's
    ``quit``) may outlive its game's task; ``asyncio.run`` cancels whatever is left when the main
    task returns, and a subprocess transport or channel that nobody closed is then finalized by
    the garbage collector after the loop is closed, printing ``Exception ignored … Event loop is
    closed``. So: wait (bounded) for the tasks still running, then collect what nobody holds, so
    that every finalizer runs with its loop open. Only here, in the command, is the loop the run's
    own: a caller that runs the runner in its own loop owns its other tasks.
    """
    reason = await runner.run()
    current = asyncio.current_task()
    leftovers = [task for task in asyncio.all_tasks() if task is not current and not task.done()]
    if leftovers:
        await asyncio.wait(leftovers, timeout=LEFTOVER_SECONDS)
    gc.collect()
    await asyncio.sleep(0)  # the close callbacks those finalizers scheduled
    return reason


def _go(runner: TournamentRunner) -> int:
    try:
        asyncio.run(_run_to_the_end(runner))
    # this machine cannot run it as configured, or a program cannot start in its sandbox
    except (StartupError, SandboxUnavailable, PreflightError) as error:
        print(f"error: {error}", file=sys.stderr)
        return exits.FAILED
    except KeyboardInterrupt:
        if runner.finished:  # Ctrl-C while the live page showed the final standings
            return 0
        print(
            f"\ninterrupted: resume with `ziggurat tournament resume {runner.tournament_id}`", file=sys.stderr
        )
        return 130
    return 0


def _load(args: argparse.Namespace) -> tuple[Any, list[str], list[dict[str, Any]]] | None:
    store = TournamentStore(args.db)
    row = store.get(args.tournament_id)
    if row is None:
        store.close()
        print(f"error: no tournament {args.tournament_id!r} in {args.db}", file=sys.stderr)
        return None
    config = load_tournament_config(row.config_text, Path(row.config_path))
    results = [game.result for game in store.games(row.tournament_id) if game.result is not None]
    store.close()
    return row, [p.name for p in config.participants], results


def _standings(args: argparse.Namespace) -> int:
    loaded = _load(args)
    if loaded is None:
        return 2
    row, names, results = loaded
    config = load_tournament_config(row.config_text, Path(row.config_path))
    banned = disqualified(results, config.max_failures)
    print(
        f"{row.name} ({row.tournament_id}): {len(results)} games, {row.status}"
        + (f" ({row.stop_reason})" if row.stop_reason else "")
    )
    print(format_standings(standings(names, results, banned)))
    print()
    print(format_crosstable(names, crosstable(names, results)))
    if len(names) > 2:
        print()
        print(format_elo_table(names, pairwise_elo(names, results)))
    pairings = pairings_to_test(names, config.seats, config.champion)
    if pairings:
        print()
    for first, second in pairings:
        print(format_head_to_head(head_to_head(first, second, results, config.sprt)))
    return 0


def _export(args: argparse.Namespace) -> int:
    loaded = _load(args)
    if loaded is None:
        return 2
    row, names, results = loaded
    config = load_tournament_config(row.config_text, Path(row.config_path))
    banned = disqualified(results, config.max_failures)
    store = TournamentStore(args.db)
    secret = store.secret(row.tournament_id)  # shown by summary() only once the tournament is over
    store.close()
    if not (args.jsonl or args.json or args.csv):
        print("error: give --jsonl, --json and/or --csv", file=sys.stderr)
        return 2
    if args.jsonl:
        print(f"{export_jsonl(results, args.jsonl)} games written to {args.jsonl}")
    if args.json:
        data = summary(
            row.name,
            names,
            results,
            banned,
            status=row.status,
            stop_reason=row.stop_reason,
            pairings=pairings_to_test(names, config.seats, config.champion),
            sprt_params=config.sprt,
            secret=secret,
        )
        args.json.write_text(json.dumps(data, indent=2) + "\n")
        print(f"summary written to {args.json}")
    if args.csv:
        args.csv.write_text(summary_csv(standings(names, results, banned)))
        print(f"standings written to {args.csv}")
    return 0


def _list(args: argparse.Namespace) -> int:
    store = TournamentStore(args.db)
    for row in store.all():
        games = store.games(row.tournament_id)
        done = sum(1 for g in games if g.status == "done")
        print(f"{row.tournament_id}  {row.status:<8} {done:>5}/{len(games):<5} {row.name}")
    store.close()
    return 0
