"""NamesrvConfig items, properties text and config files (spec 4.11, 7.1-7.3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mqnamesrv.registry.config import ConfigError, NamesrvConfig, load_properties_file, parse_properties

#: Java's fixed keys plus ours (paths and the write allowlist must never be widened remotely).
FIXED = {"configBlackList", "configStorePath", "kvConfigPath", "rocketmqHome", "adminAllowList", "brokerAllowList",
         "routeSnapshotPath"}


@pytest.fixture
def config() -> NamesrvConfig:
    cfg = NamesrvConfig()
    # Pin the items whose defaults depend on the environment.
    cfg.set("rocketmqHome", "/opt/rmq")
    cfg.set("kvConfigPath", "/data/kvConfig.json")
    cfg.set("configStorePath", "/data/namesrv.properties")
    return cfg


#: Items of spec 7.1/7.2 with their defaults (paths and home pinned by the fixture).
SPEC_DEFAULTS = {
    "bindAddress": "0.0.0.0",
    "clusterTest": "false",
    "configBlackList": "configBlackList;configStorePath;kvConfigPath",
    "configStorePath": "/data/namesrv.properties",
    "kvConfigPath": "/data/kvConfig.json",
    "listenPort": "9876",
    "orderMessageEnable": "false",
    "productEnvName": "center",
    "returnOrderTopicConfigToBroker": "true",
    "rocketmqHome": "/opt/rmq",
    "scanNotActiveBrokerInterval": "5000",
    "serverAsyncSemaphoreValue": "64",
    "serverCallbackExecutorThreads": "0",
    "serverChannelMaxIdleTimeSeconds": "120",
    "serverOnewaySemaphoreValue": "256",
    "serverPooledByteBufAllocatorEnable": "true",
    "serverSelectorThreads": "3",
    "serverSocketBacklog": "1024",
    "serverSocketRcvBufSize": "0",
    "serverSocketSndBufSize": "0",
    "serverWorkerThreads": "8",
    "useEpollNativeSelector": "false",
    "writeBufferHighWaterMark": "0",
    "writeBufferLowWaterMark": "0",
}


# ------------------------------------------------------------------ items ----


def test_defaults() -> None:
    cfg = NamesrvConfig()
    assert cfg["listenPort"] == 9876
    assert cfg["orderMessageEnable"] is False
    assert cfg["returnOrderTopicConfigToBroker"] is True
    assert cfg["configBlackList"] == "configBlackList;configStorePath;kvConfigPath"
    assert cfg["kvConfigPath"] == str(Path.home() / "namesrv" / "kvConfig.json")
    assert cfg["configStorePath"] == str(Path.home() / "namesrv" / "namesrv.properties")
    assert cfg["brokerChannelExpiredTime"] == 120_000
    assert cfg.extras == {}


def test_to_text_is_sorted_key_value_lines_of_every_item(config: NamesrvConfig) -> None:
    text = config.to_text()
    assert text.endswith("\n")
    lines = text.splitlines()
    assert lines == sorted(lines)
    props = dict(line.split("=", 1) for line in lines)
    assert len(props) == len(lines)
    assert set(props) == set(config.items)
    assert {k: props[k] for k in SPEC_DEFAULTS} == SPEC_DEFAULTS
    assert props["brokerChannelExpiredTime"] == "120000"


def test_to_text_includes_extras_and_omits_nulls(config: NamesrvConfig) -> None:
    config.set("rocketmqHome", None)
    config.apply({"zzz.custom": "1", "aaa.custom": "x y", "listenPort": "9877"}, strict=True, keep_unknown=True)
    lines = config.to_text().splitlines()
    assert lines[0] == "aaa.custom=x y"
    assert lines[-1] == "zzz.custom=1"
    assert "listenPort=9877" in lines
    assert not any(line.startswith("rocketmqHome=") for line in lines)
    assert lines == sorted(lines)


def test_extras_never_shadow_items(config: NamesrvConfig) -> None:
    config.extras["listenPort"] = "1"
    assert "listenPort=9876\n" in config.to_text()


def test_set_unknown_item_is_an_error(config: NamesrvConfig) -> None:
    with pytest.raises(ConfigError, match="nope"):
        config.set("nope", 1)


# ------------------------------------------------------------------ apply ----


def test_apply_reports_changed_and_rejected(config: NamesrvConfig) -> None:
    changed, rejected = config.apply(
        {"listenPort": "9877", "orderMessageEnable": "true", "productEnvName": "center", "bogus": "x"},
        strict=False, keep_unknown=False,
    )
    assert (changed, rejected) == (["listenPort", "orderMessageEnable"], ["bogus"])
    assert (config["listenPort"], config["orderMessageEnable"]) == (9877, True)
    assert config.extras == {}


def test_apply_keeps_unknown_keys_when_asked(config: NamesrvConfig) -> None:
    assert config.apply({"brokerRole": "ASYNC_MASTER"}, strict=True, keep_unknown=True) == ([], [])
    assert config.extras == {"brokerRole": "ASYNC_MASTER"}


def test_strict_apply_names_the_item_with_a_bad_number(config: NamesrvConfig) -> None:
    with pytest.raises(ConfigError, match="listenPort") as info:
        config.apply({"listenPort": "98x76"}, strict=True, keep_unknown=True)
    assert "98x76" in str(info.value)
    assert config["listenPort"] == 9876


def test_lenient_apply_skips_a_bad_number(config: NamesrvConfig) -> None:
    props = {"listenPort": "abc", "serverWorkerThreads": "4"}
    changed, rejected = config.apply(props, strict=False, keep_unknown=False)
    assert (changed, rejected) == (["serverWorkerThreads"], ["listenPort"])
    assert config["listenPort"] == 9876


def test_string_items_are_trimmed(config: NamesrvConfig) -> None:
    config.apply({"productEnvName": "  test \t"}, strict=True, keep_unknown=False)
    assert config["productEnvName"] == "test"


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("true", True), ("TRUE", True), ("True", True),
        ("false", False), ("yes", False), ("1", False), ("on", False), ("", False), ("tru", False),
    ],
)
def test_booleans_parse_like_java_parse_boolean(config: NamesrvConfig, raw: str, expected: bool) -> None:
    config.set("orderMessageEnable", not expected)
    changed, rejected = config.apply({"orderMessageEnable": raw}, strict=True, keep_unknown=False)
    assert (config["orderMessageEnable"], changed, rejected) == (expected, ["orderMessageEnable"], [])


def test_boolean_with_trailing_blank_is_true_unlike_java(config: NamesrvConfig) -> None:
    """Deliberate: Java's parseBoolean("true ") is false, a silent trap we do not copy."""
    config.apply({"orderMessageEnable": "true "}, strict=False, keep_unknown=False)
    assert config["orderMessageEnable"] is True


@pytest.mark.parametrize("raw", ["9877", "+9877"])
def test_numbers_java_accepts(config: NamesrvConfig, raw: str) -> None:
    config.apply({"listenPort": raw}, strict=True, keep_unknown=False)
    assert config["listenPort"] == 9877


@pytest.mark.parametrize("raw", ["", "0x10", "9.5", "nine"])
def test_numbers_java_refuses(config: NamesrvConfig, raw: str) -> None:
    assert config.apply({"listenPort": raw}, strict=False, keep_unknown=False) == ([], ["listenPort"])
    assert config["listenPort"] == 9876


@pytest.mark.parametrize("raw", ["9877 ", "9_877", " 9877"])
def test_numbers_python_accepts_but_java_refuses(config: NamesrvConfig, raw: str) -> None:
    assert config.apply({"listenPort": raw}, strict=False, keep_unknown=False) == ([], ["listenPort"])
    assert config["listenPort"] == 9876


# -------------------------------------------------------------- black list ----


def test_black_list_default(config: NamesrvConfig) -> None:
    assert config.black_list() == FIXED


def test_black_list_adds_the_configured_keys_to_the_fixed_ones(config: NamesrvConfig) -> None:
    config.set("configBlackList", "listenPort;;orderMessageEnable")
    assert config.black_list() == {
        *FIXED, "listenPort", "orderMessageEnable",
    }


def test_black_list_cannot_be_emptied(config: NamesrvConfig) -> None:
    config.set("configBlackList", "")
    assert config.black_list() == FIXED


# --------------------------------------------------------- properties text ----


def test_parse_properties_follows_java_properties() -> None:
    text = (
        "# comment\n"
        "! another comment\n"
        "a=1\n"
        "b : 2\n"
        "c 3\n"
        "d=multi\\\n"
        "    line\n"
        "e=\\u0041\\u00e9\n"
        "   f   =   v  \n"
        "g=\n"
        "h=x=y\n"
    )
    assert parse_properties(text) == {
        "a": "1", "b": "2", "c": "3", "d": "multiline", "e": "Aé", "f": "v  ", "g": "", "h": "x=y",
    }


def test_parse_properties_last_duplicate_wins() -> None:
    assert parse_properties("k=1\nk=2\n") == {"k": "2"}


def test_parse_properties_bad_escape() -> None:
    with pytest.raises(ConfigError, match="not a properties text"):
        parse_properties("k=\\uZZZZ\n")


def test_load_properties_file(tmp_path: Path) -> None:
    path = tmp_path / "namesrv.properties"
    path.write_bytes("listenPort=9877\norderMessageEnable=true\nkvConfigPath=data/kv.json\nname=é\n".encode())
    assert load_properties_file(path) == {
        "listenPort": "9877", "orderMessageEnable": "true", "kvConfigPath": "data/kv.json", "name": "é",
    }


def test_load_missing_properties_file(tmp_path: Path) -> None:
    path = tmp_path / "missing.properties"
    with pytest.raises(ConfigError) as info:
        load_properties_file(path)
    assert str(info.value) == f"config file {path} does not exist"


def test_load_properties_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.properties"
    path.write_bytes("name=caf\u00e9\n".encode("latin-1"))
    with pytest.raises(ConfigError) as info:
        load_properties_file(path)
    assert str(info.value) == f"config file {path} is not UTF-8 text"


def test_load_properties_file_with_bad_escape_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.properties"
    path.write_text("k=\\uZZZZ\n")
    with pytest.raises(ConfigError) as info:
        load_properties_file(path)
    assert str(info.value).startswith(f"config file {path}: not a properties text")


def test_load_properties_file_that_is_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_properties_file(tmp_path)
    assert str(info.value).startswith(f"cannot read config file {tmp_path}: ")
