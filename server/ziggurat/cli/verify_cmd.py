"""``ziggurat verify``: check a finished match's commit-reveal, seats, moves and outcome."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format

from ziggurat.cli.commands import summary_of
from ziggurat.cli.tls_options import Tls, TlsOptionError, add_tls_arguments, tls_from_args
from ziggurat.v1 import match_service_pb2 as spb
from ziggurat.v1 import match_service_pb2_grpc as sgrpc
from ziggurat.verify import verify_record
from ziggurat_client.errors import error_info


def register(commands: Any) -> None:
    """Add ``verify``."""
    parser = commands.add_parser(
        "verify",
        help=summary_of("verify"),
        description=(
            "Fetch a finished match's record from a server (or read a saved record) and check that "
            "the revealed seed matches the commitment, seats drawn by lot are the seats the seed "
            "gives, every move is legal in the set-up derived from the seed, and the recorded "
            "outcome is the real one. Exit 0 if it verifies, 1 if not."
        ),
    )
    parser.add_argument("match_id", nargs="?", help="the match to fetch from --server")
    parser.add_argument("--server", default="127.0.0.1:50051", help="HOST:PORT (default 127.0.0.1:50051)")
    parser.add_argument("--file", type=Path, help="verify a record saved as JSON instead of fetching one")
    parser.add_argument("--save", type=Path, help="also save the fetched record as JSON")
    add_tls_arguments(parser)
    parser.set_defaults(handler=_verify)


def _verify(args: argparse.Namespace) -> int:
    if args.file is not None:
        try:
            record = json_format.Parse(args.file.read_text(), spb.MatchRecord())
        except (OSError, json_format.ParseError) as error:
            print(f"error: cannot read {args.file}: {error}", file=sys.stderr)
            return 2
    elif args.match_id:
        try:
            response = _fetch(args.server, args.match_id, tls_from_args(args))
        except TlsOptionError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        except grpc.RpcError as error:
            print(f"error: {error.code().name}: {error.details()}", file=sys.stderr)
            return 2
        record = response.record
        if args.save is not None:
            try:
                args.save.write_text(json_format.MessageToJson(record))
            except OSError as error:
                print(f"error: cannot save the record to {args.save}: {error.strerror}", file=sys.stderr)
                return 2
    else:
        print("error: give a MATCH_ID (with --server) or --file", file=sys.stderr)
        return 2
    verdict = verify_record(record)
    if verdict.ok:
        print(
            f"verified: match {record.match_id}: seed matches commitment {record.seed_commitment[:16]}…, "
            f"{verdict.seats}, {len(record.moves)} legal moves, "
            + ("aborted: no outcome to confirm" if verdict.problem else "outcome confirmed")
            + f", {verdict.chain}"
        )
        return 0
    print(f"NOT verified: match {record.match_id}: {verdict.problem}")
    return 1


def _fetch(server: str, match_id: str, tls: Tls) -> spb.GetMatchRecordResponse:
    """The record from ``server``, or from the worker process it names (MATCH_ELSEWHERE)."""
    request = spb.GetMatchRecordRequest(match_id=match_id)
    with tls.channel(server) as channel:
        try:
            response: spb.GetMatchRecordResponse = sgrpc.MatchServiceStub(channel).GetMatchRecord(
                request, timeout=10
            )
            return response
        except grpc.RpcError as error:
            info = error_info(error.trailing_metadata())
            if info is None or info[0] != "MATCH_ELSEWHERE" or not info[1].get("address"):
                raise
            owner = info[1]["address"]
    if owner.startswith(":"):  # the same host, another port
        owner = server.rsplit(":", 1)[0] + owner
    with tls.channel(owner) as channel:
        response = sgrpc.MatchServiceStub(channel).GetMatchRecord(request, timeout=10)
        return response
