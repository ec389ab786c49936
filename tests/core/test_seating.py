"""Lot seating is what docs/setup-derivation.md section 3 says, and ``ziggurat verify`` checks it.

The derivation below is written from the page's words alone (sections 2 and 3), not
from the server's code: a verifier in another language would do the same. Seeds are
chosen so that each seat order is not its own inverse, so a server that applied the
permutation the other way round would fail.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import grpc
from google.protobuf import json_format

from tests import processes
from tests.servers import ServerProcess, kabaleo_config, pylos_config
from ziggurat.core.timecontrol import TimeControl
from ziggurat.hosting.server import ServeOptions, ZigguratServer
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as rpc
from ziggurat.verify import verify_record

REPO = Path(__file__).resolve().parents[2]
VERIFY = [sys.executable, "-m", "ziggurat.cli.main", "verify"]


def page_stream(seed: bytes, label: str) -> bytes:
    """Section 2: block i is SHA-256(b"ziggurat/v1/" + label + b"/" + seed + i as 8-byte big-endian)."""
    return b"".join(
        hashlib.sha256(b"ziggurat/v1/" + label.encode() + b"/" + seed + i.to_bytes(8, "big")).digest()
        for i in range(64)
    )


def page_seat_order(seed: bytes, n: int) -> list[int]:
    """Section 3: seat_order(seed, n) = shuffle([0, 1, …, n-1]) on the stream labelled "seats"."""
    stream, position = page_stream(seed, "seats"), 0

    def below(m: int) -> int:
        nonlocal position
        while True:
            x = int.from_bytes(stream[position : position + 8], "big")
            position += 8
            if x < 2**64 - (2**64 % m):
                return x % m

    items = list(range(n))
    for i in range(n - 1, 0, -1):
        j = below(i + 1)
        items[i], items[j] = items[j], items[i]
    return items


def seat_of_kth_joiner(seed: bytes, n: int, k: int) -> int:
    """Section 3: "the player who joins k-th plays game seat seat_order[k]" (+1 on the wire)."""
    return page_seat_order(seed, n)[k] + 1


def section_three() -> str:
    text = (REPO / "docs" / "setup-derivation.md").read_text()
    return text[text.index("## 3. Seat order") : text.index("## 4. Kabaleo")]


def test_the_page_says_what_this_test_does() -> None:
    """The sentences this test implements are on the page, word for word."""
    words = " ".join(section_three().split())
    assert "`seat_order(seed, n) = shuffle([0, 1, …, n-1])` on the stream labelled `seats`" in words
    assert (
        "the player who joins k-th (k = 0 for the first to join, 1 for the second, …) plays game seat"
        in words
    )
    assert "`seat_order[k]` (0-based; on the wire, seat `seat_order[k] + 1`)" in words
    assert "`join_order[k] == seat_order[k] + 1`" in words


def seeds_that_are_not_involutions(n: int, count: int) -> list[bytes]:
    """Seeds whose seat order differs from its inverse (for n = 2 every order is its own inverse)."""
    found = []
    for i in range(10_000):
        seed = hashlib.sha256(f"seating-{n}-{i}".encode()).digest()
        order = page_seat_order(seed, n)
        inverse = [order.index(s) for s in range(n)]
        if n == 2 or order != inverse:
            found.append(seed)
            if len(found) == count:
                return found
    raise AssertionError("no such seeds")


async def test_lot_seating_follows_the_page_for_two_three_and_four_seats(tmp_path: Path) -> None:
    server = ZigguratServer(ServeOptions(host="127.0.0.1", port=0, db_path=str(tmp_path / "z.db")))
    port = await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = rpc.MatchServiceStub(channel)
            for n, config in ((2, pylos_config()), (3, kabaleo_config(3)), (4, kabaleo_config(4))):
                for seed in seeds_that_are_not_involutions(n, 3):
                    game = "pylos" if n == 2 else "kabaleo"
                    options = {} if n == 2 else {"deal": "random"}
                    match = server.manager.create(game, n, options, TimeControl(), "lot", seed=seed)
                    assert config.seats == n
                    for k in range(n):
                        joined = await stub.JoinMatch(
                            spb.JoinMatchRequest(match_id=match.match_id, player_name=f"joiner-{k}")
                        )
                        assert joined.seat == seat_of_kth_joiner(seed, n, k), (n, k, page_seat_order(seed, n))
                    public = (await stub.GetMatch(spb.GetMatchRequest(match_id=match.match_id))).match
                    names = {s.seat: s.player_name for s in public.seats}
                    assert names == {seat_of_kth_joiner(seed, n, k): f"joiner-{k}" for k in range(n)}
    finally:
        await server.stop()


async def _finished(address: str, config: game_pb2.GameConfig, assignment: int) -> spb.MatchRecord:
    async with grpc.aio.insecure_channel(address) as channel:
        stub = rpc.MatchServiceStub(channel)
        created = await stub.CreateMatch(spb.CreateMatchRequest(config=config, seat_assignment=assignment))
        match_id = created.match.match_id
        tokens = []
        for k in range(config.seats):
            joined = await stub.JoinMatch(spb.JoinMatchRequest(match_id=match_id, player_name=f"j{k}"))
            tokens.append(joined.token)
        for token in tokens:
            await stub.Resign(
                spb.ResignRequest(match_id=match_id), metadata=[("authorization", f"Bearer {token}")]
            )
            status = (await stub.GetMatch(spb.GetMatchRequest(match_id=match_id))).match.status
            if status == match_pb2.MATCH_STATUS_FINISHED:
                break
        return (await stub.GetMatchRecord(spb.GetMatchRecordRequest(match_id=match_id))).record


async def test_verify_checks_the_seats(server_process: ServerProcess, tmp_path: Path) -> None:
    address = server_process.start()
    records = []
    for config in (pylos_config(), kabaleo_config(3), kabaleo_config(4)):
        record = await _finished(address, config, match_pb2.SEAT_ASSIGNMENT_LOT)
        seed = bytes.fromhex(record.revealed_seed)
        assert list(record.join_order) == [
            seat_of_kth_joiner(seed, config.seats, k) for k in range(config.seats)
        ]
        verdict = verify_record(record)
        assert verdict.ok and verdict.seats == "seats drawn by lot from the seed", verdict
        # The same record with two players' seats swapped: the seed does not give that.
        swapped = spb.MatchRecord()
        swapped.CopyFrom(record)
        swapped.join_order[0], swapped.join_order[1] = swapped.join_order[1], swapped.join_order[0]
        verdict = verify_record(swapped)
        assert not verdict.ok and "seats were not drawn from the seed" in verdict.problem
        # A record that does not say who joined when cannot have its seats checked.
        del swapped.join_order[:]
        verdict = verify_record(swapped)
        assert not verdict.ok and "join order" in verdict.problem
        records.append((record, swapped))

    chosen = await _finished(address, kabaleo_config(3), match_pb2.SEAT_ASSIGNMENT_CHOSEN)
    assert list(chosen.join_order) == [1, 2, 3], "chosen seats: the lowest free seat each time"
    assert verify_record(chosen).seats == "seats chosen by the players"

    # The command, as a user runs it: against the server, then a saved record that was altered.
    record = records[-1][0]
    saved = tmp_path / "record.json"
    ok = processes.run(
        [*VERIFY, record.match_id, "--server", address, "--save", str(saved)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "seats drawn by lot from the seed" in ok.stdout
    tampered = json_format.Parse(saved.read_text(), spb.MatchRecord())
    tampered.join_order[0], tampered.join_order[1] = tampered.join_order[1], tampered.join_order[0]
    saved.write_text(json_format.MessageToJson(tampered))
    bad = processes.run([*VERIFY, "--file", str(saved)], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1
    assert "NOT verified" in bad.stdout and "seats were not drawn from the seed" in bad.stdout
