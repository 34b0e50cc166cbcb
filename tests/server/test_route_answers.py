"""Route answers reused from the last identical request (RouteAnswers), in the real process:
every kind of write that changes a route is seen by the very next query, and every
answer carries its own request's opaque."""

from __future__ import annotations

import json
from typing import Any, Callable

from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import RemotingCommand, request
from mqnamesrv.protocol.frame import encode
from tests.nsprocess import NameServerProcess, RawClient
from tests.server.brokers import register
from tests.server.test_liveness import wait_for


def route(client: RawClient, topic: str = "order_topic") -> tuple[int, Any]:
    """(code, the route body as JSON or None), asked twice so the second answer is the
    reused one; both must agree and carry their request's opaque."""
    answers = []
    for _ in range(2):
        cmd = request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        answer = client.call(cmd)
        assert answer.opaque == cmd.opaque and answer.is_response
        answers.append((answer.code, json.loads(answer.body) if answer.code == 0 else answer.remark))
    assert answers[0] == answers[1]
    return answers[0]


def perms(client: RawClient, topic: str = "order_topic") -> list[tuple[str, int, int]]:
    code, body = route(client, topic)
    assert code == 0, body
    return sorted((q["brokerName"], q["perm"], q["readQueueNums"]) for q in body["queueDatas"])


def test_broker_writes_are_seen_by_the_next_query(namesrv: NameServerProcess) -> None:
    with RawClient(namesrv.addr) as broker, RawClient(namesrv.addr) as c:
        assert broker.call(register("broker-a", topics={"order_topic": 4})).code == 0
        assert perms(c) == [("broker-a", 6, 4)]
        assert broker.call(register("broker-a", topics={"order_topic": 8}, counter=2)).code == 0
        assert perms(c) == [("broker-a", 6, 8)]
        assert c.call(request(R.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})).code == 0
        assert perms(c) == [("broker-a", 4, 8)]
        assert c.call(request(R.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})).code == 0
        assert perms(c) == [("broker-a", 6, 8)]
        topic_body = b'{"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":2,"topicSysFlag":0,' \
                     b'"writeQueueNums":2}]}'
        assert c.call(request(R.REGISTER_TOPIC_IN_NAMESRV, {"topic": "order_topic"}, body=topic_body)).code == 0
        assert perms(c) == [("broker-a", 6, 2)]
        assert broker.call(register("broker-a", topics={"order_topic": 8, "other": 1}, counter=3)).code == 0
        assert c.call(request(R.DELETE_TOPIC_IN_NAMESRV, {"topic": "order_topic"})).code == 0
        assert route(c)[0] == 17
        assert route(c, "other")[0] == 0
        unregister = {"clusterName": "DefaultCluster", "brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911",
                      "brokerId": "0"}
        assert c.call(request(R.UNREGISTER_BROKER, unregister)).code == 0
        assert route(c, "other")[0] == 17


def test_an_expired_broker_leaves_the_next_answer(start_namesrv: Callable[..., NameServerProcess]) -> None:
    ns = start_namesrv({"scanNotActiveBrokerInterval": "50", "brokerChannelExpiredTime": "400"})
    broker = RawClient(ns.addr)
    assert broker.call(register("broker-a")).code == 0
    with RawClient(ns.addr) as c:
        assert route(c)[0] == 0
        assert wait_for(lambda: route(c)[0] == 17)
    broker.close()


def test_order_config_in_kv_and_config_changes_are_seen(namesrv: NameServerProcess) -> None:
    order = {"namespace": "ORDER_TOPIC_CONFIG", "key": "order_topic", "value": "broker-a:4"}
    with RawClient(namesrv.addr) as broker, RawClient(namesrv.addr) as c:
        assert broker.call(register("broker-a")).code == 0
        assert c.call(request(R.PUT_KV_CONFIG, order)).code == 0
        assert "orderTopicConf" not in route(c)[1]  # orderMessageEnable is false by default
        assert c.call(request(R.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n")).code == 0
        assert route(c)[1]["orderTopicConf"] == "broker-a:4"
        assert c.call(request(R.PUT_KV_CONFIG, {**order, "value": "broker-a:8"})).code == 0
        assert route(c)[1]["orderTopicConf"] == "broker-a:8"
        assert c.call(request(R.DELETE_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "order_topic"})).code == 0
        assert "orderTopicConf" not in route(c)[1]


def _raw_route(topic_json: str, opaque: str, flag: int = 0) -> bytes:
    """A route query's frame with a hand-written JSON header."""
    header = (f'{{"code":105,"extFields":{{"topic":{topic_json}}},"flag":{flag},"language":"JAVA",'
              f'"opaque":{opaque},"serializeTypeCurrentRPC":"JSON","version":409}}').encode()
    return (4 + len(header)).to_bytes(4, "big") + len(header).to_bytes(4, "big") + header


def test_every_answer_carries_its_own_opaque_in_a_pipelined_burst(namesrv: NameServerProcess) -> None:
    opaques = [0, 1, 9, 10, 999_999_999, 1_000_000_000, 2_147_483_647, -1, -2_147_483_648, 7, 7]
    with RawClient(namesrv.addr) as broker, RawClient(namesrv.addr) as c:
        assert broker.call(register("broker-a")).code == 0
        c.send_bytes(b"".join(_raw_route('"order_topic"', str(o)) for o in opaques))
        answers = [c.recv() for _ in opaques]
        assert [a.opaque for a in answers if a is not None] == opaques
        assert len({a.body for a in answers if a is not None}) == 1
        # The answer to a reused request is byte for byte the one built for it afresh.
        fresh = answers[0]
        assert fresh is not None
        for a in answers:
            assert a is not None
            assert encode(a) == encode(RemotingCommand(**{**_fields(fresh), "opaque": a.opaque}))


def _fields(cmd: RemotingCommand) -> dict[str, Any]:
    return {k: getattr(cmd, k) for k in RemotingCommand.__dataclass_fields__}


def test_odd_opaques_and_look_alikes_are_answered_the_plain_way(namesrv: NameServerProcess) -> None:
    with RawClient(namesrv.addr) as broker, RawClient(namesrv.addr) as c:
        assert broker.call(register("broker-a")).code == 0
        for _ in range(2):  # the second time, any reuse would show
            c.send_bytes(_raw_route('"order_topic"', "5"))
            assert c.recv().opaque == 5  # type: ignore[union-attr]
            # A topic named like the opaque field, a spaced opaque: still each its own answer.
            c.send_bytes(_raw_route('"\\"opaque\\":6"', "6"))
            miss = c.recv()
            assert (miss.opaque, miss.code) == (6, 17)  # type: ignore[union-attr]
            assert '"opaque":6' in miss.remark  # type: ignore[union-attr, operator]
            c.send_bytes(_raw_route('"order_topic"', " 8"))  # not the canonical form: decoded
            assert c.recv().opaque == 8  # type: ignore[union-attr]
        # A second opaque member, after or before the one a kept key was cut at: the
        # header is read the plain way, whose last member counts.
        plain = _raw_route('"order_topic"', "5")
        header = plain[8:]
        for twice in (header[:-1] + b',"opaque":77}', b'{"opaque":77,' + header[1:]):
            for _ in range(2):
                c.send_bytes((4 + len(twice)).to_bytes(4, "big") + len(twice).to_bytes(4, "big") + twice)
                answer = c.recv()
                assert answer is not None and answer.code == 0
                assert answer.opaque == (77 if twice.endswith(b"77}") else 5)
        # A one-way twin of a reused request gets no answer; the next request does.
        c.send_bytes(_raw_route('"order_topic"', "11", flag=2) + _raw_route('"order_topic"', "12"))
        assert c.recv().opaque == 12  # type: ignore[union-attr]


def test_a_read_of_kept_answers_then_other_requests_and_half_a_frame_is_answered_once_in_order(
        namesrv: NameServerProcess) -> None:
    """A read's route queries that need no decode are answered straight from the server's
    read buffer; what follows them (a request decoded the plain way, half a frame whose
    rest comes in the next read) is buffered and answered after them, each once."""
    with RawClient(namesrv.addr) as broker, RawClient(namesrv.addr) as c:
        assert broker.call(register("broker-a")).code == 0
        c.send_bytes(_raw_route('"order_topic"', "1"))
        assert c.recv().opaque == 1  # type: ignore[union-attr]  # kept from now on
        split_frame = _raw_route('"order_topic"', "5")
        for round_ in range(3):
            kv = encode(request(R.GET_KV_CONFIG, {"namespace": "ns", "key": "k"}, opaque=3))
            c.send_bytes(_raw_route('"order_topic"', "2") + kv + _raw_route('"order_topic"', "4")
                         + split_frame[:round_ * 20 + 10])
            got = [c.recv(timeout=10) for _ in range(3)]
            assert [(a.opaque, a.code) for a in got if a is not None] == [(2, 0), (3, 22), (4, 0)]
            c.send_bytes(split_frame[round_ * 20 + 10:] + _raw_route('"order_topic"', "6"))
            got = [c.recv(timeout=10) for _ in range(2)]
            assert [(a.opaque, a.code) for a in got if a is not None] == [(5, 0), (6, 0)]
            assert got[0] is not None and got[0].body == got[1].body  # type: ignore[union-attr]
        c.sock.settimeout(0.3)
        try:
            extra = c.sock.recv(1)
        except TimeoutError:
            extra = b""
        assert extra == b""  # nothing answered twice
