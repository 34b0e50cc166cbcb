"""Honest answers: an unknown config key, a peer that is not a name server, a bad --listen."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.cli.conftest import Run

Cli = Callable[..., Run]
MQADMIN = str(Path(sys.executable).parent / "mqadmin")


@pytest.fixture
def http_peer() -> Iterator[str]:
    """A socket that answers whatever it gets the way a web server answers garbage."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.recv(4096)
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(5)
    listener.close()


def test_an_http_server_is_named_as_such(cli: Cli, http_peer: str) -> None:
    run = cli("topicList", "-n", http_peer)
    assert run.code == 1
    assert run.err_lines == [f"mqadmin: error: {http_peer}: GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206): an HTTP server "
                             "answered, not a RocketMQ name server (wrong port?)"]
    assert "1213486160" not in run.err


def test_update_namesrv_config_with_an_unknown_key(cli: Cli, addrs: list[str]) -> None:
    every = cli("updateNamesrvConfig", "-k", "ordermessageenable", "-v", "true", "-n", ";".join(addrs))
    assert every.code == 1
    assert every.err_lines == ["mqadmin: error: 'ordermessageenable' is not a config item (did you mean "
                               "'orderMessageEnable'?): every name server that answered ignored it; nothing was changed"]
    doc = cli("updateNamesrvConfig", "-k", "fooBar", "-v", "1", "-n", ";".join(addrs), "-o", "json").json()
    assert doc["status"] == "error" and "'fooBar' is not a config item" in doc["error"]
    known = cli("updateNamesrvConfig", "-k", "orderMessageEnable", "-v", "false", "-n", ";".join(addrs))
    assert (known.code, known.err) == (0, "")


def test_listen_on_a_bad_address_says_so(tmp_path: Path) -> None:
    proc = subprocess.run([MQADMIN, "namesrv", "start", "--listen", "999.1.1.1", "--port", "0",
                           "--kv-config", str(tmp_path / "kv.json")], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("mqadmin namesrv: cannot listen on 999.1.1.1: not an IP address, nor a host name")
    assert "Unknown error" not in proc.stderr
