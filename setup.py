"""The server's runtime dependencies, for setuptools (pyproject.toml declares them dynamic).

Why a setup.py: the server needs the thin client, ``ziggurat-client``, which lives in this
repository (``clients/python``) and on no package index. Required by name, ``pip install .``
fails (no index has it), and would install whatever someone published under that name
(dependency confusion). Required by a direct reference to the directory beside this file,
pip builds it from the clone and never asks an index for it. A direct reference must be an
absolute ``file:`` URL, which only code can write: hence this file, and a wheel built here
names this clone's path (it is for this machine; we publish none).

The other pins are the versions ``requirements/serve.lock`` and ``requirements/dev.lock`` hold
(tests/test_locks.py checks that they agree). The optional parts (the terminal UI, mDNS) are
extras in pyproject.toml.
"""

from __future__ import annotations

import os
import urllib.parse
import urllib.request

from setuptools import setup

# The directory pip builds from: os.path.abspath, not a resolved path, so that the URL is the
# one pip writes for `pip install ./clients/python .` (the same distribution, the same URL).
HERE = os.path.dirname(os.path.abspath(__file__))
CLIENT = os.path.join(HERE, "clients", "python")

RUNTIME = [
    "grpcio==1.85.1",
    "grpcio-health-checking==1.85.1",
    "grpcio-reflection==1.85.1",
    "grpcio-status==1.85.1",
    "googleapis-common-protos==1.76.0",
    "protobuf==7.36.2",
    "openskill==6.2.0",
    "confusable-homoglyphs==3.3.1",
    "connectrpc==0.13.0",
    "uvicorn==0.54.0",
    "cryptography==50.0.2",
]


def client_requirement() -> str:
    """``ziggurat-client`` by its directory in this clone; an error outside a clone."""
    if not os.path.isfile(os.path.join(CLIENT, "pyproject.toml")):
        raise SystemExit(
            f"ziggurat must be built from a clone of its repository: the thin client it needs "
            f"(ziggurat-client) is not at {CLIENT}, and it is on no package index"
        )
    # Written as pip writes the URL of a local directory (its path_to_url).
    return f"ziggurat-client @ {urllib.parse.urljoin('file:', urllib.request.pathname2url(CLIENT))}"


setup(install_requires=[client_requirement(), *RUNTIME])
