"""What a snapshot holds between rounds follows the live topic set, not the number of
rounds: many rounds over a real name server whose topics churn and whose routes all
change every round."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mqadmin.pipeline.capture import SnapshotPlan, capture_round, read_captures
from mqadmin.pipeline.snapshot_encoder import Retained, SnapshotEncoder
from tests.nsprocess import NameServerProcess
from tests.snapshot.fleet import Broker, delete_topics

ROUNDS = 30
LIVE = 40  # topics alive at any time
CHURN = 5  # topics deleted and as many created before each round
QUEUES = (4, 8, 16)  # every route changes every round, three shapes in turn


def test_retained_state_is_bounded_by_the_live_topics(tmp_path: Path) -> None:
    ns = NameServerProcess(tmp_path / "ns").start()
    broker = Broker("broker-0", 31200)
    plan = SnapshotPlan([ns.addr], tmp_path / "out", timeout=5.0)
    encoder = SnapshotEncoder(2, keyframe_every=1000)  # one chain: nothing is dropped by a keyframe
    held: list[Retained] = []
    live_counts: list[int] = []

    async def run() -> None:
        live = [f"t{n:04d}" for n in range(LIVE)]
        made = LIVE
        try:
            for n in range(ROUNDS):
                if n:
                    gone, live = live[:CHURN], live[CHURN:] + [f"t{made + i:04d}" for i in range(CHURN)]
                    made += CHURN
                    await delete_topics(ns.addr, gone)
                await broker.register([ns.addr], live, queues=QUEUES[n % len(QUEUES)])
                [view] = await capture_round(plan, n, encoder=encoder)
                assert view.ok and not view.failures, view.failures
                assert sorted(t for t, r in view.topics.items() if r is not None) == sorted(live)
                live_counts.append(len(view.topics))
                held.append(encoder.retained())
        finally:
            await broker.close()

    try:
        asyncio.run(run())
    finally:
        ns.stop()
    assert live_counts == [LIVE] * ROUNDS  # the name server forgets deleted topics: only live ones are asked
    for r in held:
        assert r.servers == 1 and r.topics == LIVE  # the previous round's topics, no more
        assert r.bodies <= 2 and r.packed <= 2 and r.hashes <= 2  # this round's route and the one before
        assert r.stored <= len(QUEUES)  # routes stored since the keyframe: distinct shapes, not rounds
    assert held[-1] == held[len(QUEUES) + 1]  # flat once every shape has been seen
    captures = list(read_captures(plan.out))  # and the files still read back, every route changed
    assert [len(c.view["topics"]) for c in captures] == [LIVE] * ROUNDS
    assert {c.view["topics"]["t0100"]["queueDatas"][0]["readQueueNums"] for c in captures if "t0100" in c.view["topics"]} \
        <= set(QUEUES)
