"""Fixtures for the admin CLI: real name-server processes, fake brokers, an in-process runner."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml
from typer.testing import CliRunner

from mqadmin.cli import app
from tests.cli.fakes import FakeBroker, ThreadedServer, register
from tests.nsprocess import NameServerProcess, RawClient


def start_all(dirs: list[Path]) -> list[NameServerProcess]:
    with ThreadPoolExecutor(len(dirs)) as pool:
        return list(pool.map(lambda d: NameServerProcess(d).start(), dirs))


@pytest.fixture(scope="module")
def trio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[NameServerProcess]]:
    """Three name servers shared by a module; tests use their own topic/broker/key names."""
    servers = start_all([tmp_path_factory.mktemp("ns") for _ in range(3)])
    yield servers
    for ns in servers:
        ns.stop()


@pytest.fixture
def addrs(trio: list[NameServerProcess]) -> list[str]:
    return [ns.addr for ns in trio]


@contextmanager
def kept_brokers() -> Iterator[Callable[..., list[RawClient]]]:
    """``reg(ns_addrs, name, addr, topics, cluster=...)`` registers a broker on those name
    servers over connections kept open (closing one unregisters it) until the block ends."""
    held: list[RawClient] = []

    def reg(ns_addrs: list[str], name: str, addr: str, topics: dict[str, int], **kw: Any) -> list[RawClient]:
        clients = register(ns_addrs, name, addr, topics, **kw)
        held.extend(clients)
        return clients

    try:
        yield reg
    finally:
        for c in held:
            c.close()


@pytest.fixture
def brokers() -> Iterator[Callable[..., list[RawClient]]]:
    with kept_brokers() as reg:
        yield reg


@pytest.fixture
def fake_broker() -> Iterator[Callable[..., FakeBroker]]:
    started: list[ThreadedServer] = []

    def start(**kw: Any) -> FakeBroker:
        broker = FakeBroker(**kw).start()
        started.append(broker)
        return broker

    yield start
    for s in started:
        s.stop()


@pytest.fixture
def fake_server() -> Iterator[Callable[..., ThreadedServer]]:
    started: list[ThreadedServer] = []

    def start(respond: Callable[..., Any]) -> ThreadedServer:
        server = ThreadedServer(respond).start()
        started.append(server)
        return server

    yield start
    for s in started:
        s.stop()


@dataclass
class Run:
    code: int
    out: str
    err: str
    exception: BaseException | None

    def json(self) -> Any:
        return json.loads(self.out)

    def yaml(self) -> Any:
        return yaml.safe_load(self.out)

    @property
    def err_lines(self) -> list[str]:
        return self.err.splitlines()


@pytest.fixture
def cli(tmp_path: Path) -> Callable[..., Run]:
    """Run ``mqadmin ARGS`` in-process. The environment is clean: no NAMESRV_ADDR and a
    profiles file path that does not exist, unless ``env`` says otherwise."""
    runner = CliRunner()

    def invoke(*args: str, env: dict[str, str | None] | None = None) -> Run:
        full_env: dict[str, str | None] = {
            "NAMESRV_ADDR": None, "MQADMIN_CONFIG": str(tmp_path / "absent-profiles.yaml"), "COLUMNS": None,
            **(env or {}),
        }
        result = runner.invoke(app, list(args), env=full_env)
        run = Run(result.exit_code, result.stdout, result.stderr, result.exception)
        assert "Traceback" not in run.out + run.err
        if not isinstance(result.exception, SystemExit):
            assert result.exception is None, f"escaped: {result.exception!r}"
        return run

    return invoke
