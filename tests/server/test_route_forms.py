"""Route queries answered from their form and topic, without a decode (issue #19).

A client's route queries differ in their opaque and topic only. Once one request of a
form has been decoded and answered, the name server answers the next topic asked in
that form from the form (what the decode said) and the topic cut out of the bytes. These
tests hold those answers to the plain path's, byte for byte, on a real server over real
sockets: for headers written every way a client (or an attacker) may write the topic
field, and for the places that only look like it.
"""

from __future__ import annotations

import itertools
from typing import Callable, Iterator

import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

from mqnamesrv.protocol.bodies import DataVersion, RegisterBrokerBody, TopicConfig
from mqnamesrv.protocol.codes import RequestCode as R
from mqnamesrv.protocol.command import request
from mqnamesrv.protocol.errors import ProtocolError
from mqnamesrv.protocol.frame import decode_payload, encode
from mqnamesrv.protocol.register import register_request
from mqnamesrv.server.route_answers import FORM_LIMIT, RouteAnswers, cut_opaque, cut_topic
from tests.nsprocess import NameServerProcess, RawClient
from tests.server.brokers import register
from tests.server.test_route_answers_property import InProcessServer, inproc, raw_answers  # noqa: F401 (a fixture)

#: registered with different queues each, so a wrong topic's answer differs; "null" is
#: what the server looks up for a query with no topic field at all
QUEUES = {"ta": 1, "tb": 2, "null": 3, "ta_x": 5, "t|%-_9": 6}
ASKED = [*QUEUES, "nope"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessServer]:
    ns = InProcessServer(tmp_path_factory.mktemp("forms"))
    body = RegisterBrokerBody(DataVersion(1, 1_700_000_000_000),
                              {t: TopicConfig(t, n, n, perm=6) for t, n in QUEUES.items()}, []).encode()
    with RawClient(ns.addr) as broker:
        assert broker.call(register_request("C1", "b1", "127.0.0.1:10911", 0, body)).code == 0
        yield ns
    ns.stop()


def header(ext: str, *, top: str = "", version: int = 409, opaque: int = 1, spaced: bool = False) -> bytes:
    """A route query's JSON header, ``ext`` being extFields' members as written."""
    sep = ", " if spaced else ","
    fields = ['"code":105', f'"extFields":{{{ext}}}', '"flag":0', '"language":"JAVA"', f'"opaque":{opaque}',
              '"serializeTypeCurrentRPC":"JSON"', f'"version":{version}']
    if top:
        fields.insert(1, top)
    return ("{" + sep.join(fields) + "}").encode()


def frame(head: bytes) -> bytes:
    return (len(head) + 4).to_bytes(4, "big") + len(head).to_bytes(4, "big") + head


def ask(ns: InProcessServer, heads: list[bytes]) -> None:
    """Send ``heads`` pipelined on one connection; each answer must be the plain path's."""
    frames = [frame(h) for h in heads]
    with RawClient(ns.addr) as client:
        client.send_bytes(b"".join(frames))
        for sent, answer in zip(frames, raw_answers(client, len(frames))):
            assert answer == ns.plain_answer(sent[4:]), f"{sent[8:]!r}"


def forms_used(ns: InProcessServer) -> int:
    return ns.server.processor.route_form_answers


def forget(ns: InProcessServer) -> None:
    """Nothing kept, no form known: each test starts from a server that decodes."""
    def clear() -> None:
        answers = ns.server.processor.route_answers
        answers.clear()
        answers._forms.clear()
    ns.on_loop(clear)


def test_a_new_topic_in_a_known_form_is_answered_without_a_decode(server: InProcessServer) -> None:
    forget(server)
    before = forms_used(server)
    heads = [header(f'"topic":"{t}"', opaque=i) for i, t in enumerate(["ta", "tb", "null", "t|%-_9", "nope", "tb"])]
    ask(server, heads)
    # ta taught the form; tb, null and t|%-_9 came from it; "nope" has no route (decoded
    # for its error answer), and tb again was a kept answer
    assert forms_used(server) - before == 3


def test_each_dialect_is_a_form_of_its_own(server: InProcessServer) -> None:
    forget(server)
    heads = []
    for opaque, (topic, (version, extra)) in enumerate(itertools.product(
            ASKED, [(409, ""), (317, ""), (317, '"acceptStandardJsonOnly":"true",'),
                    (409, '"__ZONE_MODE":"true","__ZONE_NAME":"z1",')])):
        heads.append(header(f'{extra}"topic":"{topic}"', version=version, opaque=opaque))
    ask(server, heads)


#: (what is learnt from, what follows in the same form): the place cut out is not the
#: topic the server reads, so the second must get the first's topic's answer, not its own
LOOKALIKES = [
    # the topic field as a top-level member; extFields has none ("null" is looked up)
    ('"a":"b"', '"topic":"null"'),
    # the same key escaped: the cut refuses any header with an escape
    ('"\\u0074opic":"ta","x":"y"', ""),
    # a topic written with an escape
    ('"topic":"t\\u0061"', ""),
    # twice: JSON's last one counts
    ('"topic":"ta","topic":"ta"', ""),
    # inside another ext field's value (which the decoder turns into a string)
    ('"n":{"topic":"ta"},"topic":"ta"', ""),
    ('"n":{"topic":"ta"}', ""),
]


@pytest.mark.parametrize("ext,top", LOOKALIKES)
def test_a_place_that_only_looks_like_the_topic_teaches_no_form(server: InProcessServer, ext: str, top: str) -> None:
    forget(server)
    before = forms_used(server)
    first = header(ext, top=top, opaque=1)
    decode_payload(frame(first)[4:])  # the plain path reads it
    # the same form with another topic where the cut would look
    others = [first.replace(b'"ta"', b'"tb"').replace(b'"null"', b'"tb"'), first.replace(b'opaque":1', b'opaque":2')]
    ask(server, [first, *others])
    assert forms_used(server) == before


def test_the_cut_refuses_what_it_cannot_read_for_sure() -> None:
    def cut(ext: str, **kw: object) -> tuple[bytes, str] | None:
        c = cut_opaque(frame(header(ext, **kw))[4:])  # type: ignore[arg-type]
        assert c is not None
        return cut_topic(c[0])
    formed = cut('"topic":"t|%-_9"')
    assert formed is not None and formed[1] == "t|%-_9" and b"t|%" not in formed[0]
    assert cut('"topic":"ta"', version=317) != cut('"topic":"ta"')  # the rest is the form
    assert cut('"topic":"ta"')[0] == cut('"topic":"tb"')[0]  # type: ignore[index]
    for ext in ('"topic":"t\\u0061"', '"topic" : "ta"', '"topic":"t a"', '"topic":"t\u00e9"', '"topic":""',
                '"topic":"ta","x":"topic"', '"x":"it\'s","topic":"ta"', '"x":"\\"","topic":"ta"'):
        assert cut(ext) is None, ext


# --------------------------------------------------------------- property ----

_TOPIC_WAYS = {
    "plain": lambda t: f'"topic":"{t}"',
    "escaped value": lambda t: '"topic":"' + "".join(f"\\u{ord(c):04x}" for c in t) + '"',
    "escaped key": lambda t: f'"\\u0074opic":"{t}"',
    "twice": lambda t: f'"topic":"tb","topic":"{t}"',
    "spaced": lambda t: f'"topic" : "{t}"',
    "absent": lambda t: '"x":"y"',
    "nested decoy": lambda t: f'"n":{{"topic":"{t}"}},"topic":"{t}"',
}


@st.composite
def route_queries(draw: st.DrawFn) -> list[bytes]:
    """Route queries in a few forms (each a way of writing the topic field, a dialect,
    decoys, member order, spacing), several topics asked in each."""
    forms = []
    for _ in range(draw(st.integers(1, 3))):
        way = draw(st.sampled_from(["plain"] * 4 + sorted(_TOPIC_WAYS)))
        extra = draw(st.sampled_from(["", '"acceptStandardJsonOnly":"true"', '"acceptStandardJsonOnly":"false"',
                                      '"__ZONE_MODE":"true","__ZONE_NAME":"z1"', '"remark":"topic"']))
        top = draw(st.sampled_from(["", "", '"topic":"%s"' % draw(st.sampled_from(ASKED)), '"remark":"r"']))
        forms.append((way, extra, draw(st.booleans()), top, draw(st.sampled_from([317, 409])), draw(st.booleans())))
    heads = []
    for way, extra, reverse, top, version, spaced in draw(st.lists(st.sampled_from(forms), min_size=1, max_size=12)):
        members = [_TOPIC_WAYS[way](draw(st.sampled_from(ASKED)))] + ([extra] if extra else [])
        if reverse:
            members.reverse()
        heads.append(header(",".join(members), top=top, version=version, opaque=draw(st.integers(0, 2**31 - 1)),
                            spaced=spaced))
    return heads


@settings(max_examples=100, deadline=None, database=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(heads=route_queries())
def test_every_answer_is_the_plain_answer_however_the_topic_is_written(server: InProcessServer,
                                                                        heads: list[bytes]) -> None:
    """Forms learnt in earlier examples stay: later ones are answered from them too."""
    for head in heads:
        try:
            decode_payload(frame(head)[4:])
        except ProtocolError:
            assume(False)
    ask(server, heads)


def test_the_property_above_reaches_the_form_path(server: InProcessServer) -> None:
    """The examples above do answer from forms (else they would check nothing new)."""
    forget(server)
    before = forms_used(server)
    test_every_answer_is_the_plain_answer_however_the_topic_is_written(server)
    assert forms_used(server) - before >= 10


def test_forms_are_bounded() -> None:
    answers = RouteAnswers(limit=10)
    for i in range(FORM_LIMIT + 5):
        answers.learn(b"form-%d" % i, (True, None))
    assert len(answers._forms) <= FORM_LIMIT


# ------------------------------------------------------------ runs of frames ----

def test_a_write_inside_a_burst_is_seen_by_the_queries_after_it(inproc: InProcessServer) -> None:
    """Route queries are answered a run at a time, cut in the read buffer; a write in the
    middle of one burst ends the run, and the queries after it see the write."""
    body = RegisterBrokerBody(DataVersion(1, 1_700_000_000_000),
                              {t: TopicConfig(t, 4, 4, perm=6) for t in ("ta", "tb", "tc")}, []).encode()
    with RawClient(inproc.addr) as broker, RawClient(inproc.addr) as client:
        assert broker.call(register_request("C1", "b1", "127.0.0.1:10911", 0, body)).code == 0
        assert client.call(request(R.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n")).code == 0
        ask(inproc, [header('"topic":"ta"'), header('"topic":"tb"')])  # tb from ta's form
        order = request(R.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "tb", "value": "b1:4"}, opaque=3)
        burst = [frame(header(f'"topic":"{t}"', opaque=o)) for o, t in ((1, "ta"), (2, "tb"))] + [encode(order)] + \
                [frame(header(f'"topic":"{t}"', opaque=o)) for o, t in ((4, "tb"), (5, "ta"), (6, "tc"))]
        client.send_bytes(b"".join(burst))
        answers = raw_answers(client, len(burst))
        bodies = [decode_payload(a[4:]) for a in answers]
        assert [b.opaque for b in bodies] == [1, 2, 3, 4, 5, 6] and all(b.code == 0 for b in bodies)
        assert b"orderTopicConf" not in bodies[1].body and b'"orderTopicConf":"b1:4"' in bodies[3].body
        for sent, answer in list(zip(burst, answers))[3:]:  # the state they were answered in is the last
            assert answer == inproc.plain_answer(sent[4:])


def test_a_header_over_the_limit_is_refused_after_the_answers_before_it(
        start_namesrv: Callable[..., NameServerProcess]) -> None:
    """A run of answerable frames stops at one out of bounds, which the decoder refuses
    as before, even where its form and topic are known."""
    ns = start_namesrv({"headerMaxLength": "1024"})
    long = "L" * 1100
    with RawClient(ns.addr) as broker, RawClient(ns.addr) as client:
        assert broker.call(register(topics={"ta": 4, long: 4})).code == 0
        client.send_bytes(frame(header('"topic":"ta"', opaque=1)))
        assert client.recv(timeout=5).code == 0  # type: ignore[union-attr]  # the form is learnt
        client.send_bytes(b"".join(frame(header(f'"topic":"{t}"', opaque=o)) for o, t in ((2, "ta"), (3, long))))
        assert client.recv(timeout=5).opaque == 2  # type: ignore[union-attr]
        assert client.recv(timeout=5) is None
    assert "exceeds the limit of 1024 bytes" in ns.stderr()


# ------------------------------------------------------------- the last form ----

def _key(head: bytes) -> bytes | None:
    cut = cut_opaque(frame(head)[4:])
    return None if cut is None else cut[0]


def test_the_last_form_cuts_only_what_cut_topic_cuts_the_same_way() -> None:
    """``in_last_form`` (and ``run``, which spells it out) takes two compares for
    ``cut_topic``'s scans; it must find a topic only where ``cut_topic`` finds the same
    one in the same form."""
    answers = RouteAnswers(limit=10)
    taught = _key(header('"topic":"ta"'))
    assert taught is not None
    formed = cut_topic(taught)
    assert formed is not None
    answers.use_form(formed[0], (True, None))
    for value, found in [("tb", "tb"), ("t|%-_9", "t|%-_9"), ("topic", None), ("", None), ('t\\"b', None),
                         ("t\\u0061", None), ("t'b", None), ("t b", None), ("t\u00e9", None),
                         ('ta","topic":"tb', None), ('ta","x":"y', None)]:
        key = _key(header(f'"topic":"{value}"'))
        assert key is not None
        got = answers.in_last_form(key)
        assert (None if got is None else got[0]) == found, value
        if got is not None:
            assert got[1] == (True, None) and cut_topic(key) == (formed[0], found)
    # another form (another dialect) is not the last one
    other = _key(header('"topic":"tb"', version=317))
    assert other is not None and answers.in_last_form(other) is None and cut_topic(other) is not None


@settings(max_examples=200, deadline=None, database=None, derandomize=True)
@given(heads=route_queries(), pick=st.integers(0, 11),
       values=st.lists(st.text(alphabet='ab|%-_"\\\' éu0topic', max_size=8), max_size=6))
def test_the_last_form_agrees_with_cut_topic(heads: list[bytes], pick: int, values: list[str]) -> None:
    keys = [k for k in map(_key, heads) if k is not None]
    taught = [k for k in keys if cut_topic(k) is not None]
    assume(taught)
    form = cut_topic(taught[pick % len(taught)])[0]  # type: ignore[index]
    answers = RouteAnswers(limit=10)
    answers.use_form(form, "learnt")
    at = form.index(b'"topic":"') + len(b'"topic":"')
    # the same form around any characters, and every key of the examples
    for key in [form[:at] + v.encode() + form[at:] for v in values] + keys:
        got = answers.in_last_form(key)
        if got is not None:
            assert got[1] == "learnt" and cut_topic(key) == (form, got[0])


def test_the_run_answers_a_topic_only_by_the_name_the_decode_reads(inproc: InProcessServer) -> None:
    """A topic whose name is written with a JSON escape reads as another name: the run's
    cut must not look up the bytes as written, even in the last form used. A broker
    registers both names with different queues, so a wrong lookup shows in the answer."""
    literal = "a\\u0062"  # six characters, backslash included; JSON reads it as "ab"
    body = RegisterBrokerBody(DataVersion(1, 1_700_000_000_000),
                              {t: TopicConfig(t, n, n, perm=6) for t, n in (("ta", 1), ("ab", 2), (literal, 3))},
                              []).encode()
    heads = [header('"topic":"ta"', opaque=1), header('"topic":"tb"', opaque=2), header(f'"topic":"{literal}"', opaque=3),
             header('"topic":"topic"', opaque=4), header('"topic":"ab"', opaque=5)]
    with RawClient(inproc.addr) as broker:  # held: a broker whose connection closes is removed
        assert broker.call(register_request("C1", "b1", "127.0.0.1:10911", 0, body)).code == 0
        before = forms_used(inproc)
        ask(inproc, heads)  # each answer the plain one: the escaped name reads as "ab"
        assert forms_used(inproc) - before == 1  # "ab", in ta's form, by the run's own cut
