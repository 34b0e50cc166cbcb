"""RouteAnswers without a server: bytes in, bytes out (see test_route_answers for the process)."""

from __future__ import annotations

from mqnamesrv.protocol.codes import RequestCode as R, SerializeType
from mqnamesrv.protocol.command import RemotingCommand, request
from mqnamesrv.protocol.frame import encode
from mqnamesrv.server.route_answers import Cut, RouteAnswers, cut_opaque


def _kept(answers: RouteAnswers, cmd: RemotingCommand, queues: tuple[str, ...] | None = None) -> bytes:
    """Offer the answer to ``cmd`` (a route body naming its topic, computed from a topic
    whose queues name ``queues``); return that frame."""
    topic = (cmd.ext or {}).get("topic", "")
    response = cmd.response(0, body=b'{"topic":"%s"}' % topic.encode())
    frame = encode(response)
    cut = _cut(cmd)
    if cut is not None:  # else the server decodes it and keeps nothing
        assert answers.answer(cut) is None  # a miss
        answers.remember(cut, cmd, response, frame, (topic, queues))
    return frame


def _cut(cmd: RemotingCommand) -> Cut | None:
    return cut_opaque(encode(cmd)[4:])


def _asked(answers: RouteAnswers, cmd: RemotingCommand) -> tuple[int, bytes] | None:
    """The kept answer to ``cmd``, as the server looks it up (None: decoded the plain way)."""
    cut = _cut(cmd)
    return None if cut is None else answers.answer(cut)


def test_the_same_request_with_another_opaque_gets_the_same_answer_with_its_opaque() -> None:
    answers = RouteAnswers(limit=10)
    first = request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "a"}, opaque=5)
    kept = _kept(answers, first)
    for opaque in (0, 7, 123_456_789, 2_147_483_647, -2_147_483_648):
        again = request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "a"}, opaque=opaque)
        hit = _asked(answers, again)
        expected = RemotingCommand(**{**{k: getattr(first.response(0, body=b'{"topic":"a"}'), k)
                                         for k in RemotingCommand.__dataclass_fields__}, "opaque": opaque})
        assert hit == (0, encode(expected))
    again_first = _asked(answers, first)
    assert again_first is not None and kept == again_first[1]
    other = request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "b"}, opaque=5)
    assert _asked(answers, other) is None


def test_drop_forgets_the_topics_and_the_brokers_asked_for_and_nothing_else() -> None:
    answers = RouteAnswers(limit=10)
    a, a_old = (request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "a"}, version=v) for v in (409, 317))
    b, c, gone = (request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": t}) for t in ("b", "c", "gone"))
    _kept(answers, a, ("broker-a",))
    _kept(answers, a_old, ("broker-a",))  # the same topic in another client dialect
    _kept(answers, b, ("broker-a", "broker-b"))
    _kept(answers, c, ("broker-c",))
    _kept(answers, gone)  # TOPIC_NOT_EXIST for a topic without queues
    answers.drop(["a"])
    assert [_asked(answers, cmd) is not None for cmd in (a, a_old, b, c, gone)] == [False, False, True, True, True]
    _kept(answers, a, ("broker-a",))
    answers.drop([], ["broker-b"])
    assert [_asked(answers, cmd) is not None for cmd in (a, b, c, gone)] == [True, False, True, True]
    answers.drop(["gone", "never-kept"], ["broker-x"])
    assert [_asked(answers, cmd) is not None for cmd in (a, c, gone)] == [True, True, False]
    answers.clear()
    assert len(answers) == 0 and _asked(answers, c) is None


def test_the_limit_bounds_the_entries() -> None:
    answers = RouteAnswers(limit=2)
    for topic in "abc":
        _kept(answers, request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}))
    assert len(answers) == 1  # full at the third: cleared, then the third kept


def test_only_plain_json_route_queries_are_kept() -> None:
    answers = RouteAnswers(limit=10)
    for cmd in (request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "a"}, oneway=True),
                request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "a"}, serialize_type=SerializeType.ROCKETMQ),
                request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "a"}, body=b"x"),
                request(R.GET_KV_CONFIG, {"topic": "a"})):
        _kept(answers, cmd)
    assert len(answers) == 0
    # a route query answered with an error other than TOPIC_NOT_EXIST (a bug's SYSTEM_ERROR)
    cmd = request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "a"})
    cut = _cut(cmd)
    assert cut is not None
    failed = cmd.response(1, remark="boom")
    answers.remember(cut, cmd, failed, encode(failed), ("a", None))
    assert len(answers) == 0


def test_only_a_canonical_opaque_is_cut() -> None:
    """What the plain path writes back is the decoded int: "-0" or "007" would come back as
    0 and 7, so only digits that are already their own canonical form are spliced."""
    def payload(opaque: str) -> bytes:
        header = ('{"code":105,"extFields":{"topic":"a"},"flag":0,"language":"JAVA","opaque":%s,'
                  '"serializeTypeCurrentRPC":"JSON","version":409}' % opaque).encode()
        return len(header).to_bytes(4, "big") + header
    assert [cut_opaque(payload(o)) is not None for o in ("0", "7", "-7", "2147483647", "-2147483648")] == [True] * 5
    assert [cut_opaque(payload(o)) for o in ("-0", "007", " 7", "7.0", "1e3", "2147483648", "-2147483649")] == [None] * 7


def test_a_big_drop_forgets_every_answer_at_once_and_the_old_tables_are_freed_apart() -> None:
    """A write touching DROP_ALL_AT topics or more (a broker joining or leaving, a write-perm
    rewrite), or naming a broker among as many answers, drops every answer: new tables at
    once, the old ones emptied by another thread, so no loop pays for 10^4 frees."""
    import time

    from mqnamesrv.server import route_answers

    for topics, brokers in ((route_answers.DROP_ALL_AT, ()), (1, ("broker-z",))):
        answers = RouteAnswers(limit=10 * route_answers.DROP_ALL_AT)
        asks = [request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": f"t{i}"}) for i in range(route_answers.DROP_ALL_AT)]
        for cmd in asks:
            _kept(answers, cmd, ("broker-a",))
        old = answers._answers
        answers.drop([f"t{i}" for i in range(topics)], brokers)
        assert len(answers) == 0 and all(_asked(answers, cmd) is None for cmd in asks[:3])
        _kept(answers, asks[0], ("broker-a",))  # kept again in the new table
        assert _asked(answers, asks[0]) is not None and len(answers) == 1
        deadline = time.monotonic() + 10
        while old and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not old  # the releasing thread emptied it
    # below both lines, only what was asked for goes
    answers = RouteAnswers(limit=100)
    small = [request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": t}) for t in "abc"]
    for cmd in small:
        _kept(answers, cmd, ("broker-a",))
    answers.drop(["a"], ("broker-z",))
    assert [_asked(answers, cmd) is not None for cmd in small] == [False, True, True]


def test_answers_built_in_a_run_past_the_limit_go_to_the_new_tables() -> None:
    """A run that fills the table clears it mid-read: the answers it keeps after that must
    land in the tables now in place (asked again, they are hits), not in the old ones."""
    from mqnamesrv.registry.config import NamesrvConfig
    from mqnamesrv.registry.kv import KVStore
    from mqnamesrv.registry.routes import RouteTable
    from mqnamesrv.server.dispatch import Processor
    from mqadmin.bench.load import master_request, topics_body

    processor = Processor(RouteTable(), KVStore(), NamesrvConfig())
    names = [f"t{i:02d}" for i in range(12)]
    registered = processor.handle(master_request("C", "b0", "127.0.0.1:10911", topics_body(names)), "broker")
    assert registered is not None and registered.code == 0
    processor.route_answers.limit = 5
    frames = [encode(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": t}, opaque=i)) for i, t in enumerate(names)]

    def run(data: bytes) -> list[bytes]:
        buf = bytearray(data)
        out: list[bytes] = []
        while buf:
            got, _, used, _ = processor.kept_run(buf, 1 << 20, 1 << 24, 1 << 24)
            if not used:  # decoded: answered the plain way (the first, which teaches the form)
                cut = cut_opaque(bytes(buf[4:len(frames[0])]))
                assert cut is not None
                answer = processor.route_frame(decode_reply_of(buf), cut)
                assert answer is not None
                out.append(answer)
                del buf[:len(frames[0])]
                continue
            out += got
            del buf[:used]
        return out

    first = run(b"".join(frames))
    assert len(first) == 12 and len(processor.route_answers) <= 5
    formed, misses = processor.route_answers.formed, processor.route_answers.misses
    again = run(frames[-1])  # the last one built after the clears: kept in the table in place
    assert again == [first[-1]]
    assert (processor.route_answers.formed, processor.route_answers.misses) == (formed, misses)  # a hit


def decode_reply_of(buf: bytearray) -> RemotingCommand:
    from mqnamesrv.protocol.frame import decode_payload

    length = int.from_bytes(buf[:4], "big")
    return decode_payload(bytes(buf[4:4 + length]))


def test_kept_answers_stay_out_of_the_cyclic_collectors_walks() -> None:
    """A kept answer holds its topic's broker names, not the queue map (a dict): with only
    strings, bytes and ints in it, the collector stops tracking it, and a full collection
    no longer walks 4 x 10^4 of them (~20 ms, a stall of every request)."""
    import gc

    from mqadmin.bench.load import master_request, topics_body
    from mqnamesrv.registry.config import NamesrvConfig
    from mqnamesrv.registry.kv import KVStore
    from mqnamesrv.registry.routes import RouteTable
    from mqnamesrv.server.dispatch import Processor

    processor = Processor(RouteTable(), KVStore(), NamesrvConfig())
    names = [f"t{i:02d}" for i in range(20)]
    for broker in ("b0", "b1"):
        registered = processor.handle(master_request("C", broker, f"127.0.0.1:{10911 if broker == 'b0' else 10921}",
                                                     topics_body(names)), "broker")
        assert registered is not None and registered.code == 0
    frames = b"".join(encode(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": t}, opaque=i)) for i, t in enumerate(names))
    buf = bytearray(frames)
    first = len(encode(request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": names[0]}, opaque=0)))
    cut = cut_opaque(bytes(buf[4:first]))
    assert cut is not None and processor.route_frame(decode_reply_of(buf), cut) is not None  # teaches the form
    del buf[:first]
    _, _, used, _ = processor.kept_run(buf, 1 << 20, 1 << 24, 1 << 24)  # the rest: built from the form
    assert used == len(buf) and processor.route_answers.formed == len(names) - 1
    entries = list(processor.route_answers._answers.values())
    assert len(entries) == len(names) and all(entry[6] == ("b0", "b1") for entry in entries)
    gc.collect()  # untracks the names tuples; the next one, the entries holding them
    gc.collect()
    assert not any(gc.is_tracked(entry) for entry in entries)
    # and a broker's leaving still finds them by its name
    processor.route_answers.drop([], ["b1"])
    assert len(processor.route_answers) == 0
