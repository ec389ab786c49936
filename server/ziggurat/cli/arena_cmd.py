"""``ziggurat arena``: run a standing arena, read its ladder, export it, and operate it.

Every action takes the arena's TOML file (``docs/arena.md``), which names its database. The
operator's controls (pause, resume, stop, retire, approve) are written into that database
and read by the running arena within a pairing round: whoever may write the file is the
operator, and there is no network path to them.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import logging
import secrets
import sys
from pathlib import Path
from typing import Any

from ziggurat.cli import exits
from ziggurat.cli.commands import summary_of


def register(commands: Any) -> None:
    """Add ``arena`` and its actions."""
    parser = commands.add_parser(
        "arena",
        help=summary_of("arena"),
        description=(
            "A standing arena from a TOML file (docs/arena.md): bots connect whenever they like, "
            "are paired by rating, and a ladder that lasts shows where they stand."
        ),
    )
    sub = parser.add_subparsers(dest="arena_command", metavar="ACTION", required=True)

    run = sub.add_parser("run", help="run the arena until it is stopped (Ctrl-C, or `arena stop`)")
    run.add_argument("config", type=Path, metavar="ARENA.toml")
    run.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])
    run.set_defaults(handler=_run)

    standings = sub.add_parser("standings", help="print the ladders (from the database; works while it runs)")
    standings.add_argument("config", type=Path, metavar="ARENA.toml")
    standings.add_argument("--json", action="store_true", help="one JSON object instead of tables")
    standings.set_defaults(handler=_standings)

    export = sub.add_parser("export", help="every game or every rating change, as JSONL or CSV")
    export.add_argument("config", type=Path, metavar="ARENA.toml")
    export.add_argument("what", choices=["games", "ratings"])
    export.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
    export.add_argument("--output", "-o", type=Path, help="a file (default: standard output)")
    export.set_defaults(handler=_export)

    for name, help_text in (
        ("pause", "stop pairing new games (games in progress go on)"),
        ("resume", "pair again after a pause"),
        ("stop", "stop the arena cleanly: no new games, those in progress played to their end"),
    ):
        control = sub.add_parser(name, help=help_text)
        control.add_argument("config", type=Path, metavar="ARENA.toml")
        control.set_defaults(handler=_control, control=name)

    for name, help_text in (
        ("retire", "never pair this entrant again (its games and lines stay on the ladder)"),
        ("approve", 'let a self-registered entrant be paired (registration policy "approval")'),
    ):
        action = sub.add_parser(name, help=help_text)
        action.add_argument("config", type=Path, metavar="ARENA.toml")
        action.add_argument("entrant", metavar="NAME")
        action.set_defaults(handler=_entrant_state, state="retired" if name == "retire" else "active")

    token = sub.add_parser(
        "token",
        help="issue a credential: print a new token and the token_sha256 line for the entrant's [[entrant]]",
    )
    token.add_argument("entrant", metavar="NAME")
    token.set_defaults(handler=_token)


def _config(path: Path) -> Any:
    from ziggurat.arena.config import ArenaConfigError, load_arena_config

    try:
        return load_arena_config(path)
    except ArenaConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return None


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    config = _config(args.config)
    if config is None:
        return exits.USAGE
    from ziggurat.arena.runner import ArenaRunner
    from ziggurat.store.owner import DatabaseOwner
    from ziggurat.store.startup import StartupError, check_database_path

    try:
        DatabaseOwner.check_free(config.database)
        check_database_path(str(config.database))
    except StartupError as error:  # a database directory missing, or another process's database
        print(f"error: {error}", file=sys.stderr)
        return exits.USAGE
    from ziggurat.tournament.sandbox import SandboxUnavailable

    runner = ArenaRunner(config)
    try:
        code = asyncio.run(runner.run())
    except (StartupError, SandboxUnavailable) as error:
        print(f"error: {error}", file=sys.stderr)
        return exits.FAILED
    except KeyboardInterrupt:
        return exits.INTERRUPTED
    # Ctrl-C stops the arena as cleanly as `arena stop` and SIGTERM do, and says so as every
    # command does: 130 (the README's exit codes)
    return exits.INTERRUPTED if runner.interrupted else code


def _store(config: Any) -> Any:
    from ziggurat.arena.store import ArenaStore

    if not config.database.exists():
        print(f"error: {config.database} does not exist: the arena has not run yet", file=sys.stderr)
        return None
    return ArenaStore(config.database)


def _open(args: argparse.Namespace) -> tuple[Any, Any] | int:
    """The arena's configuration and its tables, or the exit code after saying why not (a bad
    file: 2; an arena that has not run yet: 1)."""
    config = _config(args.config)
    if config is None:
        return exits.USAGE
    store = _store(config)
    if store is None:
        return exits.FAILED
    return config, store


def _standings(args: argparse.Namespace) -> int:
    opened = _open(args)
    if isinstance(opened, int):
        return opened
    config, store = opened
    from ziggurat.arena.runner import rebuild_ladders

    try:
        ladders, rated = rebuild_ladders(config, store)
        entrants = {row.key: row for row in store.entrants()}
        versions = store.versions()
    finally:
        store.close()
    from ziggurat.core.botnames import bot_key

    def state(line: str) -> str:
        base, _, version = line.partition("@")
        row = entrants.get(bot_key(base))
        if row is None or row.state != "active":
            return row.state if row is not None else "retired"
        newest = versions.get(row.key, [""])
        return "active" if version == (newest[-1] if newest else "") else "superseded"

    out: dict[str, Any] = {"arena": config.name, "games_rated": rated, "ladders": []}
    for ladder_config in config.ladders:
        ladder = ladders[ladder_config.game]
        lines = sorted(
            ladder.lines.values(), key=lambda line: (state(line.name) != "active", -line.rating, line.name)
        )
        out["ladders"].append(
            {
                "game": ladder_config.game,
                "standings": [
                    {
                        "line": line.name,
                        "rating": round(line.rating, 1),
                        "mu": round(line.mu, 3),
                        "sigma": round(line.sigma, 3),
                        "games": line.games,
                        "wins": line.wins,
                        "state": state(line.name),
                    }
                    for line in lines
                ],
            }
        )
    if args.json:
        print(json.dumps(out, indent=2))
        return exits.OK
    print(f"{config.name}: {rated} rated games")
    for ladder_out in out["ladders"]:
        print(f"\n{ladder_out['game']}")
        print(
            f"{'rank':>4}  {'line':<28} {'rating':>7} {'mu':>7} {'sigma':>6} {'games':>6} {'wins':>5}  state"
        )
        rank = 0
        for row in ladder_out["standings"]:
            rank += row["state"] == "active"
            shown = str(rank) if row["state"] == "active" else "-"
            print(
                f"{shown:>4}  {row['line']:<28} {row['rating']:>7.1f} {row['mu']:>7.2f} {row['sigma']:>6.2f} "
                f"{row['games']:>6} {row['wins']:>5}  {row['state']}"
            )
        if not ladder_out["standings"]:
            print("   (no rated games yet)")
    return exits.OK


def _export(args: argparse.Namespace) -> int:
    opened = _open(args)
    if isinstance(opened, int):
        return opened
    _, store = opened
    from ziggurat.arena.ladder import displayed

    try:
        games = list(reversed(store.games()))
    finally:
        store.close()
    rows: list[dict[str, Any]] = []
    for game in games:
        if args.what == "games":
            result = game.result or {}
            rows.append(
                {
                    "number": game.number,
                    "game": game.game,
                    "match_id": game.match_id,
                    "status": game.status,
                    "seats": list(game.seats),
                    "ranks": result.get("ranks", []),
                    "termination": result.get("termination", ""),
                    "moves": [m["move"] for m in result.get("moves", [])],
                    "start_ms": game.start_ms,
                    "end_ms": game.end_ms,
                    "rated_order": game.rated_order,
                }
            )
        elif game.status == "rated" and game.ratings is not None:
            for seat, line in enumerate(game.seats):
                before, after = game.ratings[seat]["before"], game.ratings[seat]["after"]
                rows.append(
                    {
                        "rated_order": game.rated_order,
                        "number": game.number,
                        "game": game.game,
                        "line": line,
                        "mu": after[0],
                        "sigma": after[1],
                        "rating": displayed(*after),
                        "change": displayed(*after) - displayed(*before),
                        "time_ms": game.end_ms,
                    }
                )
    if args.what == "ratings":
        rows.sort(key=lambda r: (r["rated_order"], r["line"]))
    out = args.output.open("w", newline="") if args.output else sys.stdout
    try:
        if args.format == "jsonl":
            for row in rows:
                out.write(json.dumps(row) + "\n")
        elif rows:
            writer = csv.DictWriter(out, fieldnames=list(rows[0]))
            writer.writeheader()
            for row in rows:
                writer.writerow({k: json.dumps(v) if isinstance(v, list) else v for k, v in row.items()})
    finally:
        if args.output:
            out.close()
    return exits.OK


def _control(args: argparse.Namespace) -> int:
    opened = _open(args)
    if isinstance(opened, int):
        return opened
    config, store = opened
    try:
        if args.control == "pause":
            store.set_control("paused", "1")
        elif args.control == "resume":
            store.set_control("paused", None)
        else:
            store.set_control("stop", "1")
    finally:
        store.close()
    said = {"pause": "paused", "resume": "pairing again", "stop": "stopping"}[args.control]
    print(f"arena {config.name!r}: {said} (the running arena reads it within a pairing round)")
    return exits.OK


def _entrant_state(args: argparse.Namespace) -> int:
    opened = _open(args)
    if isinstance(opened, int):
        return opened
    config, store = opened
    from ziggurat.core.botnames import bot_key

    try:
        row = store.entrant(bot_key(args.entrant))
        if row is None:
            print(f"error: arena {config.name!r} has no entrant {args.entrant!r}", file=sys.stderr)
            return exits.FAILED
        store.set_state(row.key, args.state)
    finally:
        store.close()
    print(f"entrant {row.name}: {'retired' if args.state == 'retired' else 'active'}")
    return exits.OK


def _token(args: argparse.Namespace) -> int:
    from ziggurat.arena.config import NAME_PATTERN
    from ziggurat.core.match import hash_token

    if not NAME_PATTERN.fullmatch(args.entrant):
        print("error: an entrant's name is 1-32 letters, digits, '.', '_' or '-'", file=sys.stderr)
        return exits.USAGE
    token = secrets.token_urlsafe(24)
    # The token on standard error, the lines for the arena's file on standard output: so
    # `ziggurat arena token alice >> arena.toml` keeps the secret out of the file.
    print(f"{args.entrant}'s token (give it to {args.entrant}; it is shown once): {token}", file=sys.stderr)
    print()
    print("[[entrant]]")
    print(f'name = "{args.entrant}"')
    print(f'token_sha256 = "{hash_token(token)}"')
    return exits.OK
