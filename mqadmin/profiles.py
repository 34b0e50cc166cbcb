"""Which name servers a command talks to, and the option defaults that go with them.

Sources, first match wins:

1. ``-n/--namesrvAddr "host:port;host:port"`` (as Java's mqadmin);
2. ``--profile NAME``: a profile from the profiles file (explicit on the command line,
   so it beats the environment);
3. the ``NAMESRV_ADDR`` environment variable (as Java);
4. ``default_profile`` of the profiles file, when the file names one.

Nothing found is a ConfigError. The profiles file is ``$MQADMIN_CONFIG`` if set, else
``$XDG_CONFIG_HOME/mqadmin/profiles.yaml`` (``~/.config/mqadmin/profiles.yaml``)::

    default_profile: prod            # optional: used when nothing else names servers
    defaults:                        # optional: option defaults for every profile
      timeout: 3                     # --timeout, seconds per server
      output: table                  # -o/--output: table, json or yaml
    profiles:
      prod:                          # one entry per cluster of name servers
        namesrv: 10.0.0.1:9876;10.0.0.2:9876;10.0.0.3:9876
        timeout: 5
      staging:
        namesrv: [10.1.0.1:9876, 10.1.0.2:9876]   # a YAML list works too
        output: json

A profile's ``timeout``/``output`` override ``defaults``; options given on the command
line override both. They apply whenever the file is used for the servers, and also with
``-n`` when ``--profile`` is given explicitly.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

from .errors import ConfigError
from .transport.fanout import parse_addrs

OUTPUTS = ("table", "json", "yaml")
_PROFILE_KEYS = {"namesrv", "timeout", "output"}
_TOP_KEYS = {"default_profile", "defaults", "profiles"}


@dataclass(frozen=True, slots=True)
class Target:
    """Resolved name servers, where they came from, and defaults from a profile."""

    addrs: list[str]
    source: str
    timeout: float | None = None
    output: str | None = None


def config_path(env: Mapping[str, str]) -> Path:
    if env.get("MQADMIN_CONFIG"):
        return Path(env["MQADMIN_CONFIG"]).expanduser()
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else Path(env.get("HOME", "~")) / ".config"
    return (base / "mqadmin" / "profiles.yaml").expanduser()


def load_profiles(path: Path) -> dict[str, Any]:
    """The parsed file, checked; raises ConfigError with the path in one line."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: profiles file does not exist") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read profiles file: {exc.strerror}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        raise ConfigError(f"{path}: not valid YAML{line}") from None
    raw = {} if raw is None else raw
    _mapping(raw, path, "the file")
    _known(raw, _TOP_KEYS, path, "the file")
    profiles = _mapping(raw.get("profiles") or {}, path, "'profiles'")
    for name, profile in profiles.items():
        _mapping(profile, path, f"profile {name!r}")
        _known(profile, _PROFILE_KEYS, path, f"profile {name!r}")
    _known(_mapping(raw.get("defaults") or {}, path, "'defaults'"), _PROFILE_KEYS - {"namesrv"}, path, "'defaults'")
    return raw


def _mapping(value: Any, path: Path, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: {what} must be a mapping")
    return value


def _known(obj: Mapping[str, Any], keys: set[str], path: Path, what: str) -> None:
    unknown = sorted(set(obj) - keys)
    if unknown:
        raise ConfigError(f"{path}: {what} has unknown key(s) {', '.join(map(repr, unknown))}; known: {', '.join(sorted(keys))}")


def _profile_target(raw: dict[str, Any], name: str, path: Path, addrs: list[str] | None) -> Target:
    profiles = raw.get("profiles") or {}
    if name not in profiles:
        known = ", ".join(sorted(profiles)) or "none"
        raise ConfigError(f"{path}: no profile {name!r} (profiles: {known})")
    profile = profiles[name]
    merged = {**(raw.get("defaults") or {}), **profile}
    source = f"profile {name!r} in {path}"
    if addrs is None:
        servers = profile.get("namesrv")
        if isinstance(servers, list) and all(isinstance(s, str) for s in servers):
            servers = ";".join(servers)
        if not isinstance(servers, str):
            raise ConfigError(f"{path}: profile {name!r} needs 'namesrv: host:port;host:port'")
        addrs = parse_addrs(servers, source)
    timeout = merged.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not math.isfinite(timeout) or timeout <= 0):
        raise ConfigError(f"{path}: profile {name!r}: timeout must be a positive number of seconds")
    output = merged.get("output")
    if output is not None and output not in OUTPUTS:
        raise ConfigError(f"{path}: profile {name!r}: output must be one of {', '.join(OUTPUTS)}")
    return Target(addrs, source, None if timeout is None else float(timeout), output)


def resolve(namesrv: str | None, profile: str | None, env: Mapping[str, str] | None = None) -> Target:
    """The name servers to use (see the module docstring); raises AddressError / ConfigError."""
    env = os.environ if env is None else env
    path = config_path(env)
    cli_addrs = None if namesrv is None else parse_addrs(namesrv, "-n/--namesrvAddr")
    if profile is not None:
        return _profile_target(load_profiles(path), profile, path, cli_addrs)
    if cli_addrs is not None:
        return Target(cli_addrs, "-n/--namesrvAddr")
    if env.get("NAMESRV_ADDR", "").strip():
        return Target(parse_addrs(env["NAMESRV_ADDR"], "NAMESRV_ADDR"), "NAMESRV_ADDR")
    if path.exists():
        raw = load_profiles(path)
        default = raw.get("default_profile")
        if default is not None:
            return _profile_target(raw, str(default), path, None)
    raise ConfigError(
        "no name server configured: pass -n 'host:port;host:port', set NAMESRV_ADDR, "
        f"or use --profile NAME with {path}"
    )
