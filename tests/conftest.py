from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.nsprocess import NameServerProcess

GOLDEN = Path(__file__).parent / "golden"


@pytest.fixture
def start_namesrv(tmp_path: Path) -> Iterator[Callable[..., NameServerProcess]]:
    """Factory: ``start_namesrv(properties={...})`` runs a real name server process."""
    started: list[NameServerProcess] = []

    def start(properties: dict[str, str] | None = None, name: str = "ns", extra_args: list[str] | None = None) -> NameServerProcess:
        ns = NameServerProcess(tmp_path / f"{name}{len(started)}", dict(properties or {}), list(extra_args or []))
        started.append(ns)
        return ns.start()

    yield start
    for ns in started:
        ns.stop()


@pytest.fixture
def namesrv(start_namesrv: Callable[..., NameServerProcess]) -> NameServerProcess:
    return start_namesrv()
