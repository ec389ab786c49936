"""The real-server fixtures of tests/service, shared with the client tests."""

from tests.service.conftest import client, server, server_process

__all__ = ["client", "server", "server_process"]
