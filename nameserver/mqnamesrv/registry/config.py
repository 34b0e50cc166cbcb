"""Name-server configuration: NamesrvConfig + NettyServerConfig items, Java properties text.

Items keep Java's names so an existing ``namesrv.properties`` works unchanged and
``getNamesrvConfig`` output reads the same as the Java server's.
"""

from __future__ import annotations

import ipaddress
import os
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import javaproperties


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the item."""


@dataclass(frozen=True, slots=True)
class ConfigItem:
    name: str
    kind: type
    default: Any
    doc: str = ""


def _home(*parts: str) -> str:
    return str(Path.home().joinpath(*parts))


def _items() -> tuple[ConfigItem, ...]:
    return (
        # NamesrvConfig (4.9.8)
        ConfigItem("rocketmqHome", str, os.environ.get("ROCKETMQ_HOME"), "RocketMQ home; informational here"),
        ConfigItem("kvConfigPath", str, _home("namesrv", "kvConfig.json"), "KV config file"),
        ConfigItem("configStorePath", str, _home("namesrv", "namesrv.properties"), "where updateNamesrvConfig writes"),
        ConfigItem("productEnvName", str, "center"),
        ConfigItem("clusterTest", bool, False),
        ConfigItem("orderMessageEnable", bool, False, "put orderTopicConf from ORDER_TOPIC_CONFIG into routes"),
        ConfigItem("configBlackList", str, "configBlackList;configStorePath;kvConfigPath", "keys updateNamesrvConfig refuses"),
        # NamesrvConfig (5.x) items this server implements
        ConfigItem("returnOrderTopicConfigToBroker", bool, True, "send ORDER_TOPIC_CONFIG in register replies"),
        ConfigItem("scanNotActiveBrokerInterval", int, 5000, "ms between scans for expired brokers"),
        ConfigItem("supportActingMaster", bool, False,
                   "list an acting-master group's read-only slave as brokerId 0 in routes"),
        # Ours, named after Java's BROKER_CHANNEL_EXPIRED_TIME constant.
        ConfigItem("brokerChannelExpiredTime", int, 120_000, "ms without registration before a broker is dropped"),
        # Ours: limits that Java sets through system properties or not at all.
        ConfigItem("frameMaxLength", int, 16 * 1024 * 1024, "largest frame accepted (com.rocketmq.remoting.frameMaxLength)"),
        ConfigItem("headerMaxLength", int, 256 * 1024, "largest command header accepted"),
        ConfigItem("frameReadTimeoutSeconds", int, 30, "close a connection that leaves a frame incomplete this long"),
        ConfigItem("writeBufferLimit", int, 1024 * 1024,
                   "unsent answer bytes per connection past which its requests are left unread"),
        ConfigItem("maxConnections", int, 10_000, "connections beyond this are closed at once (0 = no limit)"),
        ConfigItem("adminAllowList", str, "", "client addresses/networks allowed admin writes, ';' or ',' separated (empty = all)"),
        ConfigItem("brokerAllowList", str, "",
                   "addresses/networks allowed to register, unregister and heartbeat (empty = all)"),
        ConfigItem("maxTopicsPerRegistration", int, 100_000, "topics one broker registration may carry"),
        ConfigItem("routeSnapshotPath", str, "", "warm-restart route snapshot file (empty = off)"),
        ConfigItem("routeSnapshotInterval", int, 10_000, "ms between route snapshot writes, when routes changed"),
        ConfigItem("metricsPort", int, -1, "serve Prometheus /metrics on this port (-1 = off, 0 = pick one)"),
        ConfigItem("fastPaths", bool, True,
                   "kept route answers and incremental registrations; false runs the plain path alone (debugging)"),
        # NettyServerConfig
        ConfigItem("listenPort", int, 9876),
        ConfigItem("bindAddress", str, "0.0.0.0"),
        ConfigItem("serverWorkerThreads", int, 8),
        ConfigItem("serverCallbackExecutorThreads", int, 0),
        ConfigItem("serverSelectorThreads", int, 3),
        ConfigItem("serverOnewaySemaphoreValue", int, 256),
        ConfigItem("serverAsyncSemaphoreValue", int, 64),
        ConfigItem("serverChannelMaxIdleTimeSeconds", int, 120, "idle connections are closed after this"),
        ConfigItem("serverSocketSndBufSize", int, 0),
        ConfigItem("serverSocketRcvBufSize", int, 0),
        ConfigItem("writeBufferHighWaterMark", int, 0),
        ConfigItem("writeBufferLowWaterMark", int, 0),
        ConfigItem("serverSocketBacklog", int, 1024),
        ConfigItem("serverPooledByteBufAllocatorEnable", bool, True),
        ConfigItem("useEpollNativeSelector", bool, False),
    )


_JAVA_INT = re.compile(r"[+-]?[0-9]+")

#: Keys no remote update may change, whatever configBlackList says (spec 4.11).
FIXED_BLACK_LIST = frozenset({
    "configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome",
    # Ours: paths and the allowlists, which a remote update must never widen.
    "adminAllowList", "brokerAllowList", "routeSnapshotPath",
})


def _positive(value: int) -> bool:
    return value > 0


#: Range rules of ``NamesrvConfig.validate``: item -> (test, what the value must be).
#: Values outside them stop the server working: no connection accepted, every frame or
#: every broker refused, or no start at all.
_RULES: dict[str, tuple[Callable[[int], bool], str]] = {
    "scanNotActiveBrokerInterval": (_positive, "a positive number of milliseconds"),
    "brokerChannelExpiredTime": (_positive, "a positive number of milliseconds"),
    "maxConnections": (lambda v: v >= 0, "0 (no limit) or a positive number of connections"),
    "frameMaxLength": (_positive, "a positive number of bytes"),
    "headerMaxLength": (_positive, "a positive number of bytes"),
    "maxTopicsPerRegistration": (_positive, "a positive number of topics"),
    "writeBufferLimit": (_positive, "a positive number of bytes"),
    "metricsPort": (lambda v: -1 <= v <= 65535, "-1 (off) or a TCP port (0-65535)"),
}


def _parse(item: ConfigItem, raw: str) -> Any:
    if item.kind is bool:
        # Boolean.parseBoolean: anything but "true" is false, never an error. Unlike Java we
        # ignore surrounding blanks: "true " silently meaning false helps nobody.
        return raw.strip().lower() == "true"
    if item.kind is int:
        # Integer.parseInt: optional sign and digits only, so "9876 " and "9_876" (which
        # Python's int() would take) are refused, as in Java.
        if not _JAVA_INT.fullmatch(raw):
            raise ConfigError(f"{item.name}: {raw!r} is not a whole number")
        return int(raw)
    return raw.strip()


class NamesrvConfig:
    """Typed config items plus unknown keys kept from the file (Java keeps them for 319)."""

    def __init__(self) -> None:
        self.items = {item.name: item for item in _items()}
        self.values: dict[str, Any] = {name: item.default for name, item in self.items.items()}
        self.extras: dict[str, str] = {}
        #: the port the server listens on once bound (``listenPort`` 0 picks one): what
        #: GET_NAMESRV_CONFIG reports, never what the config file keeps
        self.bound_port: int | None = None
        #: moves on every change of a value, so answers computed from them can be cached
        self.generation = 0

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def set(self, name: str, value: Any) -> None:
        if name not in self.items:
            raise ConfigError(f"unknown config item {name!r}")
        self.values[name] = value
        self.generation += 1

    def apply(self, props: Mapping[str, str], *, strict: bool, keep_unknown: bool) -> tuple[list[str], list[str]]:
        """Apply properties; return (names that changed, names that were not applied).

        ``strict``: a bad value raises ConfigError (leaving earlier items applied; see
        ``update`` for all or nothing). Otherwise bad values and unknown keys are skipped,
        as Java's properties2Object does, and returned so the caller can log them.
        """
        changed: list[str] = []
        rejected: list[str] = []
        for key, raw in props.items():
            item = self.items.get(key)
            if item is None:
                if keep_unknown:
                    self.extras[key] = raw
                else:
                    rejected.append(key)
                continue
            try:
                value = _parse(item, raw)
            except ConfigError:
                if strict:
                    raise
                rejected.append(key)
                continue
            if self.values[key] != value:
                self.values[key] = value
                changed.append(key)
        self.generation += 1
        return changed, rejected

    def copy(self) -> NamesrvConfig:
        """An independent copy, to try changes on before they reach the live config."""
        twin = NamesrvConfig()
        twin.values = dict(self.values)
        twin.extras = dict(self.extras)
        twin.bound_port = self.bound_port
        return twin

    def validate(self) -> None:
        """Raise ConfigError naming the first item the server cannot run with.

        The one set of rules for both the start-up load and remote updates (318): a value
        an update may set must be one the server would start with, or it would persist a
        file the next start refuses.
        """
        parse_allow_list(self.values["adminAllowList"])
        parse_allow_list(self.values["brokerAllowList"], "brokerAllowList")
        port = self.values["listenPort"]
        if not 0 <= port <= 65535:
            raise ConfigError(f"listenPort: {port} is not a TCP port (0-65535)")
        for name, (valid, rule) in _RULES.items():
            if not valid(self.values[name]):
                raise ConfigError(f"{name}: must be {rule}, not {self.values[name]}")

    def update(self, props: Mapping[str, str]) -> tuple[list[str], list[str]]:
        """A remote update (318), all or nothing: applied to a copy and validated there,
        so a bad value (unparsable, or refused by ``validate``) raises ConfigError with
        nothing changed. Unknown keys are ignored, as Java does, and returned as rejected.
        """
        candidate, changed, rejected = self.prepare(props)
        self.commit(candidate)
        return changed, rejected

    def prepare(self, props: Mapping[str, str]) -> tuple[NamesrvConfig, list[str], list[str]]:
        """``update`` without touching this config: (the updated copy, changed, rejected).
        The caller saves the copy's ``to_text()`` and only then ``commit``s it, so that
        a change that cannot be saved is never live."""
        candidate = self.copy()
        changed, rejected = candidate.apply(props, strict=True, keep_unknown=False)
        candidate.validate()
        return candidate, changed, rejected

    def commit(self, candidate: NamesrvConfig) -> None:
        self.values.update(candidate.values)
        self.generation += 1

    def black_list(self) -> frozenset[str]:
        configured = {k for k in str(self.values.get("configBlackList") or "").split(";") if k}
        return FIXED_BLACK_LIST | configured

    def to_properties(self) -> dict[str, str]:
        """Every item with a non-null value, then the file's extra keys."""
        out: dict[str, str] = {}
        for name, value in self.values.items():
            if value is None:
                continue
            out[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        for key, raw in self.extras.items():
            out.setdefault(key, raw)
        return out

    def reported_text(self) -> str:
        """``to_text()`` as GET_NAMESRV_CONFIG answers it: ``listenPort`` is the port bound."""
        if self.bound_port is None:
            return self.to_text()
        twin = self.copy()
        twin.values["listenPort"] = self.bound_port
        return twin.to_text()

    def to_text(self) -> str:
        """``key=value`` lines sorted by key as 5.x does, escaped as properties text so
        that reading it back gives every value unchanged: a value holding a line break
        stays one value, and can never become a second key in the file."""
        return "".join(f"{_escape(k, key=True)}={_escape(v)}\n" for k, v in sorted(self.to_properties().items()))


_SIMPLE_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}
_KEY_SPECIALS = frozenset("=: \t#!")


def _escape(text: str, *, key: bool = False) -> str:
    """Properties escaping of one key or value. Ordinary text (paths, lists, numbers)
    is written as is, so getNamesrvConfig reads as Java's; only backslashes, control
    and line-separator characters, a value's leading blanks and a key's separators are
    escaped."""
    out = []
    leading = len(text) - len(text.lstrip(" "))  # blanks the reader would drop
    for i, ch in enumerate(text):
        if ch in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[ch])
        elif unicodedata.category(ch) in ("Cc", "Zl", "Zp"):
            out.append(f"\\u{ord(ch):04x}")
        elif (key and ch in _KEY_SPECIALS) or (ch == " " and i < leading):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def parse_allow_list(text: str, name: str = "adminAllowList"
                     ) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """``10.0.0.5;10.1.0.0/16,::1`` -> networks. Raises ConfigError naming the item
    (``name``) and the bad entry."""
    networks = []
    for entry in re.split(r"[;,\s]+", text.strip()):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ConfigError(f"{name}: {entry!r} is not an IP address or network") from None
    return tuple(networks)


def _valid_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate, from a \uD800 escape
        return False
    return True


def parse_properties(text: str) -> dict[str, str]:
    """Java ``Properties.load`` semantics (comments, ``:``/``=``/blank separators,
    continuations, ``\\uXXXX``). Raises ConfigError on text it cannot read, and on
    escapes that make text no UTF-8 file can hold (a lone surrogate)."""
    try:
        props = dict(javaproperties.loads(text))
    except (ValueError, UnicodeError) as exc:
        raise ConfigError(f"not a properties text: {exc}") from None
    for key, value in props.items():
        if not (_valid_unicode(key) and _valid_unicode(value)):
            raise ConfigError(f"not a properties text: {key!r} holds a lone UTF-16 surrogate (not valid Unicode)")
    return props


def load_properties_file(path: str | os.PathLike[str]) -> dict[str, str]:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise ConfigError(f"config file {os.fspath(path)} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {os.fspath(path)}: {exc.strerror}") from None
    try:
        return parse_properties(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"config file {os.fspath(path)} is not UTF-8 text") from None
    except ConfigError as exc:
        raise ConfigError(f"config file {os.fspath(path)}: {exc}") from None
