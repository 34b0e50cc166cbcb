"""A big master registration staged on a copy of the topic table (StagedTopics): readers
see nothing of it until it is published, writes made meanwhile are kept, and the result
equals applying those writes first and the registration after them, in one piece."""

from __future__ import annotations

from array import array
from typing import Callable

import pytest

from mqnamesrv.protocol.bodies import DataVersion
from mqnamesrv.protocol.bodies import RegisterBrokerBody, TopicConfig
from mqnamesrv.protocol.codes import PERM_READ, PERM_WRITE
from mqnamesrv.protocol.register import register_body
from mqnamesrv.protocol.table_pieces import table_changes
from mqnamesrv.registry.routes import RouteTable, StagedTopics, TopicsDiff
from tests.registry.builders import CLUSTER, MASTER_A, MASTER_B, dv, ha_of

MASTER_C = "10.0.0.5:10911"
SHAPE = (8, 8, PERM_READ | PERM_WRITE, 0)


def _topics(prefix: str, n: int, shape: tuple[int, int, int, int] = SHAPE) -> dict[str, tuple[int, int, int, int]]:
    return {f"{prefix}_{i:05d}": shape for i in range(n)}


def _register(table: RouteTable, name: str, addr: str, topics: dict, counter: int = 1,
              staged: StagedTopics | None = None) -> None:
    table.register_broker(CLUSTER, name, addr, 0, ha_of(addr), dv(counter), topics, (), staged=staged)


def _state(table: RouteTable) -> dict:
    state = table.export_state()
    del state["live"]
    return state


def _fleet() -> RouteTable:
    table = RouteTable(clock=lambda: 1_000)
    _register(table, "broker-a", MASTER_A, _topics("shared", 3000))
    return table


def _staged_vs_sequential(meanwhile: Callable[[RouteTable], None], topics: dict) -> tuple[RouteTable, RouteTable]:
    """The registration of broker-b staged around ``meanwhile`` on one table, and applied
    after ``meanwhile`` in one piece on another."""
    staged_table, plain = _fleet(), _fleet()
    staging = staged_table.stage_master_topics("broker-b", MASTER_B, 0, dv(1), TopicsDiff.of(topics, None))
    assert staging is not None
    before = _state(staged_table)
    assert not staging.step(1000)  # one slice: nothing of it is visible yet
    assert _state(staged_table) == before and staged_table.queues_of("b_00000") is None
    meanwhile(staged_table)
    while not staging.step(1000):
        pass
    assert staged_table.queues_of("b_00000") is None  # applied to the copy only
    with staging:
        _register(staged_table, "broker-b", MASTER_B, topics, staged=staging)
    assert staging.published and not staged_table.topic_queue_table.journals()
    meanwhile(plain)
    _register(plain, "broker-b", MASTER_B, topics)
    return staged_table, plain


def test_a_staged_registration_is_invisible_until_published_then_whole() -> None:
    topics = {**_topics("b", 5000), **_topics("shared", 3000, (4, 4, PERM_READ | PERM_WRITE, 0))}
    staged, plain = _staged_vs_sequential(lambda t: None, topics)
    assert _state(staged) == _state(plain)
    assert len(staged.topic_queue_table) == 8000
    assert staged.queues_of("shared_00001")["broker-b"].read_queue_nums == 4  # type: ignore[index]


def test_writes_made_while_staging_are_kept_and_the_registration_comes_after_them() -> None:
    def meanwhile(table: RouteTable) -> None:
        table.wipe_write_perm("broker-a")                    # every shared topic rewritten
        table.delete_topic("b_00002", None)                  # not there yet: nothing happens
        table.delete_topic("shared_00007", None)             # a topic the registration also lists
        _register(table, "broker-c", MASTER_C, {**_topics("c", 50), "b_00003": (1, 1, PERM_READ, 0)})

    staged, plain = _staged_vs_sequential(meanwhile, {**_topics("b", 5000), **_topics("shared", 3000)})
    assert _state(staged) == _state(plain)
    assert set(staged.queues_of("b_00003") or {}) == {"broker-c", "broker-b"}
    shared_8 = staged.queues_of("shared_00008")
    assert shared_8 is not None and shared_8["broker-a"].perm == PERM_READ
    assert set(staged.queues_of("shared_00007") or {}) == {"broker-b"}


@pytest.mark.parametrize("watched", [False, True], ids=["alone", "under a change watcher"])
def test_two_stagings_at_once_equal_one_after_the_other(watched: bool) -> None:
    """Under a route-change watcher too: every journal learns a publish's topics, and a
    staging replays each topic's latest value from the table it replaces."""
    b, c = _topics("b", 4000), {**_topics("c", 4000), **_topics("b", 100, (2, 2, PERM_READ, 0))}
    table, plain = _fleet(), _fleet()
    changes = table.watch_changes() if watched else None
    first = table.stage_master_topics("broker-b", MASTER_B, 0, dv(1), TopicsDiff.of(b, None))
    second = table.stage_master_topics("broker-c", MASTER_C, 0, dv(1), TopicsDiff.of(c, None))
    assert first is not None and second is not None
    first.step(1000), second.step(1000)
    with first, second:
        _register(table, "broker-b", MASTER_B, b, staged=first)
        assert table.queues_of("c_00000") is None and len(table.topic_queue_table) == 7000
        if changes is not None:
            assert changes.take()[0] == set(b)
        table.delete_topic("shared_00001", None)  # a write while the second stages
        _register(table, "broker-c", MASTER_C, c, staged=second)
    assert first.published and second.published and len(table.topic_queue_table.journals()) == watched
    if changes is not None:
        later = changes.take()[0]  # (with its writes meanwhile: broker-b's, replayed on its copy)
        assert later is not None and later >= set(c) | {"shared_00001"}
    _register(plain, "broker-b", MASTER_B, b)
    plain.delete_topic("shared_00001", None)
    _register(plain, "broker-c", MASTER_C, c)
    assert _state(table) == _state(plain)


def test_a_staging_outlived_by_a_wholesale_replacement_is_applied_again_in_one_piece() -> None:
    table = _fleet()
    topics = _topics("b", 3000)
    staging = table.stage_master_topics("broker-b", MASTER_B, 0, dv(1), TopicsDiff.of(topics, None))
    assert staging is not None
    table.import_state(table.export_state())  # a warm restart's tables, say
    with staging:
        _register(table, "broker-b", MASTER_B, topics, staged=staging)
    assert len(table.topic_queue_table) == 6000 and not staging.published
    assert not table.topic_queue_table.journals()  # nothing left recording


def test_a_staging_held_in_with_stops_recording_however_it_ends() -> None:
    table = _fleet()
    staging = table.stage_master_topics("broker-b", MASTER_B, 0, dv(1), TopicsDiff.of(_topics("b", 3000), None))
    assert staging is not None
    try:
        with staging:
            staging.step(1000)
            assert table.topic_queue_table.journals()  # recording the live table's writes for it
            raise KeyboardInterrupt  # the connection went, say: never published
    except KeyboardInterrupt:
        pass
    assert not staging.published and not table.topic_queue_table.journals()


def test_nothing_is_staged_for_a_registration_that_applies_no_topics() -> None:
    table = _fleet()
    topics = _topics("shared", 3000)
    same = table.stage_master_topics("broker-a", MASTER_A, 0, dv(1), TopicsDiff.of(topics, None))
    assert same is None  # same DataVersion: 4.9.8 ignores the body
    stale = table.stage_master_topics("broker-a", MASTER_A, 0, DataVersion(9, 9), TopicsDiff.of(topics, None))
    assert stale is None  # diffed against no application while one is on record: redo in one piece


def _pieces_diff(topics: dict) -> TopicsDiff:
    """A first registration's diff as table_changes gives it: one unsigned hash a piece,
    in body order (here made from the topic and its shape)."""
    return TopicsDiff(None, array("Q", (hash(item) % 2**64 for item in topics.items())), topics)


def _staged(table: RouteTable, name: str, addr: str, topics: dict) -> StagedTopics:
    staging = table.stage_master_topics(name, addr, 0, dv(1), _pieces_diff(topics))
    assert staging is not None
    with staging:
        while not staging.step(1000):
            pass
        _register(table, name, addr, topics, staged=staging)
    assert staging.published
    return staging


def test_a_broker_with_anothers_pieces_finds_its_topics_by_the_entries_noted_then() -> None:
    """The second broker of a cluster sends the first one's pieces: its topics are found at
    the entries the first application noted (no lookup), also after writes meanwhile
    (a topic deleted, one deleted and created again), and the table is the one applying
    in one piece gives. After a compaction, the entries are not used."""
    topics = _topics("c0", 3000)
    staged_table, plain = RouteTable(clock=lambda: 1_000), RouteTable(clock=lambda: 1_000)
    first = _staged(staged_table, "broker-a", MASTER_A, topics)
    assert first.noted is not None and len(first.noted) == 3000
    _register(plain, "broker-a", MASTER_A, topics)
    for table in (staged_table, plain):
        table.delete_topic("c0_00007", None)
        table.delete_topic("c0_00009", None)
        _register(table, "broker-c", MASTER_C, {"c0_00009": (1, 1, PERM_READ, 0)})
    second = _staged(staged_table, "broker-b", MASTER_B, dict(topics))
    assert second.noted is None  # it used the first one's entries
    _register(plain, "broker-b", MASTER_B, topics)
    assert _state(staged_table) == _state(plain)
    for table in (staged_table, plain):  # most topics gone: the table compacts
        for i in range(10, 3000):
            table.delete_topic(f"c0_{i:05d}", None)
    third = _staged(staged_table, "broker-d", "10.0.0.9:10911", dict(topics))
    assert third.noted is not None  # looked up again, and noted for the next
    _register(plain, "broker-d", "10.0.0.9:10911", topics)
    assert _state(staged_table) == _state(plain)


def _read(table: RouteTable, topics: dict, counter: int = 1) -> TopicsDiff:
    """A first registration's diff as the worker makes it from a real body, asking the
    table's twins."""
    body = register_body(RegisterBrokerBody(dv(counter), {
        t: TopicConfig(t, r, w, perm, topic_sys_flag=flag) for t, (r, w, perm, flag) in topics.items()}, ()))
    read = table_changes(body, 409, array("q"), table.twins)
    assert read is not None and read.table_key is not None
    return TopicsDiff(None, read.hashes, read.changed, read.table_key)


def _stage_and_publish(table: RouteTable, name: str, addr: str, diff: TopicsDiff) -> StagedTopics:
    staging = table.stage_master_topics(name, addr, 0, dv(1), diff)
    assert staging is not None
    with staging:
        while not staging.step(1000):
            pass
        _register(table, name, addr, dict(diff.changed), staged=staging)
    assert staging.published
    return staging


def test_a_broker_sending_a_table_read_before_gets_its_twin_and_the_same_table() -> None:
    """The first broker's read is kept as a twin of its table bytes once published; a
    broker joining with the same table is answered from it (the same shared hashes, no
    read) and the registry ends as with plain registrations. The twin goes once no
    broker's application holds its hashes."""
    topics = {**_topics("c0", 2000), **_topics("c0x", 1500, (4, 4, PERM_READ, 0))}
    table, plain = RouteTable(clock=lambda: 1_000), RouteTable(clock=lambda: 1_000)
    first = _read(table, topics)
    assert not table.twins
    _stage_and_publish(table, "broker-a", MASTER_A, first)
    assert first.table_key is not None
    twin = table.twins[first.table_key]
    assert twin.hashes() is table.applied_hashes("broker-a", MASTER_A) and len(twin.runs) == 2
    joining = _read(table, topics, counter=5)
    assert joining.hashes is twin.hashes() and list(joining.changed.items()) == list(first.changed.items())
    _stage_and_publish(table, "broker-b", MASTER_B, joining)
    assert list(table.twins) == [first.table_key]
    for name, addr in (("broker-a", MASTER_A), ("broker-b", MASTER_B)):
        _register(plain, name, addr, topics)
    assert _state(table) == _state(plain)
    # Both brokers move on to other tables: the hashes go, and the twin with them at the
    # next twin noted.
    moved = {**topics, "c0_00003": (2, 2, PERM_READ | PERM_WRITE, 0)}
    for name, addr in (("broker-a", MASTER_A), ("broker-b", MASTER_B)):
        _register(table, name, addr, moved, counter=7)
    del first, joining  # the test's own hold on the hashes
    assert twin.hashes() is None
    other = _read(table, _topics("c1", 1200))
    _stage_and_publish(table, "broker-c", MASTER_C, other)
    assert list(table.twins) == [other.table_key]
