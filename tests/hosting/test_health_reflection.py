"""gRPC health checking and server reflection (what grpcurl list/describe use), on the real server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest
from google.protobuf import descriptor_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from tests.servers import RunningServer
from ziggurat.v1 import match_service_pb2

SERVICE = "ziggurat.v1.MatchService"


@pytest.fixture
async def channel(server: RunningServer) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(server.address) as ch:
        yield ch


async def reflect(channel: grpc.aio.Channel, *requests: reflection_pb2.ServerReflectionRequest) -> list:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    call = stub.ServerReflectionInfo(iter(requests))
    return [response async for response in call]


async def test_health_serving(channel: grpc.aio.Channel) -> None:
    stub = health_pb2_grpc.HealthStub(channel)
    for service in ("", SERVICE):
        response = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
        assert response.status == health_pb2.HealthCheckResponse.SERVING


async def test_health_unknown_service(channel: grpc.aio.Channel) -> None:
    stub = health_pb2_grpc.HealthStub(channel)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await stub.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=5)
    assert caught.value.code() == grpc.StatusCode.NOT_FOUND


async def test_health_watch_reports_serving_then_not_serving(server: RunningServer) -> None:
    async with grpc.aio.insecure_channel(server.address) as ch:
        stub = health_pb2_grpc.HealthStub(ch)
        call = stub.Watch(health_pb2.HealthCheckRequest(service=SERVICE))
        first = await call.read()
        assert first.status == health_pb2.HealthCheckResponse.SERVING
        await server.server.health.set(SERVICE, health_pb2.HealthCheckResponse.NOT_SERVING)
        second = await call.read()
        assert second.status == health_pb2.HealthCheckResponse.NOT_SERVING
        call.cancel()


async def test_reflection_lists_services(channel: grpc.aio.Channel) -> None:
    (response,) = await reflect(channel, reflection_pb2.ServerReflectionRequest(list_services=""))
    names = {service.name for service in response.list_services_response.service}
    assert {SERVICE, "grpc.health.v1.Health", "grpc.reflection.v1alpha.ServerReflection"} <= names


async def test_reflection_describes_the_match_service(channel: grpc.aio.Channel) -> None:
    (response,) = await reflect(
        channel, reflection_pb2.ServerReflectionRequest(file_containing_symbol=SERVICE)
    )
    assert not response.HasField("error_response"), response.error_response
    files = [
        descriptor_pb2.FileDescriptorProto.FromString(raw)
        for raw in response.file_descriptor_response.file_descriptor_proto
    ]
    by_name = {f.name: f for f in files}
    main = by_name["ziggurat/v1/match_service.proto"]
    assert main.package == "ziggurat.v1"
    (service,) = main.service
    assert service.name == "MatchService"
    methods = {m.name: m for m in service.method}
    expected = set(match_service_pb2.DESCRIPTOR.services_by_name["MatchService"].methods_by_name)
    assert set(methods) == expected
    assert methods["Play"].client_streaming and methods["Play"].server_streaming
    assert methods["WatchMatch"].server_streaming and not methods["WatchMatch"].client_streaming
    # The dependencies come along (grpcurl needs them to decode messages), or can be fetched by name.
    for dependency in main.dependency:
        if dependency not in by_name:
            (dep,) = await reflect(
                channel, reflection_pb2.ServerReflectionRequest(file_by_filename=dependency)
            )
            assert not dep.HasField("error_response"), dependency
            assert dep.file_descriptor_response.file_descriptor_proto


async def test_reflection_describes_a_message_and_rejects_unknown(channel: grpc.aio.Channel) -> None:
    known, unknown = await reflect(
        channel,
        reflection_pb2.ServerReflectionRequest(file_containing_symbol="ziggurat.v1.GameView"),
        reflection_pb2.ServerReflectionRequest(file_containing_symbol="ziggurat.v1.NoSuchThing"),
    )
    raw = known.file_descriptor_response.file_descriptor_proto
    assert any(descriptor_pb2.FileDescriptorProto.FromString(r).name == "ziggurat/v1/game.proto" for r in raw)
    assert unknown.HasField("error_response")
    assert unknown.error_response.error_code == grpc.StatusCode.NOT_FOUND.value[0]
