"""Start and stop real name-server processes for tests (``mqadmin namesrv start --port 0``)."""

from __future__ import annotations

import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from mqnamesrv.protocol.command import RemotingCommand
from mqnamesrv.protocol.frame import NEED_DATA, FrameDecoder, encode

BANNER_RE = re.compile(r"^The Name Server boot success\. serializeType=JSON, address (\S+):(\d+)$")


@dataclass
class NameServerProcess:
    """A running ``mqadmin namesrv start`` child; ``addr`` is ``127.0.0.1:PORT``."""

    workdir: Path
    properties: dict[str, str] = field(default_factory=dict)
    extra_args: list[str] = field(default_factory=list)
    proc: subprocess.Popen[str] | None = None
    port: int = 0
    banner: str = ""

    @property
    def config_file(self) -> Path:
        return self.workdir / "namesrv.properties"

    @property
    def kv_file(self) -> Path:
        return Path(self.properties.get("kvConfigPath", self.workdir / "kvConfig.json"))

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0, *, keep_config: bool = False) -> NameServerProcess:
        """Write the ``-c`` file from ``properties`` and start; ``keep_config``: start
        on the file as the previous run left it (updateNamesrvConfig writes it)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        props = {"kvConfigPath": str(self.workdir / "kvConfig.json"), **self.properties}
        self.properties = props
        if not keep_config:
            self.config_file.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        env = {**os.environ, "HOME": str(self.workdir), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "mqadmin", "namesrv", "start", "--port", "0", "--listen", "127.0.0.1",
             "-c", str(self.config_file), *self.extra_args],
            stdout=subprocess.PIPE, stderr=open(self.workdir / "stderr.log", "a"), text=True, env=env,
        )
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                line = self.proc.stdout.readline()
                if not line:
                    break
                m = BANNER_RE.match(line.strip())
                if m:
                    self.banner = line.strip()
                    self.port = int(m.group(2))
                    return self
            if self.proc.poll() is not None:
                break
        self.stop()
        raise RuntimeError(f"name server did not start: {self.stderr()}")

    def stderr(self) -> str:
        path = self.workdir / "stderr.log"
        return path.read_text() if path.exists() else ""

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode
        if self.proc.stdout:
            self.proc.stdout.close()
        self.proc = None
        return rc


class RawClient:
    """A blocking socket speaking frames: send bytes or commands, read decoded answers."""

    def __init__(self, addr: str, timeout: float = 5.0) -> None:
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.decoder = FrameDecoder()

    def send_bytes(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send(self, cmd: RemotingCommand) -> None:
        self.sock.sendall(encode(cmd))

    def recv(self, timeout: float | None = None) -> RemotingCommand | None:
        """Next frame, or None when the peer closed the connection."""
        if timeout is not None:
            self.sock.settimeout(timeout)
        while True:
            cmd = self.decoder.next_frame()
            if cmd is not NEED_DATA:
                return cmd  # type: ignore[return-value]
            data = self.sock.recv(65536)
            if not data:
                return None
            self.decoder.feed(data)

    def call(self, cmd: RemotingCommand) -> RemotingCommand:
        self.send(cmd)
        answer = self.recv()
        assert answer is not None, "connection closed instead of an answer"
        return answer

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
