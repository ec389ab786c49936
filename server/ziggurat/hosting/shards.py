"""One host, N worker processes: which worker owns which match, and where that worker listens.

``ziggurat serve --workers N`` (docs/scaling.md) runs N full servers, each the one writer of its
own database file, its *shard*: shard 0 is the ``--db`` file itself (so a single-process
server's database becomes shard 0 unchanged), shard K is ``<stem>.shardK<suffix>`` beside it.
A match lives in the shard of the worker that created it, for good; its id is the key.

A worker finds the owner of a match it does not hold by looking the id up in the other shards,
read-only (SQLite WAL lets readers beside the writer; a found id is cached, owners never
change). It then refuses the call with ``FAILED_PRECONDITION`` ``MATCH_ELSEWHERE`` whose
ErrorInfo metadata ``address`` is the owner's own address, which every worker publishes in
``<shard>.address`` when it starts (``HOST:PORT``; an empty HOST means the host the client
already reaches). Workers also talk to each other on ``<shard>.sock`` (a Unix socket, no TLS)
to render the live matches of a merged ListMatches page as their owner sees them.

Clients keep the owner addresses they learn, so a worker binds the port of its ``<shard>.address``
again when it starts, whether its supervisor restarted it or a new supervisor did (after
kill -9, or SIGTERM and a new start): the file is the one place that says what clients were
told. Only when that port is taken does the worker listen on a new one (and say so); clients
then fall back to the public address, which names the new one.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import grpc

from ziggurat.hosting.ports import bind_failure
from ziggurat.store.sqlite import page_rows
from ziggurat.store.startup import StartupError
from ziggurat.wire import errors
from ziggurat.wire.reasons import Reason

log = logging.getLogger("ziggurat.shards")


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """What makes a server one worker of several: its shard among ``count``, the ``--db`` path
    the shards are named after, and its own port: a fixed one (``--worker-ports``), or 0 for the
    port it published last time (:func:`remembered_port`; a free one at its first start), so
    the addresses clients hold stay valid across restarts of the worker and the supervisor."""

    index: int
    count: int
    base_db: str
    own_port: int = 0

    @property
    def db_path(self) -> str:
        """The shard file of this worker."""
        return str(shard_path(self.base_db, self.index))

    def directory(self) -> ShardDirectory:
        """The directory of every shard, seen from this worker."""
        return ShardDirectory(self.index, shard_paths(self.base_db, self.count))


WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::", "[::]"})


def shard_path(db_path: str | Path, index: int) -> Path:
    """The database file of shard ``index``: the ``--db`` file itself for 0."""
    base = Path(db_path)
    if index == 0:
        return base
    return base.with_name(f"{base.stem}.shard{index}{base.suffix}")


def shard_paths(db_path: str | Path, count: int) -> list[Path]:
    """The database files of shards 0..count-1."""
    return [shard_path(db_path, index) for index in range(count)]


def stray_shards(db_path: str | Path, count: int) -> list[Path]:
    """Shard files beyond ``count`` workers: their matches would have no owner, so a server with
    fewer workers than shards refuses to start rather than hide them."""
    base = Path(db_path)
    found = []
    for path in base.parent.glob(f"{base.stem}.shard*{base.suffix}"):
        middle = path.name[len(base.stem) + len(".shard") : len(path.name) - len(base.suffix)]
        if middle.isdigit() and int(middle) >= count:
            found.append(path)
    return sorted(found)


def address_path(db_path: str | Path) -> Path:
    """Where the worker owning ``db_path`` publishes the address clients reach it at."""
    return Path(f"{db_path}.address")


def socket_path(db_path: str | Path) -> Path:
    """The Unix socket on which the worker owning ``db_path`` answers the other workers."""
    return Path(f"{db_path}.sock")


def advertised_address(host: str, port: int) -> str:
    """``HOST:PORT`` for clients; a wildcard host is left empty (the client's own host)."""
    shown = "" if host in WILDCARD_HOSTS else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"{shown}:{port}"


def remembered_port(db_path: str | Path) -> int:
    """The port the worker owning ``db_path`` published last (0: none, or unreadable)."""
    try:
        text = address_path(db_path).read_text().strip()
    except OSError:
        return 0
    port = text.rsplit(":", 1)[-1]
    return int(port) if port.isdigit() and 0 < int(port) <= 65535 else 0


def bind_own(
    server: grpc.aio.Server,
    host: str,
    worker: WorkerOptions,
    db_path: str,
    credentials: grpc.ServerCredentials | None = None,
) -> int:
    """Bind a worker's own port (clients sent to it by MATCH_ELSEWHERE; with ``credentials``,
    TLS as on the public port) and its Unix socket (the other workers' calls); returns the port.
    Called once the worker owns its shard, so the socket file left by a killed predecessor is
    its own to replace.
    """
    port = _bind_own_port(server, host, worker, db_path, credentials)
    bind_worker_socket(server, worker, db_path)
    return port


def bind_worker_socket(server: grpc.aio.Server, worker: WorkerOptions, db_path: str) -> None:
    """Bind the worker's Unix socket, where the other workers make calls on its matches (the
    web port's, :mod:`ziggurat.hosting.forward`); a file left by a killed predecessor is replaced."""
    path = socket_path(db_path)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    try:
        server.add_insecure_port(f"unix:{path}")
    except RuntimeError:
        raise StartupError(f"cannot listen on unix:{path} (worker {worker.index})") from None


def own_port_for_gate(host: str, worker: WorkerOptions, db_path: str) -> tuple[int, str]:
    """With ``--gate`` a worker's gate binds its own port (``--also-listen``): the port to ask
    for (0: a free one) and, when the remembered port is taken, why (for the warning once the
    gate has bound another). The same choice as :func:`bind_own`'s: the fixed port, or the
    remembered one, or a free one."""
    if worker.own_port:  # --worker-ports: the operator's firewall expects this one
        problem = bind_failure(host, worker.own_port)
        if problem:
            raise StartupError(
                f"cannot listen on {host}:{worker.own_port}, worker {worker.index}'s own port "
                f"(--worker-ports): {problem}"
            )
        return worker.own_port, ""
    remembered = remembered_port(db_path)
    if not remembered:
        return 0, ""
    problem = bind_failure(host, remembered)
    return (0, problem) if problem else (remembered, "")


def warn_own_port_moved(
    worker: WorkerOptions, db_path: str, remembered: int, problem: str, port: int
) -> None:
    """Say that a worker could not take its remembered own port again, and which it took."""
    log.warning(
        "worker %d cannot listen on its own port %d again, remembered in %s: %s. Listening on "
        "%d instead; clients that hold the old address fall back to the public one",
        worker.index,
        remembered,
        address_path(db_path),
        problem,
        port,
    )


def _bind_own_port(
    server: grpc.aio.Server,
    host: str,
    worker: WorkerOptions,
    db_path: str,
    credentials: grpc.ServerCredentials | None,
) -> int:
    """The fixed port, or the remembered one, or (that one taken) a free one, logged.

    Each port is asked of the OS first: workers bind with SO_REUSEPORT, which would let a
    worker *share* a port that another program of this user bound with it too, and the clients
    of both would reach either.
    """
    if worker.own_port:  # --worker-ports: the operator's firewall expects this one
        problem = _bind_exactly(server, host, worker.own_port, credentials)
        if problem:
            raise StartupError(
                f"cannot listen on {host}:{worker.own_port}, worker {worker.index}'s own port "
                f"(--worker-ports): {problem}"
            )
        return worker.own_port
    remembered = remembered_port(db_path)
    if remembered:
        problem = _bind_exactly(server, host, remembered, credentials)
        if not problem:
            return remembered
    port = _add_port(server, host, 0, credentials)
    if isinstance(port, str):
        raise StartupError(f"cannot listen on {host}:0 (worker {worker.index})")
    if remembered:
        warn_own_port_moved(worker, db_path, remembered, problem, port)
    return port


def _bind_exactly(
    server: grpc.aio.Server, host: str, port: int, credentials: grpc.ServerCredentials | None
) -> str:
    """Bind ``host:port`` (asked of the OS first): "" when bound, else why not."""
    problem = bind_failure(host, port)
    if problem:
        return problem
    bound = _add_port(server, host, port, credentials)
    return bound if isinstance(bound, str) else ""


def _add_port(
    server: grpc.aio.Server, host: str, port: int, credentials: grpc.ServerCredentials | None
) -> int | str:
    """Bind ``host:port`` on ``server`` (TLS with ``credentials``): the port bound, else why not."""
    address = f"{host}:{port}"
    try:
        if credentials is not None:
            return int(server.add_secure_port(address, credentials))
        return int(server.add_insecure_port(address))
    except RuntimeError:
        return "gRPC could not bind it"


class ShardDirectory:
    """What one worker knows about the others: their shards (read-only) and their addresses."""

    def __init__(self, index: int, paths: list[Path]) -> None:
        """``index`` is this worker's shard among ``paths`` (every shard's database file)."""
        if not 0 <= index < len(paths):
            raise ValueError(f"shard {index} is not one of {len(paths)}")
        self.index = index
        self.paths = paths
        self._readers: dict[int, ShardReader] = {}
        self._owners: dict[str, int] = {}

    @property
    def count(self) -> int:
        """How many workers (shards) there are."""
        return len(self.paths)

    @property
    def own_path(self) -> Path:
        """The database file of this worker."""
        return self.paths[self.index]

    def publish(self, address: str) -> None:
        """Write this worker's client address where the other workers read it (atomically), and
        where it finds its port again when it restarts (:func:`remembered_port`)."""
        target = address_path(self.own_path)
        temporary = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        # 0600 as every file of the server's beside the database (docs/operations.md).
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        with os.fdopen(descriptor, "w") as out:
            out.write(address + "\n")
        os.replace(temporary, target)

    def address_of(self, index: int) -> str:
        """The client address shard ``index``'s worker published ("" if it never started)."""
        try:
            return address_path(self.paths[index]).read_text().strip()
        except OSError:
            return ""

    def socket_of(self, index: int) -> str:
        """The gRPC target of shard ``index``'s worker for calls between workers."""
        return f"unix:{socket_path(self.paths[index])}"

    def reader(self, index: int) -> ShardReader | None:
        """A read-only connection to shard ``index`` (None while that file does not exist yet)."""
        store = self._readers.get(index)
        if store is None:
            if not self.paths[index].exists():
                return None
            store = ShardReader(self.paths[index])
            self._readers[index] = store
        return store

    def owner_of(self, match_id: str) -> int | None:
        """The shard of another worker that holds ``match_id``, or None when no other shard does.

        Raises WORKER_UNAVAILABLE when a shard cannot be read at all (its worker is being
        restarted on a damaged or missing file): the match may be there.
        """
        known = self._owners.get(match_id)
        if known is not None:
            return known
        for index in range(self.count):
            if index == self.index:
                continue
            try:
                store = self.reader(index)
                found = store is not None and store.has_match(match_id)
            except sqlite3.Error as error:
                self._drop_reader(index)
                log.warning("shard %d (%s) cannot be read: %s", index, self.paths[index], error)
                raise errors.refuse(
                    Reason.WORKER_UNAVAILABLE, "a worker of this server cannot be reached; retry shortly"
                ) from None
            if found:
                self._owners[match_id] = index
                return index
        return None

    def elsewhere(self, match_id: str) -> errors.ApiError | None:
        """The MATCH_ELSEWHERE refusal naming the owner's address, if another worker owns it."""
        owner = self.owner_of(match_id)
        if owner is None:
            return None
        address = self.address_of(owner)
        return errors.refuse(
            Reason.MATCH_ELSEWHERE,
            f"match {match_id} is served by another worker process of this server, at {address}",
            {"address": address},
        )

    def _drop_reader(self, index: int) -> None:
        store = self._readers.pop(index, None)
        if store is not None:
            with contextlib.suppress(sqlite3.Error):
                store.close()

    def close(self) -> None:
        """Close the read-only connections."""
        for index in list(self._readers):
            self._drop_reader(index)


class ShardReader:
    """A read-only SQLite connection to one shard: the few queries other workers need.

    Opened with ``mode=ro``, so nothing done through it can write, whatever the code asks:
    the shard's own worker stays its one writer.
    """

    def __init__(self, path: Path) -> None:
        """Open ``path`` read-only (it must exist)."""
        uri = f"{path.resolve().as_uri()}?mode=ro"
        self._db = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        try:
            self._db.execute("PRAGMA schema_version").fetchone()
        except sqlite3.Error:
            self._db.close()
            raise

    def has_match(self, match_id: str) -> bool:
        """True when the shard holds a match with this id."""
        row = self._db.execute("SELECT 1 FROM matches WHERE match_id=?", (match_id,)).fetchone()
        return row is not None

    def page_rows(
        self, *, status: str | None, game: str | None, limit: int, before: int | None
    ) -> list[tuple[int, str, int]]:
        """(position, match_id, created_ms), newest first, as ``Store.page_ids`` walks them."""
        rows = page_rows(
            self._db, "match_id, created_ms", status=status, game=game, limit=limit, before=before
        )
        return [(int(r[0]), str(r[1]), int(r[2])) for r in rows]

    def seat_of_token(self, token_hash: str) -> tuple[str, int] | None:
        """(match_id, 0-based seat) of a seat token's hash held in this shard."""
        row = self._db.execute(
            "SELECT match_id, seat FROM seat_tokens WHERE token_hash=?", (token_hash,)
        ).fetchone()
        return None if row is None else (str(row[0]), int(row[1]))

    def spectator_summaries(self, match_ids: list[str]) -> dict[str, bytes]:
        """The stored spectators' summaries of these (finished) matches, those that have one."""
        if not match_ids:
            return {}
        marks = ",".join("?" * len(match_ids))
        query = f"SELECT match_id, summary FROM match_summaries WHERE audience=-1 AND match_id IN ({marks})"
        return {str(m): bytes(data) for m, data in self._db.execute(query, match_ids)}

    def close(self) -> None:
        """Close the connection."""
        self._db.close()
