"""The browser's seat survives a server restart, at the protocol level the web client uses.

The web client keeps its seat token in localStorage and, after anything (a reload, a closed
tab, a server restart), calls the Connect endpoint with it: GetMatch to learn its seat and the
position, WatchMatch from the last sequence number it saw, SubmitMove to play. This test does
exactly that with connectrpc's Connect client (binary protobuf, as connect-web sends) against
a real ``ziggurat serve`` subprocess, playing Pylos against a built-in bot, while the server is
stopped with SIGTERM and with kill -9 and started again on the same database and ports. The
browser tests of the page itself belong to the web client's suite.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from pathlib import Path
from typing import Any

import pytest
from connectrpc.client import ConnectClient
from connectrpc.compat import google_protobuf_binary_codec
from connectrpc.errors import ConnectError

from tests.servers import ServerProcess, free_port
from ziggurat.v1 import game_pb2, match_pb2
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.web.connect import method_infos

METHODS = method_infos()


class Browser:
    """What the page does, over Connect: calls with ``Authorization: Bearer`` and its stored token."""

    def __init__(self, base: str, storage: Path) -> None:
        self.client = ConnectClient(base, codec=google_protobuf_binary_codec())
        self.storage = storage  # localStorage: the seat ticket, as JSON

    async def call(self, name: str, request: Any, *, retry: bool = True) -> Any:
        headers = {"authorization": f"Bearer {self.ticket()['token']}"} if self.storage.exists() else None
        for _ in range(300):
            try:
                return await self.client.execute_unary(request=request, method=METHODS[name], headers=headers)
            except (ConnectError, OSError) as error:  # the page retries while the server is away
                if not retry or (isinstance(error, ConnectError) and error.code.name != "UNAVAILABLE"):
                    raise
                await asyncio.sleep(0.1)
        raise AssertionError("the server did not come back")

    def ticket(self) -> dict[str, Any]:
        return dict(json.loads(self.storage.read_text()))

    async def events_after(self, match_id: str, after_seq: int, until_seq: int) -> list[match_pb2.Event]:
        """WatchMatch from ``after_seq`` (as the page resumes), read up to ``until_seq``."""
        token = self.ticket()["token"]
        stream = self.client.execute_server_stream(
            request=spb.WatchMatchRequest(match_id=match_id, after_seq=after_seq),
            method=METHODS["WatchMatch"],
            headers={"authorization": f"Bearer {token}"},
        )
        events: list[match_pb2.Event] = []
        async for response in stream:
            events.extend(response.events)
            if events and events[-1].seq >= until_seq:
                break
        return events


async def _play_some(browser: Browser, match_id: str, rng: random.Random, moves: int) -> match_pb2.Match:
    """Play ``moves`` of the browser's moves (or to the end), as the page does: GetMatch, then SubmitMove."""
    played = 0
    deadline = time.monotonic() + 120
    while True:
        match = (await browser.call("GetMatch", spb.GetMatchRequest(match_id=match_id))).match
        if match.status == match_pb2.MATCH_STATUS_FINISHED or played >= moves:
            return match
        view = match.view
        assert time.monotonic() < deadline, "the opponent stopped playing"
        if view.to_move == view.viewer_seat and view.legal_moves:
            request = spb.SubmitMoveRequest(
                match_id=match_id, move=rng.choice(list(view.legal_moves)), ply=view.ply
            )
            await browser.call("SubmitMove", request, retry=False)
            played += 1
        else:
            await asyncio.sleep(0.05)


@pytest.mark.slow
async def test_a_browser_seat_plays_on_after_server_restarts(tmp_path: Path) -> None:
    port, http_port = free_port(), free_port()
    server = ServerProcess(tmp_path / "z.db", ["--port", str(port), "--http-port", str(http_port)])
    server.start()
    browser = Browser(server.web_url.rstrip("/"), tmp_path / "localStorage.json")
    rng = random.Random(5)
    try:
        config = game_pb2.GameConfig(game=game_pb2.GAME_PYLOS, seats=2)
        created = await browser.call("CreateMatch", spb.CreateMatchRequest(config=config))
        match_id = created.match.match_id
        joined = await browser.call("JoinMatch", spb.JoinMatchRequest(match_id=match_id, player_name="ann"))
        browser.storage.write_text(
            json.dumps({"matchId": match_id, "seat": joined.seat, "token": joined.token})
        )
        await browser.call("AddBot", spb.AddBotRequest(match_id=match_id, bot="random"))
        last_seq = 0
        for stop in ("SIGTERM", "kill -9"):
            match = await _play_some(browser, match_id, rng, 3)
            assert match.status != match_pb2.MATCH_STATUS_FINISHED, "the game ended before the restart"
            last_seq = match.last_seq
            if stop == "SIGTERM":
                assert server.terminate() == 0
            else:
                server.kill9()
            server.start()
            # the stored token alone gives the seat back, with its own view
            match = (await browser.call("GetMatch", spb.GetMatchRequest(match_id=match_id))).match
            assert match.view.viewer_seat == browser.ticket()["seat"]
            assert match.last_seq >= last_seq
            resumed = await asyncio.wait_for(browser.events_after(match_id, last_seq - 2, last_seq), 30)
            seqs = [event.seq for event in resumed]
            assert seqs == list(range(last_seq - 1, last_seq - 1 + len(seqs))) and last_seq in seqs
        final = await _play_some(browser, match_id, rng, 10_000)
        assert final.status == match_pb2.MATCH_STATUS_FINISHED and final.view.outcome.ranks
        seats = {seat.seat: seat for seat in final.seats}
        mine = seats[browser.ticket()["seat"]]
        assert mine.player_name == "ann"
        assert mine.state not in (match_pb2.SEAT_STATE_TIMED_OUT, match_pb2.SEAT_STATE_RESIGNED)
    finally:
        await browser.client.close()
        server.stop()
