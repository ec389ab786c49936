"""The stdio bridge end to end: real programs (sh, C) play whole games on a real server."""

from __future__ import annotations

import asyncio
import random
import shutil
import sys
from pathlib import Path

import pytest

from tests import processes
from tests.servers import RunningServer, kabaleo_config, pylos_config
from ziggurat.stdio.bridge import (
    BridgeSettings,
    HandshakeError,
    StdioBot,
    Verdict,
    child_environment,
    play_seat,
)
from ziggurat.stdio.process import LineSplitter
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat_client import ZigguratClient
from ziggurat_client.bot import Turn
from ziggurat_client.runner import SeatRunner

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "stdio"
RANDOM_SH = ["sh", str(EXAMPLES / "random_bot.sh")]


class PyRandom:
    """The Python opponent: a seeded random bot on the ordinary SDK path."""

    name = "py-random"

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def choose(self, turn: Turn) -> str:
        return self.rng.choice(turn.legal_moves)


async def new_match(client: ZigguratClient, config: game_pb2.GameConfig, per_move_ms: int = 0) -> str:
    match = await client.create_match(
        config,
        time_control=match_pb2.TimeControl(per_move_ms=per_move_ms),
        seat_assignment=match_pb2.SEAT_ASSIGNMENT_CHOSEN,
    )
    return match.match_id


async def py_seat(client: ZigguratClient, match_id: str, seat: int) -> match_pb2.MatchEndedEvent:
    handle = await client.join(match_id, "py-random", seat)
    return await SeatRunner(client, handle, PyRandom(seat)).run()


async def bridged(
    client: ZigguratClient, match_id: str, seat: int, argv: list[str], settings: BridgeSettings | None = None
) -> StdioBot:
    async with StdioBot(argv, settings=settings) as bot:
        handle = await client.join(match_id, bot.name, seat)
        await play_seat(client, handle, bot)
    return bot


def script(tmp_path: Path, name: str, body: str) -> list[str]:
    path = tmp_path / name
    path.write_text(body)
    return ["sh", str(path)]


def recorded(tmp_path: Path, log: Path, argv: list[str]) -> list[str]:
    """``argv`` behind a wrapper that tees everything the bot is sent into ``log``."""
    wrapper = script(tmp_path, f"tee_{log.stem}.sh", 'log=$1; shift\ntee "$log" | "$@"\n')
    return [*wrapper, str(log), *argv]


def seen_lines(log: Path) -> list[str]:
    return log.read_text().splitlines()


def assert_no_foreign_objective(lines: list[str], seat: int) -> None:
    """Until ``reveal``, every position shows this seat's objective and nobody else's."""
    positions = 0
    for line in lines:
        if line.startswith("reveal "):
            assert "?" not in line
            break
        if line.startswith("position "):
            positions += 1
            held, _, unheld = line.split(" ")[5].partition("+")
            assert unheld == "??", line
            for index, letter in enumerate(held, start=1):
                assert (letter != "?") if index == seat else (letter == "?"), line
    else:
        pytest.fail("the bot was never sent the reveal")
    assert positions > 0


# ---------------------------------------------------------------------------- whole games


async def test_shell_example_plays_pylos_against_a_python_bot(
    server: RunningServer, client: ZigguratClient
) -> None:
    match_id = await new_match(client, pylos_config())
    bot, ended = await asyncio.gather(bridged(client, match_id, 1, RANDOM_SH), py_seat(client, match_id, 2))
    assert bot.verdict == Verdict.FINISHED and bot.refused == 0
    assert bot.name == "random-sh"
    assert sorted(ended.outcome.ranks) in ([1, 2], [1, 1])
    match = await client.get_match(match_id)
    assert match.status == match_pb2.MATCH_STATUS_FINISHED
    assert match.seats[0].player_name == "random-sh"
    assert bot.process.returncode == 0  # it obeyed quit


async def test_c_example_plays_three_seat_kabaleo(
    server: RunningServer, client: ZigguratClient, tmp_path: Path
) -> None:
    compiler = shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler (cc) on this machine")
    binary = tmp_path / "random_bot"
    build = processes.run(
        [compiler, "-O2", "-Wall", "-Wextra", "-o", str(binary), str(EXAMPLES / "random_bot.c")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0 and not build.stderr, build.stderr
    log = tmp_path / "c_seat2.txt"
    match_id = await new_match(client, kabaleo_config(3))
    ended, bot, _ = await asyncio.gather(
        py_seat(client, match_id, 1),
        bridged(client, match_id, 2, recorded(tmp_path, log, [str(binary)])),
        py_seat(client, match_id, 3),
    )
    assert bot.verdict == Verdict.FINISHED and bot.name == "random-c"
    assert ended.outcome.termination == game_pb2.TERMINATION_NORMAL
    lines = seen_lines(log)
    assert lines[0] == "ziggurat 1"
    assert lines[1].startswith("game kabaleo 3 2")
    assert sum(line.startswith("go ") for line in lines) == 10  # 30 pieces, 10 each
    assert lines[-2].startswith("gameover normal ") and lines[-1] == "quit"
    assert_no_foreign_objective(lines, seat=2)


async def test_bots_never_see_another_seats_objective(
    server: RunningServer, client: ZigguratClient, tmp_path: Path
) -> None:
    logs = {seat: tmp_path / f"seat{seat}.txt" for seat in (1, 3)}
    match_id = await new_match(client, kabaleo_config(4))
    bot1, _, bot3, _ = await asyncio.gather(
        bridged(client, match_id, 1, recorded(tmp_path, logs[1], RANDOM_SH)),
        py_seat(client, match_id, 2),
        bridged(client, match_id, 3, recorded(tmp_path, logs[3], RANDOM_SH)),
        py_seat(client, match_id, 4),
    )
    assert bot1.verdict == bot3.verdict == Verdict.FINISHED
    for seat, log in logs.items():
        lines = seen_lines(log)
        assert_no_foreign_objective(lines, seat)
        # Incremental engines can follow: the "moves" lines, concatenated, are the whole game
        # apart from the bot's own moves, and FIRST always says where they start.
        told = [line.split()[1:] for line in lines if line.startswith("moves ")]
        assert told[0][0] == "0"
        assert sum(len(fields) - 1 for fields in told) == 36 - 9


async def test_shell_examples_play_phantom_ttt_and_see_only_their_own_marks(
    server: RunningServer, client: ZigguratClient, tmp_path: Path
) -> None:
    """A game the bridge knows only through the registry: the moves it may not see are ``?``,
    one word each, so an incremental engine still counts plies; its own marks it is never told."""
    logs = {seat: tmp_path / f"phantom{seat}.txt" for seat in (1, 2)}
    config = game_pb2.GameConfig(game=game_pb2.GAME_PHANTOM_TIC_TAC_TOE, seats=2)
    match_id = await new_match(client, config)
    bots = await asyncio.gather(
        *(bridged(client, match_id, seat, recorded(tmp_path, log, RANDOM_SH)) for seat, log in logs.items())
    )
    assert [bot.verdict for bot in bots] == [Verdict.FINISHED, Verdict.FINISHED]
    assert [bot.refused for bot in bots] == [0, 0]
    final = (await client.get_match(match_id)).view
    assert final.outcome.termination == game_pb2.TERMINATION_NORMAL
    for seat, log in logs.items():
        lines = seen_lines(log)
        assert lines[1] == f"game phantom-ttt 2 {seat}"
        told = [line.split(" ")[1:] for line in lines if line.startswith("moves ")]
        assert all(words and "" not in words for words in told), told  # one word per move
        assert {move for words in told for move in words[1:]} <= {"?"}  # the other seat's, unseen
        answered = sum(line.startswith("go ") for line in lines)
        assert sum(len(words) - 1 for words in told) + answered == final.ply
        assert lines[-3] == f"reveal {final.position}" and lines[-1] == "quit"


# ---------------------------------------------------------------------------- misbehaviour

CRASHER = """\
n=0
while IFS= read -r line; do
    case $line in
        "ziggurat "*) echo "ready crasher" ;;
        legal*) first=${line#legal }; first=${first%% *} ;;
        go*) n=$((n + 1))
             if [ $n -gt 2 ]; then echo "segfault, pretend" >&2; exit 7; fi
             echo "move $first" ;;
    esac
done
"""


async def test_crash_mid_game_resigns_the_seat_and_the_match_finishes(
    server: RunningServer, client: ZigguratClient, tmp_path: Path
) -> None:
    match_id = await new_match(client, kabaleo_config(3))
    ended, bot, _ = await asyncio.gather(
        py_seat(client, match_id, 1),
        bridged(client, match_id, 2, script(tmp_path, "crasher.sh", CRASHER)),
        py_seat(client, match_id, 3),
    )
    assert bot.verdict == Verdict.CRASHED
    assert "exit status 7" in bot.detail and "segfault, pretend" in bot.detail
    assert ended.outcome.termination == game_pb2.TERMINATION_NORMAL  # the others played on
    assert ended.outcome.ranks[1] == 3
    match = await client.get_match(match_id)
    assert match.seats[1].state == match_pb2.SEAT_STATE_RESIGNED


CHEATER = """\
n=0
while IFS= read -r line; do
    case $line in
        "ziggurat "*) echo "ready cheater" ;;
        go*) n=$((n + 1))
             case $n in
                 1) printf '%05000d\\n' 0 ;;
                 2) echo "# thinking (comments are skipped)"; echo "hello there" ;;
                 *) echo "move 9z9" ;;
             esac ;;
    esac
done
"""


async def test_illegal_answers_are_refused_then_the_seat_is_resigned(
    server: RunningServer, client: ZigguratClient, tmp_path: Path
) -> None:
    log = tmp_path / "cheater.txt"
    match_id = await new_match(client, pylos_config())
    settings = BridgeSettings(max_illegal=3)
    bot, ended = await asyncio.gather(
        bridged(client, match_id, 1, recorded(tmp_path, log, script(tmp_path, "c.sh", CHEATER)), settings),
        py_seat(client, match_id, 2),
    )
    assert bot.verdict == Verdict.ILLEGAL and bot.refused == 3
    errors = [line for line in seen_lines(log) if line.startswith("error ")]
    assert [line.split()[1] for line in errors] == ["syntax", "syntax", "illegal"]
    assert "longer than 4096 bytes" in errors[0]
    assert sum(line.startswith("go ") for line in seen_lines(log)) == 3
    assert ended.outcome.termination == game_pb2.TERMINATION_RESIGNATION
    assert list(ended.outcome.ranks) == [2, 1]


async def test_a_bot_that_hangs_is_timed_out(
    server: RunningServer, client: ZigguratClient, tmp_path: Path
) -> None:
    hanger = script(
        tmp_path, "hang.sh", 'read -r hello; echo "ready hanger"; while read -r line; do :; done\n'
    )
    match_id = await new_match(client, pylos_config(), per_move_ms=500)
    settings = BridgeSettings(grace_ms=200)
    bot, ended = await asyncio.gather(
        bridged(client, match_id, 1, hanger, settings), py_seat(client, match_id, 2)
    )
    assert bot.verdict == Verdict.TIMEOUT
    assert ended.outcome.ranks[0] == 2  # the server's clock forfeited the seat


async def test_handshake_failures_are_clear(tmp_path: Path) -> None:
    uci = script(tmp_path, "uci.sh", 'read -r line; echo "id name Stockfish 16"; sleep 30\n')
    bot = StdioBot(uci)
    with pytest.raises(HandshakeError, match=r'does not speak .* got "id name Stockfish 16"'):
        await bot.start()
    assert bot.process.returncode is not None  # the program was not left running

    silent = StdioBot(["sleep", "30"], settings=BridgeSettings(handshake_timeout=0.3))
    with pytest.raises(HandshakeError, match="no answer"):
        await silent.start()
    assert silent.process.returncode is not None

    with pytest.raises(HandshakeError, match="cannot start"):
        await StdioBot([str(tmp_path / "no-such-program")]).start()

    dead = script(tmp_path, "dead.sh", 'echo "cannot open model file" >&2; exit 4\n')
    with pytest.raises(HandshakeError, match=r"exited .*exit status 4.*cannot open model file"):
        await StdioBot(dead).start()


# ---------------------------------------------------------------------------- the command line


async def test_bridge_command_plays_a_seat_from_the_environment(
    server: RunningServer, client: ZigguratClient
) -> None:
    match_id = await new_match(client, pylos_config())
    handle = await client.join(match_id, "sh-by-env", 2)
    env = {
        **child_environment(),
        "ZIGGURAT_SERVER": server.address,
        "ZIGGURAT_MATCH": match_id,
        "ZIGGURAT_TOKEN": handle.token,
    }
    proc = await processes.exec_async(
        sys.executable, "-m", "ziggurat.cli.main", "bridge", "--", *RANDOM_SH,
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    ended = await py_seat(client, match_id, 1)
    out, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 0, err.decode()
    assert "playing seat 2" in out.decode() and "verdict: finished" in out.decode()
    assert len(ended.outcome.ranks) == 2


# ---------------------------------------------------------------------------- pieces


def test_line_splitter_drops_long_lines_whole() -> None:
    splitter = LineSplitter(limit=8)
    assert splitter.feed(b"move 1a") == []
    assert splitter.feed(b"1\r\nmove") == ["move 1a1"]
    assert splitter.feed(b" 1b2 and far too long") == [None]  # reported once, as soon as it overflows
    assert splitter.feed(b" still the same line\nready x\n") == ["ready x"]
    assert splitter.feed(b"123456789\n\n") == [None, ""]


def test_the_program_never_gets_the_seat_token() -> None:
    env = child_environment({"ZIGGURAT_TOKEN": "secret", "ZIGGURAT_MATCH": "m", "PATH": "/bin"})
    assert env == {"ZIGGURAT_MATCH": "m", "PATH": "/bin"}


def test_answers_are_checked_like_the_server_checks_them() -> None:
    position = "LLDDL.D........./........./..../. L"
    legal = ("1b2x1a1x1b1", "1b2x1b1", "1c2")
    turn = Turn("pylos", {}, 2, 1, 6, game_pb2.GameView(position=position), legal)
    bot = StdioBot(["unused"])
    assert bot._refusal(turn, "move 1c2") == ("", "1c2")
    assert bot._refusal(turn, "move 1b2x1b1x1a1") == ("", "1b2x1a1x1b1")  # either recovery order
    assert bot._refusal(turn, "move 1d4")[0] == "illegal"
    assert bot._refusal(turn, "move  1c2 now")[0] == "syntax"
    assert bot._refusal(turn, "1c2")[0] == "syntax"
    # A seat of a game with hidden information sees part of the position: the listed moves only.
    phantom = Turn("phantom-ttt", {}, 2, 1, 0, game_pb2.GameView(position=".../.../..."), ("a1", "b2"))
    assert bot._refusal(phantom, "move b2") == ("", "b2")
    assert bot._refusal(phantom, "move B2")[0] == "illegal"
