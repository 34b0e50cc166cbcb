"""KVStore: namespace/key/value semantics and the Java kvConfig.json format (spec 4.1, 7.3)."""

from __future__ import annotations

import pytest

from mqnamesrv.registry.kv import KVConfigError, KVStore

ORDER = "ORDER_TOPIC_CONFIG"


def test_put_get_overwrite() -> None:
    kv = KVStore()
    assert kv.get(ORDER, "t") is None
    kv.put(ORDER, "t", "broker-a:4")
    kv.put(ORDER, "t", "broker-a:4;broker-b:4")
    assert kv.get(ORDER, "t") == "broker-a:4;broker-b:4"
    assert kv.get(ORDER, "other") is None
    assert kv.get("other-ns", "t") is None
    assert kv.table == {ORDER: {"t": "broker-a:4;broker-b:4"}}


def test_delete_keeps_the_emptied_namespace() -> None:
    kv = KVStore()
    kv.put("ns", "k", "v")
    kv.delete("ns", "k")
    assert kv.get("ns", "k") is None
    assert kv.namespace("ns") == {}
    assert kv.table == {"ns": {}}


def test_delete_of_missing_key_or_namespace_is_harmless() -> None:
    kv = KVStore()
    kv.put("ns", "k", "v")
    kv.delete("ns", "nope")
    kv.delete("nope", "k")
    assert kv.table == {"ns": {"k": "v"}}


def test_namespace_lookup() -> None:
    kv = KVStore()
    kv.put("ns", "a", "1")
    kv.put("ns", "b", "2")
    assert kv.namespace("ns") == {"a": "1", "b": "2"}
    assert kv.namespace("missing") is None


def test_generation_moves_on_put_and_effective_delete_only() -> None:
    kv = KVStore()
    kv.put("ns", "k", "v")
    assert kv.generation == 1
    kv.delete("ns", "nope")
    assert kv.generation == 1
    kv.delete("ns", "k")
    assert kv.generation == 2


def test_dumps_is_the_java_file_format() -> None:
    kv = KVStore()
    kv.put(ORDER, "order_topic", "broker-a:4;broker-b:4")
    assert kv.dumps() == b'{"configTable":{"ORDER_TOPIC_CONFIG":{"order_topic":"broker-a:4;broker-b:4"}}}'


def test_dumps_of_empty_store_and_empty_namespace() -> None:
    assert KVStore().dumps() == b'{"configTable":{}}'
    kv = KVStore()
    kv.put("ns", "k", "v")
    kv.delete("ns", "k")
    assert kv.dumps() == b'{"configTable":{"ns":{}}}'


def test_dumps_writes_non_ascii_raw_and_escapes_like_fastjson() -> None:
    kv = KVStore()
    kv.put("ns", "clé", 'a"b\\c\n\u0085')
    assert kv.dumps() == '{"configTable":{"ns":{"clé":"a\\"b\\\\c\\n\\u0085"}}}'.encode()


def test_loads_round_trips_dumps() -> None:
    kv = KVStore()
    kv.put(ORDER, "t1", "broker-a:4")
    kv.put("ns", "clé", "välue")
    kv.put("empty", "k", "v")
    kv.delete("empty", "k")
    assert KVStore.loads(kv.dumps()).table == {ORDER: {"t1": "broker-a:4"}, "ns": {"clé": "välue"}, "empty": {}}


def test_loads_java_file() -> None:
    data = b'{"configTable":{"ORDER_TOPIC_CONFIG":{"order_topic":"broker-a:4;broker-b:4"},"ns":{}}}'
    kv = KVStore.loads(data)
    assert kv.table == {ORDER: {"order_topic": "broker-a:4;broker-b:4"}, "ns": {}}
    assert kv.generation == 0


def test_loads_tolerates_nulls_and_non_string_values() -> None:
    kv = KVStore.loads(b'{"configTable":{"a":{"n":4,"gone":null},"b":null}}')
    assert kv.table == {"a": {"n": "4"}, "b": {}}


def test_loads_empty_object_is_an_empty_table() -> None:
    assert KVStore.loads(b"{}").table == {}


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"{", id="truncated"),
        pytest.param(b"\xff\xfe", id="not-utf8"),
        pytest.param(b"[]", id="array"),
        pytest.param(b"null", id="null"),
        pytest.param(b'{"other":{}}', id="no-config-table"),
        pytest.param(b'{"configTable":[]}', id="table-not-a-map"),
        pytest.param(b'{"configTable":{"ns":["v"]}}', id="namespace-not-a-map"),
    ],
)
def test_corrupt_content_is_an_error(data: bytes) -> None:
    with pytest.raises(KVConfigError):
        KVStore.loads(data)


def test_namespace_error_names_the_namespace() -> None:
    with pytest.raises(KVConfigError, match="namespace 'ns' is not a map"):
        KVStore.loads(b'{"configTable":{"ns":"v"}}')
