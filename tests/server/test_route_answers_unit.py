"""RouteAnswers without a server: bytes in, bytes out (see test_route_answers for the process)."""

from __future__ import annotations

from mqnamesrv.protocol.codes import RequestCode as R, SerializeType
from mqnamesrv.protocol.command import RemotingCommand, request
from mqnamesrv.protocol.frame import encode
from mqnamesrv.server.route_answers import Cut, RouteAnswers, cut_opaque


def _kept(answers: RouteAnswers, cmd: RemotingCommand, epoch: object = 1) -> bytes:
    """Offer the answer to ``cmd`` (a route body naming its topic); return that frame."""
    response = cmd.response(0, body=b'{"topic":"%s"}' % (cmd.ext or {}).get("topic", "").encode())
    frame = encode(response)
    cut = _cut(cmd)
    if cut is not None:  # else the server decodes it and keeps nothing
        answers.answer(cut, epoch)  # a miss, which also records the epoch
        answers.remember(cut, cmd, response, frame, epoch)
    return frame


def _cut(cmd: RemotingCommand) -> Cut | None:
    return cut_opaque(encode(cmd)[4:])


def _asked(answers: RouteAnswers, cmd: RemotingCommand, epoch: object = 1) -> tuple[int, bytes] | None:
    """The kept answer to ``cmd``, as the server looks it up (None: decoded the plain way)."""
    cut = _cut(cmd)
    return None if cut is None else answers.answer(cut, epoch)


def test_the_same_request_with_another_opaque_gets_the_same_answer_with_its_opaque() -> None:
    answers = RouteAnswers(limit=10)
    first = request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "a"}, opaque=5)
    kept = _kept(answers, first)
    for opaque in (0, 7, 123_456_789, 2_147_483_647, -2_147_483_648):
        again = request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "a"}, opaque=opaque)
        hit = _asked(answers, again, 1)
        expected = RemotingCommand(**{**{k: getattr(first.response(0, body=b'{"topic":"a"}'), k)
                                         for k in RemotingCommand.__dataclass_fields__}, "opaque": opaque})
        assert hit == (0, encode(expected))
    again_first = _asked(answers, first, 1)
    assert again_first is not None and kept == again_first[1]
    other = request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "b"}, opaque=5)
    assert _asked(answers, other, 1) is None


def test_a_new_epoch_drops_every_answer() -> None:
    answers = RouteAnswers(limit=10)
    cmd = request(R.GET_ROUTEINFO_BY_TOPIC, {"topic": "a"}, opaque=5)
    _kept(answers, cmd, epoch=(1, 0, 0))
    assert _asked(answers, cmd, (1, 0, 0)) is not None
    assert _asked(answers, cmd, (2, 0, 0)) is None
    assert len(answers) == 0 and _asked(answers, cmd, (1, 0, 0)) is None


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
