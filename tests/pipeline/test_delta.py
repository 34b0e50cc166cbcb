"""Capture format v2 (delta.py): a history written as deltas and keyframes decodes to
exactly the v1 captures it was made from, and a lost file costs at most its chain."""

from __future__ import annotations

from pathlib import Path

import msgpack
import pytest

from mqadmin.pipeline.capture import capture_files, write_capture
from mqadmin.pipeline.schema import SUFFIX_V2
from mqadmin.pipeline.delta import DeltaDecoder, DeltaEncoder, read_header, split_capture
from mqadmin.pipeline.schema import CaptureFormatError, capture_of, decode_capture
from mqadmin.pipeline.synth import SynthPlan, synthesize
from tests.pipeline.conftest import T0, hand_rounds

PLAN = dict(servers=3, brokers=8, topics=300, hours=2, every=60, seed=5, events_per_day=60)


@pytest.fixture(scope="module")
def histories(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("delta")
    synthesize(SynthPlan(base / "v1", version=1, **PLAN))  # type: ignore[arg-type]
    synthesize(SynthPlan(base / "v2", version=2, keyframe_every=7, **PLAN))  # type: ignore[arg-type]
    return {"v1": base / "v1", "v2": base / "v2"}


def _obj(data: bytes) -> object:
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


def test_v2_decodes_to_the_v1_captures(histories: dict[str, Path]) -> None:
    v1, v2 = list(capture_files(histories["v1"])), list(capture_files(histories["v2"]))
    assert len(v1) == len(v2) == 3 * 120
    assert all(p.name.endswith(SUFFIX_V2) for p in v2)
    decoder = DeltaDecoder()
    for a, b in zip(v1, v2):
        assert _obj(decoder.decode(b.read_bytes())) == _obj(a.read_bytes()), b
    size1 = sum(p.stat().st_size for p in v1)
    size2 = sum(p.stat().st_size for p in v2)
    assert size2 * 20 < size1  # deltas: a history of a few changes is a small fraction of v1


def test_keyframes_every_k_rounds_per_server(histories: dict[str, Path]) -> None:
    headers = [read_header(p.read_bytes()) for p in capture_files(histories["v2"])]
    for h in headers:
        assert h["keyframe"] == h["round"] - h["round"] % 7
        assert h["prev"] == (None if h["round"] % 7 == 0 else h["round"] - 1)


def test_a_lost_delta_costs_the_rest_of_its_chain_only(histories: dict[str, Path]) -> None:
    files = [p for p in capture_files(histories["v2"]) if p.name.startswith("10.0.0.2")]
    decoder = DeltaDecoder()
    outcomes = []
    for p in files:
        if p.parent.name == "000009":
            continue  # lost
        try:
            decoder.decode(p.read_bytes())
            outcomes.append((int(p.parent.name), "ok"))
        except CaptureFormatError as exc:
            outcomes.append((int(p.parent.name), str(exc)))
    bad = [r for r, what in outcomes if what != "ok"]
    assert bad == [10, 11, 12, 13]  # up to the keyframe of round 14
    assert dict(outcomes)[10] == ("delta of round 10 builds on round 9 of 10.0.0.2:9876, which is missing or "
                                  "unreadable; this server's captures are readable again from its next keyframe")


def test_damaged_delta_is_an_error_not_a_crash(histories: dict[str, Path]) -> None:
    files = [p.read_bytes() for p in capture_files(histories["v2"]) if p.name.startswith("10.0.0.1")]
    decoder = DeltaDecoder()
    decoder.decode(files[0])
    with pytest.raises(CaptureFormatError, match="unreadable capture"):
        decoder.decode(files[1][: len(files[1]) // 2])
    with pytest.raises(CaptureFormatError, match="builds on round 1"):
        decoder.decode(files[2])  # the chain is gone with the damaged file
    with pytest.raises(CaptureFormatError, match="version 1"):
        read_header(msgpack.packb({"schema": "mqadmin-route-capture", "version": 1, "captured_ms": 1, "server": "a",
                                   "round": 0, "ok": True}))


def test_hand_history_round_trips_through_snapshot_writer(tmp_path: Path) -> None:
    """Every kind of view change the diff knows (lost broker, perm wipe, KV namespaces
    appearing and emptying, a failed topic list, an unreachable server) survives v2."""
    encoder = DeltaEncoder(keyframe_every=4)
    for i, views in enumerate(hand_rounds()):
        for view in views:
            write_capture(tmp_path / "v1", capture_of(view, captured_ms=T0 + i, round=i))
            write_capture(tmp_path / "v2", capture_of(view, captured_ms=T0 + i, round=i), encoder)
    decoder = DeltaDecoder()
    for a, b in zip(capture_files(tmp_path / "v1"), capture_files(tmp_path / "v2"), strict=True):
        rebuilt = decoder.decode(b.read_bytes())
        assert decode_capture(rebuilt) == decode_capture(a.read_bytes())


def test_encoder_keeps_one_previous_round_per_server(histories: dict[str, Path]) -> None:
    encoder = DeltaEncoder(keyframe_every=1000)
    for p in capture_files(histories["v1"]):
        encoder.encode(p.read_bytes())
    assert sorted(encoder._chains) == ["10.0.0.1:9876", "10.0.0.2:9876", "10.0.0.3:9876"]
    chain = encoder._chains["10.0.0.1:9876"]
    assert chain.round == 119 and len(chain.topics) == len(split_capture(
        (histories["v1"] / "000119" / "10.0.0.1_9876.msgpack").read_bytes()).topics)
    with pytest.raises(ValueError, match="at least 1 round"):
        DeltaEncoder(keyframe_every=0)


def test_a_v2_history_is_sized_as_what_the_job_reads(histories: dict[str, Path]) -> None:
    """analyze tunes a small input for start-up (session.SMALL_INPUT): a v2 history of
    small deltas stands for whole captures once rebuilt."""
    from mqadmin.pipeline.launch import capture_bytes

    v1 = capture_bytes(histories["v1"])
    v2 = capture_bytes(histories["v2"])
    assert v1 is not None and v2 is not None
    assert 0.8 * v1 < v2 < 1.5 * v1
