"""The committed generated code is exactly what scripts/gen-proto makes from proto/."""

from __future__ import annotations

from pathlib import Path

from tests import processes

ROOT = Path(__file__).resolve().parents[2]
GENERATED = (Path("clients/python/ziggurat_client/v1"), Path("server/ziggurat/v1"))


def _files(root: Path) -> dict[Path, bytes]:
    return {
        p.relative_to(root): p.read_bytes()
        for folder in GENERATED
        for p in (root / folder).iterdir()
        if p.is_file()
    }


def test_generated_code_matches_the_protos(tmp_path: Path) -> None:
    processes.run(
        [str(ROOT / "scripts" / "gen-proto"), str(tmp_path)], check=True, capture_output=True, cwd=ROOT
    )
    fresh, committed = _files(tmp_path), _files(ROOT)
    assert fresh.keys() == committed.keys(), "run scripts/gen-proto"
    stale = [str(name) for name, data in fresh.items() if committed[name] != data]
    assert not stale, f"stale generated files (run scripts/gen-proto): {stale}"


def test_each_proto_file_is_registered_once_under_its_own_name() -> None:
    """The server's ziggurat.v1 modules are the client's, so one process can import both."""
    from ziggurat.v1 import game_pb2, match_service_pb2, match_service_pb2_grpc
    from ziggurat_client.v1 import game_pb2 as client_game_pb2
    from ziggurat_client.v1 import match_service_pb2 as client_service_pb2

    assert game_pb2.GameConfig is client_game_pb2.GameConfig
    assert match_service_pb2.PlayRequest is client_service_pb2.PlayRequest
    assert match_service_pb2_grpc.MatchServiceStub.__module__ == "ziggurat_client.v1.match_service_pb2_grpc"
    assert client_game_pb2.DESCRIPTOR.name == "ziggurat/v1/game.proto"
    service = client_service_pb2.DESCRIPTOR.services_by_name["MatchService"]
    assert service.full_name == "ziggurat.v1.MatchService"
