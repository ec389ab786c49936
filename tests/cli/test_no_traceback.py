"""No traceback reaches a user: every ``ziggurat`` command, driven with bad input as a real
subprocess, says what is wrong in one ``error:`` line and exits with its documented code
(README.md, "Exit codes"); Ctrl-C (SIGINT) exits 130.

The cases cover every sub-command of ``ziggurat --help`` (a test checks the list has not grown
without a case here): broken tournament TOML, missing files, malformed records, unknown match
ids, a server that is down, bad ports, a bot that fails, and SIGINT while each long-running
command runs.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import processes
from tests.servers import ServerProcess
from ziggurat.cli.main import build_parser
from ziggurat.tournament.store import TournamentStore
from ziggurat_client import game_config
from ziggurat_client.sync import SyncClient
from ziggurat_client.v1 import match_pb2

ROOT = Path(__file__).resolve().parents[2]
DOWN = "127.0.0.1:9"  # the discard port: nothing listens there
USAGE, FAILED, INTERRUPTED = 2, 1, 130
GOOD_TOURNAMENT = """
name = "t"
seed = "s"
game = "pylos"
[options]
max_moves = 40
[[participants]]
name = "a"
builtin = "random"
[[participants]]
name = "b"
builtin = "random"
"""
GOOD_ARENA = b"""name = "a"
database = "a.db"
[[ladder]]
game = "pylos"
[[entrant]]
name = "g"
builtin = "greedy"
"""
RECORD = (
    '{"index": 0, "round": 1, "game": "pylos", "options": {}, "seats": ["a", "b"], '
    '"revealed_seed": "%s", "commitment": "x", "moves": [], "termination": "normal", '
    '"ranks": [1, 2], "verdicts": ["finished", "finished"]}'
)


def _ziggurat(*args: str) -> list[str]:
    return [sys.executable, "-m", "ziggurat.cli.main", *args]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZIGGURAT_")}
    return {**env, "PYTHONUNBUFFERED": "1"}


def _no_traceback(out: str, err: str) -> None:
    assert "Traceback" not in out and "Traceback" not in err, f"stdout:\n{out}\nstderr:\n{err}"
    assert "Task exception was never retrieved" not in err, err


@dataclass(frozen=True)
class Case:
    """A command line (``{tmp}`` and ``{server}`` filled in), its exit code and its error line."""

    argv: tuple[str, ...]
    code: int
    says: str
    files: tuple[tuple[str, bytes], ...] = ()
    env: tuple[tuple[str, str], ...] = ()


def _case(
    argv: str, code: int, says: str, files: dict[str, bytes] | None = None, env: dict[str, str] | None = None
) -> Case:
    return Case(tuple(argv.split()), code, says, tuple((files or {}).items()), tuple((env or {}).items()))


OFFLINE = {
    "no command": _case("", USAGE, "required: COMMAND"),
    "unknown command": _case("frobnicate", USAGE, "invalid choice"),
    "play with an empty name": _case(
        "play --name= --server 127.0.0.1:9", USAGE, "a player name cannot be empty"
    ),
    "arena toml syntax error": _case(
        "arena run {tmp}/a.toml", USAGE, "a.toml: not valid TOML", {"a.toml": b"name =\n"}
    ),
    "arena toml unknown key": _case(
        "arena run {tmp}/a.toml", USAGE, "bogus: unknown key", {"a.toml": b"bogus = 1\n" + GOOD_ARENA}
    ),
    "arena toml not utf-8": _case(
        "arena run {tmp}/a.toml", USAGE, "not UTF-8", {"a.toml": b"name = '\xff\xfe'\n"}
    ),
    "arena toml missing": _case("arena run {tmp}/none.toml", USAGE, "cannot read"),
    "arena db directory missing": _case(
        "arena run {tmp}/a.toml", USAGE, "does not exist", {"a.toml": GOOD_ARENA.replace(b"a.db", b"no/a.db")}
    ),
    "arena standings before it ran": _case(
        "arena standings {tmp}/a.toml", FAILED, "the arena has not run yet", {"a.toml": GOOD_ARENA}
    ),
    "arena token bad name": _case("arena token a/b", USAGE, "an entrant's name is 1-32"),
    "tournament toml syntax error": _case(
        "tournament run {tmp}/t.toml --db {tmp}/t.db",
        USAGE,
        "t.toml: not valid TOML",
        {"t.toml": b'name = "x"\ngame =\n'},
    ),
    "tournament toml wrong type": _case(
        "tournament run {tmp}/t.toml --db {tmp}/t.db",
        USAGE,
        "name: must be a non-empty string",
        {"t.toml": GOOD_TOURNAMENT.replace('name = "t"', "name = 3").encode()},
    ),
    "tournament toml unknown key": _case(
        "tournament run {tmp}/t.toml --db {tmp}/t.db",
        USAGE,
        "bogus: unknown key",
        {"t.toml": b"bogus = 1\n" + GOOD_TOURNAMENT.encode()},
    ),
    "tournament toml not utf-8": _case(
        "tournament run {tmp}/t.toml --db {tmp}/t.db", USAGE, "not UTF-8", {"t.toml": b"name = '\xff\xfe'\n"}
    ),
    "tournament toml missing": _case("tournament run {tmp}/none.toml --db {tmp}/t.db", USAGE, "No such file"),
    "tournament db directory missing": _case(
        "tournament run {tmp}/t.toml --db {tmp}/no/t.db",
        USAGE,
        "does not exist",
        {"t.toml": GOOD_TOURNAMENT.encode()},
    ),
    "tournament db not a database": _case(
        "tournament run {tmp}/t.toml --db {tmp}/t.db",
        USAGE,
        "is not an SQLite database",
        {"t.toml": GOOD_TOURNAMENT.encode(), "t.db": b"not a database at all" * 100},
    ),
    "tournament sandbox unavailable": _case(
        "tournament run {tmp}/t.toml --db {tmp}/t.db",
        FAILED,
        "the sandbox needs",
        {
            "t.toml": (
                GOOD_TOURNAMENT + '[[participants]]\nname = "p"\nstdio = ["/bin/sh", "p.sh"]\n'
            ).encode()
        },
        env={"PATH": "/nonexistent"},  # no bubblewrap to be found
    ),
    "tournament export into a missing directory": _case(
        "tournament export t1 --db {tmp}/t.db --json {tmp}/no/s.json",
        USAGE,
        "No such file or directory",
    ),
    "tournament list missing db": _case("tournament list --db {tmp}/none.db", USAGE, "no database file"),
    "tournament standings not a database": _case(
        "tournament standings abc --db {tmp}/t.db", USAGE, "cannot read", {"t.db": b"x" * 4096}
    ),
    "tournament resume missing db": _case("tournament resume abc --db {tmp}/none.db", USAGE, "no database"),
    "tournament export missing db": _case(
        "tournament export abc --db {tmp}/none.db --json {tmp}/x.json", USAGE, "no database"
    ),
    "replay not json": _case("replay {tmp}/g.jsonl", USAGE, "line 2: not JSON", {"g.jsonl": b"\n{oops\n"}),
    "replay not an object": _case(
        "replay {tmp}/g.jsonl", USAGE, "line 1: not a game record", {"g.jsonl": b"[1]"}
    ),
    "replay field missing": _case(
        "replay {tmp}/g.jsonl", USAGE, "no 'round'", {"g.jsonl": b'{"index": 1, "game": "pylos"}'}
    ),
    "replay seed not hex": _case(
        "replay {tmp}/g.jsonl", USAGE, "'revealed_seed' is not hex", {"g.jsonl": (RECORD % "zz").encode()}
    ),
    "replay wrong seed": _case(
        "replay {tmp}/g.jsonl", FAILED, "does not replay", {"g.jsonl": (RECORD % ("00" * 32)).encode()}
    ),
    "replay negative delay": _case("replay {tmp}/g.jsonl --delay -1", USAGE, "must be 0 or more"),
    "replay missing file": _case("replay {tmp}/none.jsonl", USAGE, "No such file"),
    "verify malformed record": _case("verify --file {tmp}/r.json", USAGE, "cannot read", {"r.json": b"{"}),
    "verify missing record": _case("verify --file {tmp}/none.json", USAGE, "cannot read"),
    "verify server down": _case(f"verify abc --server {DOWN}", USAGE, "UNAVAILABLE"),
    "check missing db": _case("check --db {tmp}/none.db", USAGE, "no database file"),
    "rules bad position": _case("rules moves pylos garbage", USAGE, "expected"),
    "rules bad seed": _case("rules new kabaleo --seed zz", USAGE, "64 hex digits"),
    "serve port out of range": _case("serve --port 99999 --db {tmp}/z.db", USAGE, "not a port number"),
    "serve insecure web without tls": _case(
        "serve --port 0 --db {tmp}/z.db --no-mdns --insecure-web", USAGE, "only applies with --tls-cert"
    ),
    "serve tls files missing": _case(
        "serve --port 0 --db {tmp}/z.db --no-mdns --tls-cert {tmp}/none.pem --tls-key {tmp}/none.key",
        FAILED,
        "cannot read the TLS files",
    ),
    "tls init bad host": _case("tls init --dir {tmp}/t --host=bad!host", USAGE, "neither a host name"),
    "tls init files there": _case(
        "tls init --dir {tmp} --host a.lan", USAGE, "ca.pem exists", {"ca.pem": b"a CA already\n"}
    ),
    "tls init directory not writable": _case(
        "tls init --dir /proc/ziggurat-tls --host a.lan", FAILED, "cannot write the TLS files"
    ),
    "serve http port out of range": _case(
        "serve --port 0 --http-port 70000 --db {tmp}/z.db --no-mdns", USAGE, "not a port number"
    ),
    "serve http port env garbage": _case(
        "serve --port 0 --db {tmp}/z.db --no-mdns",
        USAGE,
        "not a port number",
        env={"ZIGGURAT_HTTP_PORT": "x"},
    ),
    "serve worker ports without workers": _case(
        "serve --port 0 --db {tmp}/z.db --no-mdns --worker-ports 40000", USAGE, "add --workers"
    ),
    "serve worker ports past 65535": _case(
        "serve --port 0 --db {tmp}/z.db --no-mdns --workers 4 --worker-ports 65533", USAGE, "use 1..65532"
    ),
    "serve worker ports over the public port": _case(
        "serve --port 40001 --db {tmp}/z.db --no-mdns --workers 2 --worker-ports 40000",
        USAGE,
        "one of the workers' own ports",
    ),
    "serve db directory missing": _case(
        "serve --host 127.0.0.1 --port 0 --db {tmp}/no/z.db --no-mdns", FAILED, "does not exist"
    ),
    "serve port in use": _case(
        "serve --host 127.0.0.1 --port {busy} --db {tmp}/z.db --no-mdns", FAILED, "in use"
    ),
    "bot server down": _case(f"bot random --create pylos --server {DOWN}", FAILED, "UNAVAILABLE"),
    "bot unknown name": _case(f"bot nosuchbot --create pylos --server {DOWN}", USAGE, "unknown bot"),
    "bot that does not play the game": _case(
        f"bot alphabeta --create kabaleo --server {DOWN}", USAGE, "does not play kabaleo"
    ),
    "bot file that raises on import": _case(
        f"bot {{tmp}}/b.py:Bot --create pylos --server {DOWN}",
        USAGE,
        "cannot load the bot",
        {"b.py": b"raise RuntimeError('broken bot module')\n"},
    ),
    "bot invite server down": _case(
        f"bot invite x --match abc --server {DOWN}",
        FAILED,
        "UNAVAILABLE",
        env={"ZIGGURAT_CREATOR_TOKEN": "some-creator-token"},
    ),
    "bot invite without a creator token": _case(
        f"bot invite x --match abc --server {DOWN}", USAGE, "needs the match's creator token"
    ),
    "bridge server down": _case(
        f"bridge --server {DOWN} --match abc --token t -- sh {ROOT}/examples/stdio/random_bot.sh",
        FAILED,
        "UNAVAILABLE",
    ),
    "watch server down": _case(f"watch abc --server {DOWN}", FAILED, "cannot reach the server"),
    "bridge without program": _case("bridge --match abc --token t", USAGE, "give the program"),
    "demo bad seed": _case("demo --seed x", USAGE, "invalid int value"),
}

ONLINE = {
    "bot unknown match": _case("bot random --match nosuchmatch --server {server}", FAILED, "MATCH_NOT_FOUND"),
    "bot invite unknown match": _case(
        "bot invite x --match nosuchmatch --server {server}",
        FAILED,
        "NOT_FOUND",
        env={"ZIGGURAT_CREATOR_TOKEN": "some-creator-token"},
    ),
    "watch unknown match": _case("watch nosuchmatch --server {server}", FAILED, "no match nosuchmatch"),
    "verify saving into a missing directory": _case(
        "verify {match} --server {server} --save {tmp}/no/r.json", USAGE, "cannot save the record"
    ),
    "verify unknown match": _case("verify nosuchmatch --server {server}", USAGE, "NOT_FOUND"),
    "bridge unknown match": _case(
        f"bridge --server {{server}} --match nosuchmatch --join x -- sh {ROOT}/examples/stdio/random_bot.sh",
        FAILED,
        "MATCH_NOT_FOUND",
    ),
}


def _fill(case: Case, tmp: Path, **values: str) -> tuple[list[str], dict[str, str]]:
    for name, content in case.files:
        (tmp / name).write_bytes(content)
    argv = [arg.format(tmp=tmp, **values) for arg in case.argv]
    return _ziggurat(*argv), {**_env(), **dict(case.env)}


def _check(case: Case, result: subprocess.CompletedProcess[str]) -> None:
    _no_traceback(result.stdout, result.stderr)
    assert result.returncode == case.code, (result.returncode, result.stderr)
    errors = [
        line for line in result.stderr.splitlines() if "error:" in line or line.startswith("ziggurat watch:")
    ]
    assert len(errors) == 1, result.stderr
    assert case.says in errors[0], errors[0]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path_factory.mktemp("server") / "z.db", ["--no-web"])
    process.start()
    yield process
    process.stop()


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


@pytest.fixture
def finished_match(server: ServerProcess) -> str:
    with SyncClient(server.address) as client:
        match_id = str(client.create_match(game_config("pylos")).match_id)
        client.join(match_id, "a")
        client.resign(client.join(match_id, "b"))
    return match_id


@pytest.mark.parametrize("name", sorted(OFFLINE))
def test_bad_input_is_one_line_and_an_exit_code(name: str, tmp_path: Path, busy_port: int) -> None:
    case = OFFLINE[name]
    if "export" in name and "{tmp}/t.db" in case.argv:
        store = TournamentStore(tmp_path / "t.db")  # a tournament with no games yet
        store.create("t1", "t", str(tmp_path / "t.toml"), GOOD_TOURNAMENT, b"s" * 32)
        store.close()
    argv, env = _fill(case, tmp_path, busy=str(busy_port))
    _check(case, processes.run(argv, capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path))


@pytest.mark.parametrize("name", sorted(ONLINE))
def test_bad_request_to_a_live_server_is_one_line(
    name: str, tmp_path: Path, server: ServerProcess, finished_match: str
) -> None:
    case = ONLINE[name]
    argv, env = _fill(case, tmp_path, server=server.address, match=finished_match)
    _check(case, processes.run(argv, capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path))


def test_a_bot_that_fails_resigns_its_seat_in_one_line(tmp_path: Path, server: ServerProcess) -> None:
    """A bot whose ``choose`` raises: one line, exit 1, and its opponent is not left waiting."""
    (tmp_path / "bug.py").write_text(
        "class Bot:\n    name = 'bug'\n\n    def choose(self, turn):\n        raise RuntimeError('bug')\n"
    )
    with SyncClient(server.address) as client:
        match = client.create_match(game_config("pylos"))
        person = client.join(match.match_id, "person")  # seats are drawn by lot
        bot = processes.popen(
            _ziggurat("bot", f"{tmp_path}/bug.py:Bot", "--match", match.match_id, "--server", server.address),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        deadline = time.monotonic() + 60
        while client.get_match(match.match_id).status == match_pb2.MATCH_STATUS_WAITING:
            assert time.monotonic() < deadline, "the bot never took its seat"
            time.sleep(0.1)
        if person.seat == 1:
            client.submit_move(person, "1a1", 0)  # then the bot (seat 2) fails on its turn
        out, err = bot.communicate(timeout=60)
        ended = client.get_match(match.match_id)
    _no_traceback(out, err)
    assert bot.returncode == FAILED, err
    assert [line for line in err.splitlines() if "error:" in line] == [
        f"error: the bot bug failed on its turn (RuntimeError: bug); its seat {3 - person.seat} resigned "
        "(--debug shows where)"
    ]
    assert ended.status == match_pb2.MATCH_STATUS_FINISHED, ended


def _as_from_a_terminal() -> None:
    """In the child before exec: SIGINT at its default, as a shell at a terminal starts a command.

    A process whose SIGINT is ignored passes that on to its children, and Python then installs
    no KeyboardInterrupt handler (the POSIX convention for background jobs, which the commands
    keep). A pytest worker was once found ignoring SIGINT after other tests, and the commands
    that rely on KeyboardInterrupt (bot, bridge, tournament run) then never saw the Ctrl-C.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Running:
    """A command running in the background, its output collected as it comes."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.proc = processes.popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
            cwd=cwd,
            preexec_fn=_as_from_a_terminal,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, self.out), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, self.err), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: object, into: list[str]) -> None:
        assert hasattr(stream, "read")
        while chunk := stream.read(1):
            into.append(chunk)

    def wait_for(self, text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while text not in "".join(self.out) + "".join(self.err):
            assert self.proc.poll() is None, f"exited {self.proc.returncode}: {''.join(self.err)}"
            assert time.monotonic() < deadline, f"no {text!r} in {''.join(self.out + self.err)[-2000:]}"
            time.sleep(0.05)

    def interrupt(self) -> tuple[int, str, str]:
        self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(60)
        finally:
            processes.stop(self.proc)
        for reader in self._readers:
            reader.join(10)
        return code, "".join(self.out), "".join(self.err)


def _tournament(tmp: Path, server: ServerProcess) -> tuple[list[str], str]:
    """Many games, each long enough to be cut off in the middle (mcts thinks 50 ms a move)."""
    config = GOOD_TOURNAMENT.replace('seed = "s"', 'seed = "s"\nrounds = 50\nconcurrency = 2')
    config = config.replace("max_moves = 40", "max_moves = 200")
    config += '[[participants]]\nname = "c"\nbuiltin = "mcts"\noptions = { max_seconds = 0.05 }\n'
    (tmp / "t.toml").write_text(config)
    return _ziggurat("tournament", "run", str(tmp / "t.toml"), "--db", str(tmp / "t.db")), "Finished game"


def _arena(tmp: Path, server: ServerProcess) -> tuple[list[str], str]:
    """An arena of two built-in bots playing games, stopped by Ctrl-C mid-game (it lets the games
    end, as `arena stop` does, and says 130)."""
    (tmp / "a.toml").write_bytes(GOOD_ARENA + b'[[entrant]]\nname = "r"\nbuiltin = "random"\n')
    return _ziggurat("arena", "run", str(tmp / "a.toml"), "--log-level", "info"), "game 2:"


def _created_match(server: ServerProcess) -> str:
    with SyncClient(server.address) as client:
        return str(client.create_match(game_config("pylos")).match_id)


SIGINT_CASES: dict[str, Callable[[Path, ServerProcess], tuple[list[str], str]]] = {
    "serve": lambda tmp, _: (
        _ziggurat("serve", "--host", "127.0.0.1", "--port", "0", "--db", str(tmp / "z.db"), "--no-mdns"),
        "ziggurat web client on",
    ),
    "serve --workers 2": lambda tmp, _: (
        _ziggurat("serve", "--host", "127.0.0.1", "--port", "0", "--db", str(tmp / "z.db"), "--workers", "2"),
        "ziggurat workers: 2",
    ),
    "bot waiting for an opponent": lambda tmp, server: (
        _ziggurat("bot", "random", "--create", "pylos", "--server", server.address),
        "playing seat",
    ),
    "remote bot reconnecting to a server that is down": lambda tmp, _: (
        _ziggurat("bot", "random", "--remote", "--server", DOWN),
        "reconnecting",
    ),
    "bridge waiting for an opponent": lambda tmp, server: (
        _ziggurat(
            "bridge",
            "--server",
            server.address,
            "--match",
            _created_match(server),
            "--join",
            "x",
            "--",
            "sh",
            str(ROOT / "examples/stdio/random_bot.sh"),
        ),
        "playing seat",
    ),
    "watch": lambda tmp, server: (
        _ziggurat("watch", _created_match(server), "--server", server.address),
        "\x1b[",
    ),
    "play": lambda tmp, server: (_ziggurat("play", "--server", server.address), "\x1b["),
    "tournament run": _tournament,
    "arena run": _arena,
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SIGINT_CASES))
def test_ctrl_c_exits_130_without_a_traceback(name: str, tmp_path: Path, server: ServerProcess) -> None:
    argv, ready = SIGINT_CASES[name](tmp_path, server)
    running = Running(argv, tmp_path)
    running.wait_for(ready)
    time.sleep(1.0)  # well inside its work: mid-game for the tournament, drawn for the TUI
    code, out, err = running.interrupt()
    _no_traceback(out, err)
    assert code == INTERRUPTED, err


def test_every_command_has_a_case() -> None:
    """A new sub-command gets a bad-input case here."""
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert commands is not None
    covered = {case.argv[0] for case in (*OFFLINE.values(), *ONLINE.values()) if case.argv}
    covered |= {"play"}  # its bad input is a server that answers nothing: a SIGINT case
    assert set(commands) <= covered, set(commands) - covered


BUG = """
import sys
from ziggurat.cli import demo_cmd, main

def broken(args):
    raise RuntimeError("an unforeseen bug")

demo_cmd._demo = broken
sys.exit(main.main(sys.argv[1:]))
"""


def test_an_unexpected_error_is_one_line_naming_its_traceback_file(tmp_path: Path) -> None:
    """The last line of defence: a bug is exit 70 and one line; the traceback is in a file."""
    env = {**_env(), "TMPDIR": str(tmp_path)}
    result = processes.run(
        [sys.executable, "-c", BUG, "demo"], capture_output=True, text=True, env=env, timeout=60
    )
    _no_traceback(result.stdout, result.stderr)
    assert result.returncode == 70
    line, *rest = result.stderr.splitlines()
    assert not rest and line.startswith("error: unexpected RuntimeError: an unforeseen bug"), result.stderr
    written = Path(line.rsplit("traceback in ", 1)[1].rstrip(")"))
    assert written.parent == tmp_path and "in broken" in written.read_text()
    debug = processes.run(
        [sys.executable, "-c", BUG, "--debug", "demo"], capture_output=True, text=True, env=env, timeout=60
    )
    assert debug.returncode == 1 and "Traceback" in debug.stderr  # --debug: Python's own report


def test_a_closed_pipe_is_exit_141_without_a_traceback(tmp_path: Path) -> None:
    from ziggurat.rules.seeding import commitment

    seed = "00" * 32
    game = RECORD.replace('"x"', f'"{commitment(bytes.fromhex(seed))}"') % seed
    (tmp_path / "g.jsonl").write_text("\n".join([game] * 5000))
    shell = f'{" ".join(_ziggurat("replay", str(tmp_path / "g.jsonl")))} | head -1; echo "$PIPESTATUS" >&2'
    result = processes.run(["bash", "-c", shell], capture_output=True, text=True, env=_env(), timeout=60)
    _no_traceback(result.stdout, result.stderr)
    assert result.stderr.strip() == "141", result.stderr


def test_the_readme_lists_the_exit_codes_the_commands_use() -> None:
    from ziggurat.cli import bridge_cmd, exits

    text = (ROOT / "README.md").read_text()
    table = text.split("| exit code | meaning |", 1)[1].split("\n\n", 1)[0]
    documented = {int(row.split("|")[1]) for row in table.strip().splitlines()[1:]}
    used = {value for name, value in vars(exits).items() if name.isupper()}
    assert documented == used | set(bridge_cmd.EXIT_CODES.values())
