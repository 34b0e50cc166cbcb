"""KV config and config updates survive restarts, in Java's file formats."""

from __future__ import annotations

import json
from pathlib import Path

from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import request
from mqnamesrv.registry.config import parse_properties
from tests.nsprocess import NameServerProcess, RawClient


def test_kv_survives_restart_in_java_format(tmp_path: Path) -> None:
    ns = NameServerProcess(tmp_path / "ns").start()
    with RawClient(ns.addr) as c:
        for k, v in [("order_topic", "broker-a:4;broker-b:4"), ("other", "broker-a:8")]:
            put = request(R.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": k, "value": v})
            assert c.call(put).code == 0
        assert c.call(request(R.DELETE_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "other"})).code == 0
    # Acknowledged means on disk, before any shutdown.
    assert json.loads(ns.kv_file.read_text()) == {"configTable": {"ORDER_TOPIC_CONFIG": {"order_topic": "broker-a:4;broker-b:4"}}}
    assert (ns.kv_file.parent / (ns.kv_file.name + ".bak")).exists()
    assert not (ns.kv_file.parent / (ns.kv_file.name + ".tmp")).exists()
    ns.stop()
    ns.start()
    with RawClient(ns.addr) as c:
        resp = c.call(request(R.GET_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "order_topic"}))
        assert resp.ext == {"value": "broker-a:4;broker-b:4"}
    ns.stop()


def test_java_kv_file_is_loaded(tmp_path: Path) -> None:
    """The file a real Java 4.9.8 server wrote (golden) loads unchanged."""
    golden = Path(__file__).parents[1] / "golden" / "kvConfig-after-put.json"
    ns = NameServerProcess(tmp_path / "ns")
    (tmp_path / "ns").mkdir()
    (tmp_path / "ns" / "kvConfig.json").write_bytes(golden.read_bytes())
    ns.start()
    with RawClient(ns.addr) as c:
        resp = c.call(request(R.GET_KVLIST_BY_NAMESPACE, {"namespace": "test_ns"}))
        assert resp.body == b'{"table":{"k1":"v1"}}'
    ns.stop()


def test_config_update_is_written_to_the_c_file_and_kept(tmp_path: Path) -> None:
    ns = NameServerProcess(tmp_path / "ns", {"myExtra": "kept"}).start()
    with RawClient(ns.addr) as c:
        assert c.call(request(R.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n")).code == 0
        refused = c.call(request(R.UPDATE_NAMESRV_CONFIG, body=b"configStorePath=/tmp/x\norderMessageEnable=false\n"))
        assert (refused.code, refused.remark) == (16, "Can not update config in black list.")
        text = c.call(request(R.GET_NAMESRV_CONFIG)).body.decode()
    assert parse_properties(text)["orderMessageEnable"] == "true"
    saved = parse_properties(ns.config_file.read_text())
    assert saved["orderMessageEnable"] == "true" and saved["myExtra"] == "kept"
    ns.stop()
    ns.properties = saved  # restart from the file the server wrote
    ns.start()
    with RawClient(ns.addr) as c:
        assert parse_properties(c.call(request(R.GET_NAMESRV_CONFIG)).body.decode())["orderMessageEnable"] == "true"
    ns.stop()
