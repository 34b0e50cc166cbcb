"""The name-server process: wires config, storage, registry and processor to a
listening socket, and runs the periodic broker-expiry and idle-connection scans."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any, Callable

from .. import snapshot
from ..registry.clock import Clock, system_clock
from ..registry.config import NamesrvConfig
from ..registry.routes import RouteTable
from ..storage import PathLock, StorageError, atomic_write, load_kv, remove_stale_temp_files
from .connection import READ_SIZE, Connection
from .dispatch import Processor
from .memtrim import keep_heap_thresholds, release_free_memory
from .metrics import Metrics

log = logging.getLogger("nameserver")

#: How long a worker thread parsing a registration body may keep the GIL while the event
#: loop waits for it (Python's default is 5 ms). Measured on a loaded 2-core machine, a
#: 1.5 MB body's diff on the worker held the loop's ticks back 2.4-8.4 ms at 1 ms against
#: 5.5-11.6 ms at 5 ms; a C call that holds the GIL throughout (orjson) is not shortened.
GIL_SWITCH_SECONDS = 0.001

BANNER = "The Name Server boot success. serializeType=JSON, address {host}:{port}"


class ListenError(OSError):
    """A listener could not bind: which one (``what``: "" for the name server, or the option),
    on which address, and the system's reason."""

    def __init__(self, what: str, host: str, port: int, cause: OSError) -> None:
        reason = os.strerror(cause.errno) if cause.errno else (cause.strerror or str(cause))
        self.message = f"cannot listen on {host}:{port}{what}: {reason}"
        super().__init__(cause.errno, self.message)


#: The files a server writes: item, what it is, how to give each server its own.
_OWN_PATHS = (
    ("kvConfigPath", "KV config", "give each server its own --kv-config (kvConfigPath)"),
    ("configStorePath", "config file", "give each server its own -c file (configStorePath)"),
    ("routeSnapshotPath", "route snapshot", "give each server its own --route-snapshot"),
)


def lock_paths(config: NamesrvConfig) -> list[PathLock]:
    """Lock every file this server writes, for the life of the process, and delete the
    temporary files a killed writer left there. Two servers on one path lost
    acknowledged writes (same temporary file, each rewriting the other's table), so a
    second one refuses to start: StorageError names the path and the other process."""
    locks: list[PathLock] = []
    try:
        for item, what, hint in _OWN_PATHS:
            path = config[item]
            if path and not any(lock.path == Path(path) for lock in locks):
                lock = PathLock(path, what, hint)
                locks.append(lock)
                if lock.unlocked is not None:
                    log.warning("%s %s is not locked against other servers (%s)", what, path, lock.unlocked)
                    continue
                for leftover in remove_stale_temp_files(path):
                    log.info("removed leftover temporary file %s", leftover)
    except StorageError:
        for lock in locks:
            lock.release()
        raise
    return locks


class NameServer:
    def __init__(self, config: NamesrvConfig, *, clock: Clock = system_clock) -> None:
        self.config = config
        self.max_frame = config["frameMaxLength"]
        self.max_header = config["headerMaxLength"]
        self.write_limit = config["writeBufferLimit"]
        #: every connection's reads land here first (Connection.get_buffer); route queries
        #: answerable undecoded are answered from these bytes in place (``read_bytes``)
        self.read_bytes = bytearray(READ_SIZE)
        self.read_buffer = memoryview(self.read_bytes)
        self._locks = lock_paths(config)
        try:
            self.kv = load_kv(config["kvConfigPath"])  # a corrupt file stops the start, by design
        except StorageError:
            self._release_locks()
            raise
        self.routes = RouteTable(clock, default_timeout_ms=config["brokerChannelExpiredTime"])
        self.processor = Processor(
            self.routes, self.kv, config,
            persist_kv=lambda data: atomic_write(self.config["kvConfigPath"], data),
            persist_config=lambda text: atomic_write(self.config["configStorePath"], text.encode("utf-8")),
        )
        self.connections: set[Connection] = set()
        self._server: asyncio.base_events.Server | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self.port = 0
        self.host = ""
        self.metrics: Metrics | None = None
        self.metrics_port: int | None = None
        self._snapshot_generation = -1
        self._trimmed_generation = -1
        self._stopping = False
        if config["routeSnapshotPath"]:
            self._restore_snapshot(config["routeSnapshotPath"])

    def _set_aside(self, path: str, reason: str) -> None:
        # A snapshot is a cache, not data: start empty, but keep the file for a look.
        log.warning("%s; starting with empty routes (file kept as %s.corrupt)", reason, path)
        try:
            os.replace(path, path + ".corrupt")
        except OSError as exc:
            log.warning("could not rename %s: %s", path, exc.strerror)

    def _restore_snapshot(self, path: str) -> None:
        try:
            found = snapshot.read(path)
        except StorageError as exc:
            self._set_aside(path, str(exc))
            return
        if found is None:
            log.info("no route snapshot at %s yet; starting with empty routes", path)
            return
        written_ms, state = found
        age = system_clock() - written_ms
        if age > self.config["brokerChannelExpiredTime"]:
            log.info("route snapshot %s is %d s old, older than broker expiry; starting with empty routes",
                     path, age // 1000)
            return
        try:
            self.routes.import_state(state)
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            self._set_aside(path, f"route snapshot {path} has malformed tables ({type(exc).__name__}: {exc})")
            return
        self._snapshot_generation = self.routes.generation
        log.info("warm restart: %d topics, %d brokers from route snapshot %s (%d s old)",
                 len(self.routes.topic_queue_table), len(self.routes.broker_live_table), path, age // 1000)

    def write_snapshot(self) -> None:
        path = self.config["routeSnapshotPath"]
        if not path or self.routes.generation == self._snapshot_generation:
            return
        generation = self.routes.generation
        snapshot.write(path, self.routes.export_state(), system_clock())
        self._snapshot_generation = generation

    async def _every(self, interval_ms: int, job: Callable[[], None], what: str) -> None:
        """Run ``job`` every ``interval_ms`` (at least 10 ms); a failure is logged and the
        next round still runs, so a periodic job never dies silently."""
        interval = max(interval_ms, 10) / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                job()
            except Exception:
                log.exception("%s failed", what)

    async def start(self) -> None:
        """Bind and listen. Raises ListenError (port in use, bad address) for the CLI to
        report, naming the listener that failed: the name-server port or the metrics one."""
        loop = asyncio.get_running_loop()
        host = self.config["bindAddress"]
        try:
            self._server = await loop.create_server(
                lambda: Connection(self), host=host, port=self.config["listenPort"],
                backlog=self.config["serverSocketBacklog"], reuse_address=True,
            )
        except OSError as exc:
            self._release_locks()
            raise ListenError("", host, self.config["listenPort"], exc) from None
        sock = self._server.sockets[0]
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.host, self.port = host, sock.getsockname()[1]
        self.config.bound_port = self.port
        self._tasks.append(asyncio.create_task(
            self._every(self.config["scanNotActiveBrokerInterval"], self.scan_once, "broker scan"), name="scan"))
        if self.config["routeSnapshotPath"]:
            self._tasks.append(asyncio.create_task(self._every(
                self.config["routeSnapshotInterval"], self.write_snapshot, "route snapshot"), name="route-snapshot"))
        if self.config["metricsPort"] >= 0:
            self.metrics = Metrics(self)
            try:
                self.metrics_port = self.metrics.serve(host, self.config["metricsPort"])
            except OSError as exc:
                # Not stop(): that saves the KV table and the route snapshot, and a server
                # that never started must not overwrite them.
                self._close()
                self._release_locks()
                raise ListenError(" (--metrics-port)", host, self.config["metricsPort"], exc) from None
            log.info("metrics on http://%s:%d/metrics", host, self.metrics_port)

    def scan_once(self) -> None:
        if self.routes.generation != self._trimmed_generation:
            # Registrations that changed routes left their parsed bodies' memory behind.
            self._trimmed_generation = self.routes.generation
            release_free_memory()
        for removal in self.routes.scan_not_active():
            self._removed("expired")
            timeout = removal.timeout_ms if removal.timeout_ms is not None else self.config["brokerChannelExpiredTime"]
            log.warning("broker expired: %s (%s), no registration or heartbeat for %d ms", removal.broker_addr,
                        removal.broker_name or "?", timeout)
            if isinstance(removal.conn, Connection):
                removal.conn.close()
        now = time.monotonic()
        idle = self.config["serverChannelMaxIdleTimeSeconds"]
        slow = self.config["frameReadTimeoutSeconds"]
        for conn in list(self.connections):
            if idle > 0 and conn.last_activity < now - idle:
                log.info("closing idle connection from %s (idle > %d s)", conn.peer, idle)
                conn.close()
            elif slow > 0 and conn.decoder.in_frame and not conn.output_full and conn.frame_started < now - slow:
                log.warning("closing connection from %s: frame incomplete for more than %d s (%d bytes buffered)",
                            conn.peer, slow, conn.decoder.buffered)
                conn.close()

    def _removed(self, reason: str) -> None:
        if self.metrics is not None:
            self.metrics.removals.labels(reason).inc()

    def connection_closed(self, conn: Connection) -> None:
        self.connections.discard(conn)
        if self._stopping:
            # Our shutdown closed it, not the broker: the broker is as alive as it was,
            # and the snapshot written at shutdown must still hold it (warm restart).
            return
        for removal in self.routes.connection_closed(conn):
            self._removed("connection_closed")
            log.warning("broker removed: %s (%s), its connection from %s closed",
                        removal.broker_addr, removal.broker_name or "?", conn.peer)

    def _close(self) -> None:
        """Stop listening, the periodic jobs and every connection (nothing saved)."""
        if self._server is not None:
            self._server.close()
        for task in self._tasks:
            task.cancel()
        for conn in list(self.connections):
            conn.close()

    async def stop(self) -> None:
        """Stop accepting, let written answers drain, save the KV table and the routes
        as they were: brokers registered on connections we close are kept."""
        self._stopping = True
        self._close()
        await asyncio.sleep(0)
        try:
            atomic_write(self.config["kvConfigPath"], self.kv.dumps())
        except Exception as exc:
            log.error("KV config not saved at shutdown: %s", exc)
        try:
            self.write_snapshot()
        except Exception as exc:
            log.error("route snapshot not written at shutdown: %s", exc)
        self._release_locks()
        log.info("name server stopped")

    def _release_locks(self) -> None:
        for lock in self._locks:
            lock.release()


async def serve(config: NamesrvConfig, *, on_ready: Any = None) -> None:
    """Run until SIGINT/SIGTERM. ``on_ready(server)`` is called once listening."""
    server = NameServer(config)
    await server.start()
    freeze_start_up_objects()
    sys.setswitchinterval(GIL_SWITCH_SECONDS)
    keep_heap_thresholds()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if on_ready is not None:
        on_ready(server)
    await stop.wait()
    log.info("shutting down")
    await server.stop()


def freeze_start_up_objects() -> None:
    """Move everything alive at start (modules, config, a warm restart's tables) out of
    the cyclic collector's reach: it lives as long as the process, yet each full
    collection walked it again, 18-20 ms with a 10k-topic registration being parsed, and
    every request waited. In a fleet bench run (5 s of registrations and route queries)
    this took the longest young collection from ~4 ms to ~1 ms and left no full one."""
    gc.collect()
    gc.freeze()


def raise_fd_limit() -> None:
    """Lift the soft open-files limit to the hard one: each client and broker holds a
    connection, and a 1024 default runs out in a mid-sized fleet."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 1 << 16
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            log.warning("could not raise the open-files limit above %d", soft)


def run(config: NamesrvConfig, *, on_ready: Any = None) -> None:
    """Entry point for the CLI: uvloop when installed, the default loop otherwise."""
    raise_fd_limit()
    try:
        import uvloop
    except ImportError:
        asyncio.run(serve(config, on_ready=on_ready))
    else:
        uvloop.run(serve(config, on_ready=on_ready))
