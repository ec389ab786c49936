"""Logs an operator can read: repeated warnings are counted, not printed; no tracebacks for clients."""

from __future__ import annotations

import asyncio
import io
import logging
from pathlib import Path

import grpc

from tests.servers import ServerProcess, pylos_config
from ziggurat.hosting.lograte import RepeatFilter
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as sgrpc


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _logger(name: str, repeats: RepeatFilter) -> tuple[logging.Logger, io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(repeats)
    logger = logging.getLogger(name)
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger, out


def test_repeated_warnings_are_counted_and_summarised() -> None:
    clock = Clock()
    repeats = RepeatFilter(window=60, burst=3, clock=clock)
    logger, out = _logger("ziggurat.test.repeats", repeats)
    for n in range(10):
        logger.warning("refused a call from %s", f"10.0.0.{n}")
        logger.info("match %s played", n)  # the match log is never held back
    lines = out.getvalue().splitlines()
    refused = [line for line in lines if line.startswith("refused")]
    assert len(refused) == 3 and "counted, not printed" in refused[-1]
    assert len([line for line in lines if line.startswith("match")]) == 10
    clock.now = 61
    logger.warning("refused a call from %s", "10.0.0.99")
    assert out.getvalue().splitlines()[-1] == (
        "refused a call from 10.0.0.99 [and 7 more like this before, not printed]"
    )
    logger.warning("refused a call from %s", "10.0.0.100")
    logger.warning("refused a call from %s", "10.0.0.101")
    logger.warning("refused a call from %s", "10.0.0.102")  # held
    repeats.flush(logger)
    assert out.getvalue().splitlines()[-1].startswith("1 more lines like this were not printed")


def test_a_grpc_traceback_becomes_one_line() -> None:
    logger, out = _logger("grpc._cython.cygrpc", RepeatFilter())
    try:
        raise ValueError("bad bytes")
    except ValueError:
        logger.exception("Unexpected error in handler")
    assert out.getvalue() == "Unexpected error in handler: ValueError: bad bytes\n"


async def test_a_flooding_client_does_not_flood_the_log(
    server_process: ServerProcess, tmp_path: Path
) -> None:
    server_process.extra = ["--max-streams-per-address", "1"]
    address = await asyncio.to_thread(server_process.start)
    async with grpc.aio.insecure_channel(address) as channel:
        stub = sgrpc.MatchServiceStub(channel)
        # Unreadable requests: refused as INVALID_ARGUMENT, and no traceback in the log.
        raw = channel.unary_unary("/ziggurat.v1.MatchService/GetMatch")
        for _ in range(50):
            try:
                await raw(b"\xff\xff\xff\xff")
            except grpc.aio.AioRpcError as error:
                assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        match = (await stub.CreateMatch(spb.CreateMatchRequest(config=pylos_config()))).match
        holder = stub.WatchMatch(spb.WatchMatchRequest(match_id=match.match_id))
        await holder.read()
        refused = 0
        for _ in range(200):  # the address holds its one call: every other one is refused
            try:
                await stub.GetMatch(spb.GetMatchRequest(match_id=match.match_id))
            except grpc.aio.AioRpcError as error:
                assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                refused += 1
        assert refused == 200
        holder.cancel()
    assert await asyncio.to_thread(server_process.terminate) == 0
    assert server_process.proc is not None and server_process.proc.stderr is not None
    log = server_process.proc.stderr.read()
    assert "Traceback" not in log, log
    lines = [line for line in log.splitlines() if "TOO_MANY_STREAMS" in line]
    assert len(lines) == 4, log  # three printed, then one line with the count at shutdown
    assert "197 more lines like this were not printed" in lines[-1]
    assert len(log.splitlines()) < 40, log
