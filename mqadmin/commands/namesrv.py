"""``mqadmin namesrv start``: run a name server, configured like Java's ``mqnamesrv``."""

from __future__ import annotations

import logging
import socket
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from mqnamesrv.registry.config import ConfigError, NamesrvConfig, load_properties_file
from mqnamesrv.server.app import BANNER, ListenError, NameServer, run
from mqnamesrv.storage import StorageError

app = typer.Typer(help="Run a RocketMQ-compatible name server.", no_args_is_help=True)


def build_config(
    config_file: Path | None, port: int | None, listen: str | None, kv_config: Path | None
) -> NamesrvConfig:
    """Defaults, then the ``-c`` file, then command-line options (Java's order, 7.3)."""
    config = NamesrvConfig()
    if config_file is not None:
        props = load_properties_file(config_file)
        config.apply(props, strict=True, keep_unknown=True)
        config.set("configStorePath", str(config_file))
    if port is not None:
        config.set("listenPort", port)
    if listen is not None:
        config.set("bindAddress", listen)
    if kv_config is not None:
        config.set("kvConfigPath", str(kv_config))
    config.validate()  # the rules UPDATE_NAMESRV_CONFIG applies too
    return config


def _fail(message: str) -> typer.Exit:
    typer.echo(f"mqadmin namesrv: {message}", err=True)
    return typer.Exit(code=1)


@app.command("start")
def start(
    config_file: Annotated[
        Optional[Path], typer.Option("-c", "--configFile", help="Java .properties file (NamesrvConfig and listen settings).")
    ] = None,
    print_config: Annotated[
        bool, typer.Option("-p", "--printConfigItem", help="Print every effective config item and exit.")
    ] = False,
    port: Annotated[Optional[int], typer.Option("--port", help="Listen port (default 9876; 0 picks a free one).")] = None,
    listen: Annotated[Optional[str], typer.Option("--listen", help="Address to bind (default 0.0.0.0).")] = None,
    kv_config: Annotated[Optional[Path], typer.Option("--kv-config", help="KV config file (kvConfigPath).")] = None,
    metrics_port: Annotated[
        Optional[int], typer.Option("--metrics-port", help="Serve Prometheus metrics on /metrics (0 picks a port).")
    ] = None,
    route_snapshot: Annotated[
        Optional[Path], typer.Option("--route-snapshot", help="Warm restart: keep routes in this file and serve them at start.")
    ] = None,
    log_level: Annotated[str, typer.Option("--log-level", help="DEBUG, INFO, WARNING or ERROR.")] = "INFO",
) -> None:
    """Start a name server. Prints one boot line with the real address once listening,
    then logs on stderr; SIGINT/SIGTERM stop it cleanly (KV table saved, exit 0)."""
    try:
        config = build_config(config_file, port, listen, kv_config)
        if metrics_port is not None:
            config.set("metricsPort", metrics_port)
        if route_snapshot is not None:
            config.set("routeSnapshotPath", str(route_snapshot))
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    if print_config:
        for name, value in config.values.items():
            shown = "" if value is None else ("true" if value is True else "false" if value is False else value)
            typer.echo(f"{name}={shown}")
        for key, raw in config.extras.items():
            typer.echo(f"{key}={raw}")
        raise typer.Exit(code=0)
    level = getattr(logging, log_level.upper(), None)
    if not isinstance(level, int):
        raise _fail(f"--log-level: unknown level {log_level!r}")
    logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s - %(message)s")

    host = config["bindAddress"]
    try:  # the OS's own words for a bad name are a negative errno: "Unknown error -2"
        socket.getaddrinfo(host or None, None, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise _fail(f"cannot listen on {host}: not an IP address, nor a host name this machine resolves "
                    f"({exc.strerror})") from None

    def ready(server: NameServer) -> None:
        print(BANNER.format(host=server.host, port=server.port), flush=True)

    try:
        run(config, on_ready=ready)
    except StorageError as exc:
        raise _fail(str(exc)) from None
    except ListenError as exc:
        raise _fail(exc.message) from None
