"""The StatusStore contract, run against the memory and the Kafka store, plus the status topic's wire format and
the Kafka store's own behaviour."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from headwater.harness.kafka_worker import RawRecords
from headwater.runtime.storage import (
    KafkaStatusStore,
    MemoryStatusStore,
    Status,
    StatusStore,
    StatusView,
    TopicStatus,
)

from .conftest import KAFKA, assert_on_java_partitions, assert_start_times_out, contract_store, produce, run_in_threads

TIMEOUT_MS = 10_000
TRACE = "Traceback (most recent call last):\n  ValueError: ü"


def kafka_store(bootstrap: str, topic: str, partitions: int = 3) -> KafkaStatusStore:
    """A Kafka status store on ``topic``, not started."""
    return KafkaStatusStore(bootstrap, topic, partitions=partitions, timeout_ms=TIMEOUT_MS)


@pytest.fixture(params=["memory", KAFKA])
def store(request: pytest.FixtureRequest) -> StatusStore:
    return contract_store(request, memory=MemoryStatusStore)


# ---- the contract ----------------------------------------------------------------------------------------------


def test_unknown_connector_has_no_status(store: StatusStore) -> None:
    assert store.connector("conn") is None
    assert store.task("conn", 0) is None
    assert store.tasks("conn") == {}
    assert store.topics("conn") == []


def test_put_then_read_connector_and_task_statuses(store: StatusStore) -> None:
    store.put_connector("conn", "RUNNING", None, "host:8083", 7)
    store.put_task("conn", 1, "FAILED", TRACE, "other:8083", 8)
    store.put_task("conn", 0, "RUNNING", None, "host:8083", 7)
    assert store.connector("conn") == Status("RUNNING", None, "host:8083", 7)
    assert store.task("conn", 1) == Status("FAILED", TRACE, "other:8083", 8)
    assert store.task("conn", 2) is None
    assert store.tasks("conn") == {
        0: Status("RUNNING", None, "host:8083", 7),
        1: Status("FAILED", TRACE, "other:8083", 8),
    }
    assert list(store.tasks("conn")) == [0, 1]


def test_later_status_replaces_the_earlier(store: StatusStore) -> None:
    store.put_connector("conn", "UNASSIGNED", None, "a:1", 1)
    store.put_connector("conn", "RUNNING", None, "b:1", 2)
    store.put_task("conn", 0, "RUNNING", None, "b:1", 2)
    store.put_task("conn", 0, "PAUSED", None, "b:1", 2)
    assert store.connector("conn") == Status("RUNNING", None, "b:1", 2)
    assert store.task("conn", 0) == Status("PAUSED", None, "b:1", 2)


def test_connectors_are_isolated_and_names_may_hold_dashes(store: StatusStore) -> None:
    store.put_task("a-1", 0, "RUNNING", None, "w", 1)
    store.put_task("a", 10, "FAILED", "boom", "w", 1)
    store.put_task("a", 1, "RUNNING", None, "w", 1)
    assert store.tasks("a-1") == {0: Status("RUNNING", None, "w", 1)}
    assert list(store.tasks("a")) == [1, 10]
    assert store.task("a", 0) is None


@pytest.mark.parametrize("state", ["UNASSIGNED", "RUNNING", "PAUSED", "FAILED", "RESTARTING", "STOPPED"])
def test_every_connect_state_round_trips(store: StatusStore, state: str) -> None:
    store.put_connector("conn", state, None, "w", 0)
    assert store.connector("conn") == Status(state, None, "w", 0)


def test_bad_statuses_are_refused_and_store_nothing(store: StatusStore) -> None:
    with pytest.raises(ValueError, match="DESTROYED"):
        store.put_connector("conn", "DESTROYED", None, "w", 0)
    with pytest.raises(ValueError, match="-1"):
        store.put_task("conn", -1, "RUNNING", None, "w", 0)
    with pytest.raises(ValueError, match="a:b"):
        store.put_topic("conn", "a:b", 0, 1)
    assert (store.connector("conn"), store.tasks("conn"), store.topics("conn")) == (None, {}, [])


def test_delete_connector_forgets_it_and_its_tasks_but_not_its_topics(store: StatusStore) -> None:
    store.put_connector("conn", "RUNNING", None, "w", 1)
    store.put_task("conn", 0, "RUNNING", None, "w", 1)
    store.put_task("conn", 1, "RUNNING", None, "w", 1)
    store.put_topic("conn", "t", 0, 1_579_297_899_000)
    store.put_connector("conn-2", "RUNNING", None, "w", 1)
    store.put_task("conn-2", 0, "RUNNING", None, "w", 1)
    store.delete_connector("conn")
    store.delete_connector("never-existed")
    assert (store.connector("conn"), store.tasks("conn")) == (None, {})
    assert store.topics("conn") == [TopicStatus("t", "conn", 0, 1_579_297_899_000)]
    assert store.connector("conn-2") == Status("RUNNING", None, "w", 1)
    assert list(store.tasks("conn-2")) == [0]


def test_topics_are_recorded_per_connector_and_sorted(store: StatusStore) -> None:
    store.put_topic("conn", "orders", 1, 20)
    store.put_topic("conn", "audit.log", 0, 10)
    store.put_topic("conn", "orders", 0, 30)
    store.put_topic("other", "orders", 2, 40)
    assert store.topics("conn") == [TopicStatus("audit.log", "conn", 0, 10), TopicStatus("orders", "conn", 0, 30)]
    assert store.topics("other") == [TopicStatus("orders", "other", 2, 40)]


def test_delete_topics_resets_only_that_connector(store: StatusStore) -> None:
    store.put_topic("conn", "a", 0, 1)
    store.put_topic("conn", "b", 0, 2)
    store.put_topic("other", "a", 0, 3)
    store.delete_topics("conn")
    store.delete_topics("never-existed")
    assert store.topics("conn") == []
    assert store.topics("other") == [TopicStatus("a", "other", 0, 3)]
    store.put_topic("conn", "c", 1, 4)
    assert store.topics("conn") == [TopicStatus("c", "conn", 1, 4)]


def test_concurrent_writers_lose_nothing(store: StatusStore) -> None:
    def report(thread: int) -> None:
        for task in range(10):
            store.put_task(f"conn-{thread}", task, "RUNNING", None, f"w{thread}", thread)

    run_in_threads(report, 4)
    assert [len(store.tasks(f"conn-{thread}")) for thread in range(4)] == [10, 10, 10, 10]
    assert store.task("conn-3", 9) == Status("RUNNING", None, "w3", 3)


# ---- generations: an older run's late record does not hide a newer run's status ---------------------------------


def test_a_late_record_of_another_worker_with_an_older_generation_is_skipped(store: StatusStore) -> None:
    store.put_connector("conn", "RUNNING", None, "new:1", 5)
    store.put_task("conn", 0, "RUNNING", None, "new:1", 5)
    store.put_connector("conn", "FAILED", TRACE, "old:1", 4)
    store.put_task("conn", 0, "UNASSIGNED", None, "old:1", 4)
    store.put_task("conn", 0, "RUNNING", None, "old:1", 4)
    assert store.connector("conn") == Status("RUNNING", None, "new:1", 5)
    assert store.task("conn", 0) == Status("RUNNING", None, "new:1", 5)


def test_the_same_worker_or_a_generation_not_older_replaces_the_status(store: StatusStore) -> None:
    store.put_task("conn", 0, "RUNNING", None, "new:1", 5)
    store.put_task("conn", 0, "PAUSED", None, "new:1", 3)  # the same worker: always
    assert store.task("conn", 0) == Status("PAUSED", None, "new:1", 3)
    store.put_task("conn", 0, "RUNNING", None, "new:1", 5)
    store.put_task("conn", 0, "UNASSIGNED", None, "other:1", 5)  # another worker, the same generation
    assert store.task("conn", 0) == Status("UNASSIGNED", None, "other:1", 5)
    store.put_task("conn", 0, "RUNNING", None, "third:1", 6)  # another worker, a newer generation
    assert store.task("conn", 0) == Status("RUNNING", None, "third:1", 6)


def test_a_deletion_applies_whatever_the_generation_and_an_older_one_may_then_write(store: StatusStore) -> None:
    store.put_connector("conn", "RUNNING", None, "new:1", 5)
    store.put_task("conn", 0, "RUNNING", None, "new:1", 5)
    store.delete_connector("conn")
    assert (store.connector("conn"), store.tasks("conn")) == (None, {})
    store.put_task("conn", 0, "RUNNING", None, "old:1", 0)
    assert store.task("conn", 0) == Status("RUNNING", None, "old:1", 0)


def test_a_safe_write_over_a_newer_status_of_another_worker_writes_nothing(
    store: StatusStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.put_connector("conn", "RUNNING", None, "new:1", 5)
    store.put_task("conn", 0, "RUNNING", None, "new:1", 5)
    records = list(store.records) if isinstance(store, MemoryStatusStore) else None
    with caplog.at_level("DEBUG", logger="headwater.runtime.storage.status"):
        store.put_connector("conn", "FAILED", TRACE, "old:1", 4, safe=True)
        store.put_task("conn", 0, "UNASSIGNED", None, "old:1", 4, safe=True)
    if isinstance(store, MemoryStatusStore):
        assert store.records == records
    assert [r.getMessage() for r in caplog.records] == [
        "not recording the FAILED status of connector conn from old:1 (generation 4): the current RUNNING status is "
        "from new:1, generation 5",
        "not recording the UNASSIGNED status of task conn-0 from old:1 (generation 4): the current RUNNING status "
        "is from new:1, generation 5",
    ]
    store.put_task("conn", 0, "FAILED", TRACE, "new:1", 2, safe=True)  # the same worker
    store.put_connector("conn", "UNASSIGNED", None, "other:1", 5, safe=True)  # a generation not older
    store.put_task("lonely", 0, "FAILED", TRACE, "old:1", 0, safe=True)  # no status yet
    assert store.task("conn", 0) == Status("FAILED", TRACE, "new:1", 2)
    assert store.connector("conn") == Status("UNASSIGNED", None, "other:1", 5)
    assert store.task("lonely", 0) == Status("FAILED", TRACE, "old:1", 0)


def test_a_bad_status_is_refused_even_when_a_safe_write_would_skip_it(store: StatusStore) -> None:
    store.put_connector("conn", "RUNNING", None, "new:1", 5)
    with pytest.raises(ValueError, match="DESTROYED"):
        store.put_connector("conn", "DESTROYED", None, "old:1", 4, safe=True)


# ---- the wire format and how records are read -------------------------------------------------------------------

EXPECTED_RECORDS = [
    (b"status-connector-my-conn", b'{"state":"RUNNING","trace":null,"worker_id":"host:8083","generation":7}'),
    (b"status-task-my-conn-0", '{"state":"FAILED","trace":"boom ü","worker_id":"w:1","generation":8}'.encode()),
    (b"status-topic-orders:connector-my-conn", b'{"topic":{"name":"orders","connector":"my-conn","task":0,'
     b'"discoverTimestamp":1579297899000}}'),
    (b"status-topic-orders:connector-my-conn", None),
    (b"status-connector-my-conn", None),
    (b"status-task-my-conn-0", None),
]  # fmt: skip


def write_expected_records(store: StatusStore) -> None:
    store.put_connector("my-conn", "RUNNING", None, "host:8083", 7)
    store.put_task("my-conn", 0, "FAILED", "boom ü", "w:1", 8)
    store.put_topic("my-conn", "orders", 0, 1_579_297_899_000)
    store.delete_topics("my-conn")
    store.delete_connector("my-conn")


def test_memory_records_are_kafka_connect_bytes() -> None:
    memory = MemoryStatusStore()
    write_expected_records(memory)
    assert memory.records == EXPECTED_RECORDS


def valid_view() -> StatusView:
    view = StatusView()
    view.apply(b"status-connector-c", b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":1}')
    view.apply(b"status-task-c-0", b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":1}')
    view.apply(b"status-topic-t:connector-c", b'{"topic":{"name":"t","connector":"c","task":0,"discoverTimestamp":5}}')
    return view


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"status-connector-c", b"not json"),
        (b"status-connector-c", b'"RUNNING"'),
        (b"status-connector-c", b'{"state":"DESTROYED","trace":null,"worker_id":"w","generation":2}'),
        (b"status-connector-c", b'{"state":"FAILED","trace":3,"worker_id":"w","generation":2}'),
        (b"status-connector-c", b'{"state":"FAILED","trace":null,"generation":2}'),
        (b"status-connector-c", b'{"state":"FAILED","trace":null,"worker_id":"w","generation":"2"}'),
        (b"status-connector-c", b'{"state":"FAILED","trace":null,"worker_id":"w","generation":true}'),
        (b"status-task-c-x", None),
        (b"status-task-c", None),
        (b"status-task--0", None),
        (b"status-task-c-0", b'{"state":"FAILED","trace":null,"worker_id":"w","generation":NaN}'),
        (b"status-topic-", None),
        (b"status-topic-:connector-", None),
        (b"status-topic-:connector-c", None),
        (b"status-topic-t:", None),
        (b"status-topic-t:connector-", None),
        (b"status-topic-t:task-c", None),
        (b"status-topic-t:connector-c", b'{"topic":"t"}'),
        (b"status-topic-t:connector-c", b'{"topic":{"name":"t","connector":"c","task":0}}'),
        (b"status-something-c", None),
        (b"\xff", None),
        (None, b"{}"),
    ],
)
def test_malformed_records_are_skipped(key: bytes | None, value: bytes | None) -> None:
    view = valid_view()
    view.apply(key, value)
    assert (view.connectors, view.tasks, view.topics) == (
        valid_view().connectors,
        valid_view().tasks,
        valid_view().topics,
    )


def test_task_keys_split_at_the_last_dash_and_topic_keys_at_the_first_colon() -> None:
    view = StatusView()
    view.apply(b"status-task-my-conn-12", b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":1}')
    view.apply(
        b"status-topic-t:connector-c:x", b'{"topic":{"name":"t","connector":"c:x","task":0,"discoverTimestamp":5}}'
    )
    assert list(view.tasks) == ["my-conn"]
    assert list(view.tasks["my-conn"]) == [12]
    assert view.topics == {"c:x": {"t": TopicStatus("t", "c:x", 0, 5)}}


def test_memory_repr_shows_states() -> None:
    memory = MemoryStatusStore()
    memory.put_connector("conn", "RUNNING", None, "w", 1)
    memory.put_task("conn", 0, "FAILED", "boom", "w", 1)
    memory.put_task("lonely", 3, "UNASSIGNED", None, "w", 1)
    assert repr(memory) == "MemoryStatusStore({'conn': RUNNING [0: FAILED], 'lonely': None [3: UNASSIGNED]})"


# ---- the Kafka store ---------------------------------------------------------------------------------------------


@pytest.mark.kafka
def test_kafka_topic_holds_kafka_connect_bytes_on_the_java_partition(
    kafka_stores: Callable[..., KafkaStatusStore], kafka_bootstrap: str, unique_name: str, raw_records: RawRecords
) -> None:
    write_expected_records(kafka_stores())
    assert_on_java_partitions(raw_records, unique_name, EXPECTED_RECORDS)


@pytest.mark.kafka
def test_kafka_second_store_sees_what_the_first_wrote(kafka_stores: Callable[..., KafkaStatusStore]) -> None:
    first = kafka_stores()
    first.put_connector("conn", "RUNNING", None, "w1", 1)
    first.put_task("conn", 0, "FAILED", TRACE, "w1", 1)
    first.put_topic("conn", "t", 0, 5)
    second = kafka_stores()
    assert second.connector("conn") == Status("RUNNING", None, "w1", 1)
    assert second.tasks("conn") == {0: Status("FAILED", TRACE, "w1", 1)}
    assert second.topics("conn") == [TopicStatus("t", "conn", 0, 5)]
    first.put_task("conn", 0, "RUNNING", None, "w1", 2)
    second.delete_connector("conn")  # reads the topic first: task 0's new status is tombstoned as well
    first.refresh()
    assert (first.connector("conn"), first.tasks("conn")) == (None, {})


@pytest.mark.kafka
def test_kafka_an_older_run_s_late_reports_leave_the_newer_run_s_status(
    kafka_stores: Callable[..., KafkaStatusStore], kafka_bootstrap: str, unique_name: str, raw_records: RawRecords
) -> None:
    """Two workers' stores on one topic: the old run's worker writes its late FAILED before it read the new run's
    RUNNING (its check cannot see it) and every reader skips it; once it has read it, its UNASSIGNED is not written."""
    old = kafka_stores(partitions=1)
    old.put_task("conn", 0, "RUNNING", None, "old:1", 0)
    new = kafka_stores(partitions=1)
    new.put_task("conn", 0, "RUNNING", None, "new:1", 1)
    old.put_task("conn", 0, "FAILED", TRACE, "old:1", 0, safe=True)
    new.refresh()
    old.put_task("conn", 0, "UNASSIGNED", None, "old:1", 0, safe=True)
    late = kafka_stores(partitions=1)
    for store in (old, new, late):
        assert store.task("conn", 0) == Status("RUNNING", None, "new:1", 1)
    assert [json.loads(value or b"")["state"] for _, _, value in raw_records(unique_name)] == [
        "RUNNING",
        "RUNNING",
        "FAILED",
    ]


@pytest.mark.kafka
def test_kafka_unparseable_records_are_ignored(
    kafka_stores: Callable[..., KafkaStatusStore], kafka_bootstrap: str, unique_name: str
) -> None:
    kafka = kafka_stores(partitions=1)
    produce(
        kafka_bootstrap,
        unique_name,
        [(b"status-connector-conn", b'{"state":"RUNNING"}'), (b"status-topic-:connector-conn", b"{}")],
    )
    kafka.put_task("conn", 0, "RUNNING", None, "w", 1)
    assert (kafka.connector("conn"), kafka.topics("conn"), list(kafka.tasks("conn"))) == (None, [], [0])


def test_kafka_unreachable_broker_fails_start_within_the_timeout(unique_name: str) -> None:
    assert_start_times_out(KafkaStatusStore, unique_name)


@pytest.mark.kafka
def test_kafka_repr_shows_topic_and_states(
    kafka_stores: Callable[..., KafkaStatusStore], kafka_bootstrap: str, unique_name: str
) -> None:
    kafka = kafka_stores(partitions=1)
    kafka.put_connector("conn", "PAUSED", None, "w", 1)
    assert repr(kafka) == f"KafkaStatusStore('{unique_name}' at {kafka_bootstrap}, {{'conn': PAUSED []}})"
