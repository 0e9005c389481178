"""The ConfigStore contract, run against the memory and the Kafka store, plus the config topic's wire format and
the Kafka store's own behaviour."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from headwater.harness.kafka_worker import RawRecords
from headwater.runtime.storage import ConfigStore, ConfigView, KafkaConfigStore, MemoryConfigStore
from headwater.sdk.errors import ConnectError

from .conftest import KAFKA, assert_start_times_out, contract_store, produce, run_in_threads

TIMEOUT_MS = 10_000
CONFIG = {"connector.class": "FileStreamSource", "tasks.max": "2", "file": "/tmp/ü.txt"}


def kafka_store(bootstrap: str, topic: str) -> KafkaConfigStore:
    """A Kafka config store on ``topic``, not started."""
    return KafkaConfigStore(bootstrap, topic, timeout_ms=TIMEOUT_MS)


@pytest.fixture(params=["memory", KAFKA])
def store(request: pytest.FixtureRequest) -> ConfigStore:
    return contract_store(request, memory=MemoryConfigStore)


# ---- the contract ----------------------------------------------------------------------------------------------


def test_unknown_connector_has_nothing(store: ConfigStore) -> None:
    assert store.connector_config("conn") is None
    assert store.connectors() == []
    assert store.task_configs("conn") == []
    assert store.target_state("conn") is None


def test_put_then_read_a_connector_config(store: ConfigStore) -> None:
    store.put_connector_config("conn", CONFIG)
    assert store.connector_config("conn") == CONFIG
    assert store.connectors() == ["conn"]
    assert store.target_state("conn") == "STARTED", "no target-state record means STARTED"


def test_later_config_replaces_the_earlier_and_keeps_the_tasks(store: ConfigStore) -> None:
    store.put_connector_config("conn", CONFIG)
    store.put_task_configs("conn", [{"task": "0"}])
    store.put_connector_config("conn", {**CONFIG, "tasks.max": "1"})
    assert store.connector_config("conn") == {**CONFIG, "tasks.max": "1"}
    assert store.task_configs("conn") == [{"task": "0"}]


def test_configs_read_back_are_copies(store: ConfigStore) -> None:
    props = dict(CONFIG)
    store.put_connector_config("conn", props)
    store.put_task_configs("conn", [{"task": "0"}])
    props["file"] = "changed"
    found = store.connector_config("conn")
    assert found is not None
    found["file"] = "changed too"
    store.task_configs("conn")[0]["task"] = "changed"
    assert store.connector_config("conn") == CONFIG
    assert store.task_configs("conn") == [{"task": "0"}]


def test_connectors_are_sorted_and_names_may_hold_dashes_and_digits(store: ConfigStore) -> None:
    for name in ["b-2", "a", "a-1-0"]:
        store.put_connector_config(name, {"name": name})
    store.put_task_configs("a-1-0", [{"t": "x"}, {"t": "y"}])
    store.put_task_configs("a", [{"t": "a"}])
    assert store.connectors() == ["a", "a-1-0", "b-2"]
    assert store.task_configs("a-1-0") == [{"t": "x"}, {"t": "y"}]
    assert store.task_configs("a") == [{"t": "a"}]
    assert store.task_configs("b-2") == []


def test_task_configs_are_replaced_as_a_whole(store: ConfigStore) -> None:
    store.put_connector_config("conn", CONFIG)
    store.put_task_configs("conn", [{"task": "0"}, {"task": "1"}, {"task": "2"}])
    assert store.task_configs("conn") == [{"task": "0"}, {"task": "1"}, {"task": "2"}]
    store.put_task_configs("conn", [{"task": "new 0"}])
    assert store.task_configs("conn") == [{"task": "new 0"}]
    store.put_task_configs("conn", [])
    assert store.task_configs("conn") == []


def test_task_configs_of_an_unknown_connector_are_refused(store: ConfigStore) -> None:
    with pytest.raises(ConnectError, match=r"'ghost'.*no such connector"):
        store.put_task_configs("ghost", [{"task": "0"}])
    store.put_connector_config("ghost", CONFIG)
    assert store.task_configs("ghost") == []


def test_remove_connector_forgets_config_tasks_and_target_state(store: ConfigStore) -> None:
    store.put_connector_config("conn", CONFIG)
    store.put_task_configs("conn", [{"task": "0"}])
    store.put_target_state("conn", "PAUSED")
    store.put_connector_config("other", {"name": "other"})
    store.remove_connector("conn")
    store.remove_connector("never-existed")
    assert store.connector_config("conn") is None
    assert store.task_configs("conn") == []
    assert store.target_state("conn") is None
    assert store.connectors() == ["other"]
    store.put_connector_config("conn", CONFIG)
    assert store.task_configs("conn") == [], "a re-created connector starts without the old tasks"
    assert store.target_state("conn") == "STARTED"


@pytest.mark.parametrize("state", ["PAUSED", "STOPPED", "STARTED"])
def test_target_states_round_trip(store: ConfigStore, state: str) -> None:
    store.put_connector_config("conn", CONFIG)
    store.put_target_state("conn", "PAUSED" if state != "PAUSED" else "STOPPED")
    store.put_target_state("conn", state)
    assert store.target_state("conn") == state


def test_target_state_may_come_before_the_config(store: ConfigStore) -> None:
    store.put_target_state("conn", "STOPPED")
    store.put_connector_config("conn", CONFIG)
    assert store.target_state("conn") == "STOPPED"


def test_bad_target_state_is_refused(store: ConfigStore) -> None:
    store.put_connector_config("conn", CONFIG)
    with pytest.raises(ValueError, match="RUNNING"):
        store.put_target_state("conn", "RUNNING")
    assert store.target_state("conn") == "STARTED"


@pytest.mark.parametrize("props", [{"file": object()}, {"ratio": float("nan")}])
def test_configs_that_are_not_json_are_refused(store: ConfigStore, props: dict[str, object]) -> None:
    with pytest.raises(ConnectError, match="'conn'"):
        store.put_connector_config("conn", props)
    store.put_connector_config("conn", CONFIG)
    with pytest.raises(ConnectError, match="'conn'"):
        store.put_task_configs("conn", [{"ok": "1"}, props])
    assert store.connectors() == ["conn"]
    assert store.task_configs("conn") == []


def test_concurrent_writers_lose_nothing(store: ConfigStore) -> None:
    def create(thread: int) -> None:
        for n in range(5):
            store.put_connector_config(f"c{thread}-{n}", {"n": str(n)})
            store.put_task_configs(f"c{thread}-{n}", [{"thread": str(thread)}])

    run_in_threads(create, 4)
    assert len(store.connectors()) == 20
    assert store.task_configs("c3-4") == [{"thread": "3"}]


# ---- the wire format and how records are read -------------------------------------------------------------------

EXPECTED_RECORDS = [
    (b"target-state-my-conn", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
    (b"connector-my-conn", '{"properties":{"name":"my-conn","file":"ü"}}'.encode()),
    (b"task-my-conn-0", b'{"properties":{"task.id":"0"}}'),
    (b"task-my-conn-1", b'{"properties":{"task.id":"1"}}'),
    (b"commit-my-conn", b'{"tasks":2}'),
    (b"target-state-my-conn", b'{"state":"PAUSED","state.v2":"PAUSED"}'),
    (b"connector-my-conn", None),
    (b"target-state-my-conn", None),
]


def write_expected_records(store: ConfigStore) -> None:
    store.put_target_state("my-conn", "STOPPED")
    store.put_connector_config("my-conn", {"name": "my-conn", "file": "ü"})
    store.put_task_configs("my-conn", [{"task.id": "0"}, {"task.id": "1"}])
    store.put_target_state("my-conn", "PAUSED")
    store.remove_connector("my-conn")


def test_a_patch_changes_some_keys_and_a_later_replace_makes_it_history(store: ConfigStore) -> None:
    store.put_connector_config("c", {"a": "1", "b": "2"})
    store.patch_connector_config("c", {"b": None, "d": "4"})
    assert store.connector_config("c") == {"a": "1", "d": "4"}
    store.put_connector_config("c", {"a": "5"})
    assert store.connector_config("c") == {"a": "5"}
    store.patch_connector_config("missing", {"a": "1"})
    assert store.connector_config("missing") is None


def test_memory_records_are_kafka_connect_bytes() -> None:
    memory = MemoryConfigStore()
    write_expected_records(memory)
    assert memory.records == EXPECTED_RECORDS


def read(records: list[tuple[bytes, bytes | None]]) -> ConfigView:
    view = ConfigView()
    for key, value in records:
        view.apply(key, value)
    return view


def test_task_configs_wait_for_their_commit() -> None:
    view = read([(b"connector-c", b'{"properties":{}}'), (b"task-c-0", b'{"properties":{"n":"0"}}')])
    assert view.task_configs("c") == []
    view.apply(b"commit-c", b'{"tasks":1}')
    assert view.task_configs("c") == [{"n": "0"}]


def test_incomplete_commit_makes_the_connector_inconsistent_until_a_complete_one() -> None:
    view = read(
        [
            (b"connector-c", b'{"properties":{}}'),
            (b"task-c-0", b'{"properties":{"n":"0"}}'),
            (b"commit-c", b'{"tasks":1}'),
            (b"task-c-1", b'{"properties":{"n":"1"}}'),
            (b"commit-c", b'{"tasks":2}'),  # task 0 is not among the records since the last commit
        ]
    )
    assert view.task_configs("c") == []
    assert "inconsistent" in view.describe()
    for record in [(b"task-c-0", b'{"properties":{"n":"new 0"}}'), (b"task-c-1", b'{"properties":{}}')]:
        view.apply(*record)
    view.apply(b"commit-c", b'{"tasks":2}')
    assert view.task_configs("c") == [{"n": "new 0"}, {}]
    assert view.describe() == "{'c': STARTED, 2 tasks}"


def test_commit_of_a_deleted_connector_is_ignored() -> None:
    view = read([(b"task-gone-0", b'{"properties":{}}'), (b"commit-gone", b'{"tasks":1}')])
    view.apply(b"connector-gone", b'{"properties":{}}')
    assert view.task_configs("gone") == []


def test_target_state_prefers_v2_and_reads_older_workers() -> None:
    view = read([(b"connector-c", b'{"properties":{}}'), (b"target-state-c", b'{"state":"PAUSED"}')])
    assert view.target_state("c") == "PAUSED"
    view.apply(b"target-state-c", b'{"state":"PAUSED","state.v2":"STOPPED"}')
    assert view.target_state("c") == "STOPPED"
    view.apply(b"target-state-c", None)
    assert view.target_state("c") == "STARTED"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"connector-c", b"not json"),
        (b"connector-c", b"[1]"),
        (b"connector-c", b'{"props":{}}'),
        (b"connector-c", b'{"properties":"x"}'),
        (b"connector-c", b'{"properties":{"x":NaN}}'),
        (b"task-c", b'{"properties":{}}'),
        (b"task-c-x", b'{"properties":{}}'),
        (b"task--0", b'{"properties":{}}'),
        (b"task-c-0", None),
        (b"commit-c", b'{"tasks":"1"}'),
        (b"commit-c", b'{"tasks":-1}'),
        (b"commit-c", None),
        (b"target-state-c", b'{"state":"RUNNING"}'),
        (b"session-key", b'{"key":"abc","algorithm":"HmacSHA256","creation-timestamp":1}'),
        (b"\xff\xfe", b"{}"),
        (None, b"{}"),
    ],
)
def test_malformed_records_are_skipped(key: bytes | None, value: bytes | None) -> None:
    base = [
        (b"connector-c", b'{"properties":{"a":"1"}}'),
        (b"task-c-0", b'{"properties":{"n":"0"}}'),
        (b"commit-c", b'{"tasks":1}'),
        (b"target-state-c", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
    ]
    view = read(base)
    view.apply(key, value)
    assert (view.configs, view.task_configs("c"), view.target_state("c")) == (
        {"c": {"a": "1"}},
        [{"n": "0"}],
        "STOPPED",
    )


def test_memory_repr_shows_connectors() -> None:
    memory = MemoryConfigStore()
    memory.put_connector_config("conn", CONFIG)
    memory.put_task_configs("conn", [{}, {}])
    memory.put_target_state("conn", "PAUSED")
    assert repr(memory) == "MemoryConfigStore({'conn': PAUSED, 2 tasks})"


# ---- the Kafka store ---------------------------------------------------------------------------------------------


@pytest.mark.kafka
def test_kafka_topic_holds_kafka_connect_bytes(
    kafka_stores: Callable[..., KafkaConfigStore], kafka_bootstrap: str, unique_name: str, raw_records: RawRecords
) -> None:
    write_expected_records(kafka_stores())
    assert [(key, value) for _, key, value in raw_records(unique_name)] == EXPECTED_RECORDS
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    assert len(admin.list_topics(unique_name, timeout=10).topics[unique_name].partitions) == 1
    resource = ConfigResource(ResourceType.TOPIC, unique_name)
    assert admin.describe_configs([resource])[resource].result(timeout=10)["cleanup.policy"].value == "compact"


@pytest.mark.kafka
def test_kafka_second_store_sees_what_the_first_wrote(kafka_stores: Callable[..., KafkaConfigStore]) -> None:
    first = kafka_stores()
    first.put_connector_config("conn", CONFIG)
    first.put_task_configs("conn", [{"task": "0"}])
    first.put_target_state("conn", "PAUSED")
    second = kafka_stores()
    assert (second.connector_config("conn"), second.task_configs("conn")) == (CONFIG, [{"task": "0"}])
    assert second.target_state("conn") == "PAUSED"
    first.remove_connector("conn")
    second.refresh()
    assert second.connectors() == []
    second.put_connector_config("new", CONFIG)  # a write reads the topic to its end
    first.put_connector_config("newer", CONFIG)
    assert first.connectors() == ["new", "newer"]


@pytest.mark.kafka
def test_kafka_uncommitted_task_configs_are_not_exposed(
    kafka_stores: Callable[..., KafkaConfigStore], kafka_bootstrap: str, unique_name: str
) -> None:
    writer = kafka_stores()
    writer.put_connector_config("conn", CONFIG)
    writer.put_task_configs("conn", [{"task": "old"}])
    writer.stop()
    # a leader that died after writing task records, before the commit record
    produce(kafka_bootstrap, unique_name, [(b"task-conn-0", b'{"properties":{"task":"new 0"}}')])
    produce(kafka_bootstrap, unique_name, [(b"task-conn-1", b'{"properties":{"task":"new 1"}}')])
    reader = kafka_stores()
    assert reader.task_configs("conn") == [{"task": "old"}]
    produce(kafka_bootstrap, unique_name, [(b"commit-conn", b'{"tasks":2}')])
    reader.refresh()
    assert reader.task_configs("conn") == [{"task": "new 0"}, {"task": "new 1"}]


@pytest.mark.kafka
def test_kafka_unparseable_records_are_ignored(
    kafka_stores: Callable[..., KafkaConfigStore], kafka_bootstrap: str, unique_name: str
) -> None:
    writer = kafka_stores()
    produce(kafka_bootstrap, unique_name, [(b"\xff", b"{}"), (b"connector-x", b"{oops"), (b"session-key", b"{}")])
    writer.put_connector_config("conn", CONFIG)
    assert writer.connectors() == ["conn"]


@pytest.mark.kafka
def test_kafka_refuses_a_config_topic_with_several_partitions(kafka_bootstrap: str, unique_name: str) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    admin.create_topics([NewTopic(unique_name, 2, 1)])[unique_name].result(timeout=10)
    kafka = kafka_store(kafka_bootstrap, unique_name)
    with pytest.raises(ConnectError, match=rf"'{unique_name}' must have exactly 1 partition\(s\) but has 2"):
        kafka.start()


def test_kafka_unreachable_broker_fails_start_within_the_timeout(unique_name: str) -> None:
    kafka = assert_start_times_out(KafkaConfigStore, unique_name)
    with pytest.raises(ConnectError, match="not started"):
        kafka.put_connector_config("conn", CONFIG)


@pytest.mark.kafka
def test_kafka_repr_shows_topic_and_connectors(
    kafka_stores: Callable[..., KafkaConfigStore], kafka_bootstrap: str, unique_name: str
) -> None:
    kafka = kafka_stores()
    kafka.put_connector_config("conn", CONFIG)
    assert repr(kafka) == f"KafkaConfigStore('{unique_name}' at {kafka_bootstrap}, {{'conn': STARTED, 0 tasks}})"


def compacted(records: list[tuple[bytes, bytes | None]]) -> list[tuple[bytes, bytes | None]]:
    """What log compaction leaves of ``records``: the last record of each key, in log order, tombstones dropped."""
    last = {key: index for index, (key, _) in enumerate(records)}
    return [(key, value) for index, (key, value) in enumerate(records) if last[key] == index and value is not None]


def test_patches_read_the_same_from_a_compacted_topic() -> None:
    memory = MemoryConfigStore()
    memory.put_connector_config("c", {"a": "1"})
    memory.patch_connector_config("c", {"b": "2"})
    memory.put_connector_config("c", {"a": "3"})
    memory.patch_connector_config("c", {"c": "4"})
    memory.patch_connector_config("c", {"a": None})
    memory.put_connector_config("d", {"x": "1"})
    memory.patch_connector_config("d", {"y": "2"})
    memory.remove_connector("d")
    expected = {"c": {"c": "4"}}
    assert {name: memory.connector_config(name) for name in memory.connectors()} == expected
    view = read(compacted(memory.records))
    assert {name: view.configs[name] for name in view.configs} == expected
    assert [key for key, _ in compacted(memory.records) if key.startswith(b"patch-")] != []
