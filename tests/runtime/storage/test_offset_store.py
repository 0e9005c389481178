"""The OffsetStore contract, run against every implementation, plus each implementation's own behaviour."""

import functools
import json
import os
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

import headwater.runtime.storage as storage
from headwater.harness.kafka_worker import RawRecords
from headwater.runtime.storage import (
    FileOffsetStore,
    KafkaOffsetStore,
    MemoryOffsetStore,
    OffsetStore,
    offset_key,
    offset_value,
    parse_offset_key,
)
from headwater.runtime.transport.memory import key_partition
from headwater.sdk.errors import ConnectError

from .conftest import KAFKA, assert_on_java_partitions, assert_start_times_out, contract_store, produce, run_in_threads

A = {"filename": "a.txt"}
B = {"filename": "b.txt"}
TIMEOUT_MS = 5_000


def make_store(kind: str, tmp_path: Path) -> OffsetStore:
    if kind == "memory":
        return MemoryOffsetStore()
    return FileOffsetStore(tmp_path / "offsets.json")


def kafka_store(bootstrap: str, topic: str) -> KafkaOffsetStore:
    """A Kafka offset store on ``topic`` (3 partitions), not started."""
    return KafkaOffsetStore(bootstrap, topic, partitions=3, timeout_ms=TIMEOUT_MS)


@pytest.fixture(params=["memory", "file", KAFKA])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> OffsetStore:
    return contract_store(request, memory=MemoryOffsetStore, file=functools.partial(make_store, "file", tmp_path))


# ---- the contract ----------------------------------------------------------------------------------------------


def test_unknown_partition_has_no_offset(store: OffsetStore) -> None:
    assert store.get("conn", [A, None]) == [(A, None), (None, None)]
    assert store.connector_partitions("conn") == []


def test_set_then_get_in_the_order_asked(store: OffsetStore) -> None:
    store.set("conn", [(A, {"position": 1}), (B, {"position": 2})], TIMEOUT_MS)
    assert store.get("conn", [B, {"filename": "c.txt"}, A]) == [
        (B, {"position": 2}),
        ({"filename": "c.txt"}, None),
        (A, {"position": 1}),
    ]


def test_later_set_replaces_the_offset(store: OffsetStore) -> None:
    store.set("conn", [(A, {"position": 1})], TIMEOUT_MS)
    store.set("conn", [(A, {"position": 5})], TIMEOUT_MS)
    assert store.get("conn", [A]) == [(A, {"position": 5})]


def test_none_offset_is_a_tombstone(store: OffsetStore) -> None:
    store.set("conn", [(A, {"position": 1}), (B, {"position": 2})], TIMEOUT_MS)
    store.set("conn", [(A, None)], TIMEOUT_MS)
    assert store.get("conn", [A, B]) == [(A, None), (B, {"position": 2})]
    assert store.connector_partitions("conn") == [B]


def test_tombstone_of_an_unknown_partition_is_harmless(store: OffsetStore) -> None:
    store.set("conn", [(A, None)], TIMEOUT_MS)
    assert store.get("conn", [A]) == [(A, None)]


def test_lookup_ignores_partition_key_order(store: OffsetStore) -> None:
    store.set("conn", [({"topic": "t", "partition": 0}, {"offset": 42})], TIMEOUT_MS)
    assert store.get("conn", [{"partition": 0, "topic": "t"}])[0][1] == {"offset": 42}
    store.set("conn", [({"partition": 0, "topic": "t"}, {"offset": 43})], TIMEOUT_MS)
    assert store.get("conn", [{"topic": "t", "partition": 0}])[0][1] == {"offset": 43}
    assert len(store.connector_partitions("conn")) == 1


def test_lookup_tells_ints_from_floats_and_bools(store: OffsetStore) -> None:
    store.set("conn", [({"p": 1}, {"offset": "int"})], TIMEOUT_MS)
    assert store.get("conn", [{"p": 1.0}, {"p": True}, {"p": "1"}]) == [
        ({"p": 1.0}, None),
        ({"p": True}, None),
        ({"p": "1"}, None),
    ]


def test_none_partition_is_a_partition(store: OffsetStore) -> None:
    store.set("conn", [(None, {"position": 3})], TIMEOUT_MS)
    assert store.get("conn", [None, A]) == [(None, {"position": 3}), (A, None)]
    assert store.connector_partitions("conn") == [None]


def test_any_mapping_is_accepted(store: OffsetStore) -> None:
    store.set("conn", [(MappingProxyType(A), MappingProxyType({"position": 1}))], TIMEOUT_MS)
    assert store.get("conn", [MappingProxyType(A)])[0][1] == {"position": 1}


def test_connectors_are_isolated(store: OffsetStore) -> None:
    store.set("one", [(A, {"position": 1})], TIMEOUT_MS)
    store.set("two", [(A, {"position": 2})], TIMEOUT_MS)
    store.set("two", [(A, None)], TIMEOUT_MS)
    assert store.get("one", [A]) == [(A, {"position": 1})]
    assert store.get("two", [A]) == [(A, None)]
    assert store.connector_partitions("one") == [A]
    assert store.connector_partitions("two") == []


def test_connector_partitions_lists_stored_partitions(store: OffsetStore) -> None:
    store.set("conn", [(A, {"position": 1}), (None, {"position": 0}), (B, {"position": 2})], TIMEOUT_MS)
    partitions = store.connector_partitions("conn")
    assert sorted(partitions, key=json.dumps) == sorted([A, None, B], key=json.dumps)
    assert store.connector_partitions("other") == []


def test_delete_connector_removes_only_its_offsets(store: OffsetStore) -> None:
    store.set("conn", [(A, {"position": 1}), (B, {"position": 2})], TIMEOUT_MS)
    store.set("other", [(A, {"position": 9})], TIMEOUT_MS)
    store.delete_connector("conn")
    store.delete_connector("never-stored")
    assert store.get("conn", [A, B]) == [(A, None), (B, None)]
    assert store.connector_partitions("conn") == []
    assert store.get("other", [A]) == [(A, {"position": 9})]


def test_values_round_trip_through_json(store: OffsetStore) -> None:
    offset = {"int": 2**53 + 1, "negative": -7, "float": 0.1, "string": "päth/ü", "true": True, "false": False}
    offset["none"] = None  # type: ignore[assignment]
    store.set("conn", [({"name": "ü", "n": 1}, offset)], TIMEOUT_MS)
    found = store.get("conn", [{"n": 1, "name": "ü"}])[0][1]
    assert found == offset
    assert found is not None
    assert [type(found[k]) for k in offset] == [int, int, float, str, bool, bool, type(None)]


def test_offsets_read_back_are_copies(store: OffsetStore) -> None:
    offset = {"position": 1}
    store.set("conn", [(A, offset)], TIMEOUT_MS)
    offset["position"] = 99
    found = store.get("conn", [A])[0][1]
    assert found == {"position": 1}
    found["position"] = 100  # type: ignore[index]
    assert store.get("conn", [A])[0][1] == {"position": 1}
    stored_partition = store.connector_partitions("conn")[0]
    stored_partition["filename"] = "changed"  # type: ignore[index]
    assert store.connector_partitions("conn") == [A]


@pytest.mark.parametrize(
    "bad",
    [
        ({"filename": object()}, {"position": 1}),
        (A, {"position": [1, 2]}),
        (A, {1: "non-string key"}),
        (A, {"position": float("nan")}),
        (A, "not a mapping"),
    ],
)
def test_bad_offsets_raise_and_store_nothing_of_the_call(store: OffsetStore, bad: tuple[object, object]) -> None:
    with pytest.raises(ConnectError, match="conn"):
        store.set("conn", [(B, {"position": 1}), bad], TIMEOUT_MS)  # type: ignore[list-item]
    assert store.get("conn", [B]) == [(B, None)]
    assert store.connector_partitions("conn") == []


def test_concurrent_sets_lose_no_offsets(store: OffsetStore) -> None:
    def commit(thread: int) -> None:
        for n in range(20):
            store.set("conn", [({"thread": thread, "n": n}, {"position": n})], TIMEOUT_MS)

    run_in_threads(commit, 8)
    assert len(store.connector_partitions("conn")) == 8 * 20
    assert store.get("conn", [{"n": 19, "thread": 7}])[0][1] == {"position": 19}


# ---- implementation-specific -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_set_times_out_while_another_writer_holds_the_store(kind: str, tmp_path: Path) -> None:
    local = make_store(kind, tmp_path)
    assert isinstance(local, (MemoryOffsetStore, FileOffsetStore))
    local.start()
    with local._lock, pytest.raises(ConnectError, match="timed out after 0 ms"):
        local.set("conn", [(A, {"position": 1})], 0)
    assert local.get("conn", [A]) == [(A, None)]


def test_memory_fail_next_sets_raises_and_stores_nothing() -> None:
    memory = MemoryOffsetStore()
    memory.fail_next_sets(2)
    for _ in range(2):
        with pytest.raises(ConnectError, match="injected offset store failure"):
            memory.set("conn", [(A, {"position": 1})], TIMEOUT_MS)
        assert memory.get("conn", [A]) == [(A, None)]
    memory.set("conn", [(A, {"position": 2})], TIMEOUT_MS)
    assert memory.get("conn", [A]) == [(A, {"position": 2})]
    assert memory.set_calls == 3


def test_memory_fail_next_sets_with_a_given_error() -> None:
    memory = MemoryOffsetStore()
    memory.fail_next_sets(1, TimeoutError("broker gone"))
    with pytest.raises(TimeoutError, match="broker gone"):
        memory.set("conn", [(A, {"position": 1})], TIMEOUT_MS)
    assert memory.connector_partitions("conn") == []
    with pytest.raises(ValueError, match="n >= 0"):
        memory.fail_next_sets(-1)


def test_memory_repr_shows_content_and_pending_failures() -> None:
    memory = MemoryOffsetStore()
    memory.set("conn", [(A, {"position": 3})], TIMEOUT_MS)
    memory.fail_next_sets(1)
    assert repr(memory) == (
        'MemoryOffsetStore({["conn",{"filename":"a.txt"}]={"position":3}}, set_calls=1, failing next 1 sets)'
    )


def test_file_survives_a_restart_and_keeps_key_order(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    first = FileOffsetStore(path)
    first.start()
    first.set("conn", [({"topic": "t", "partition": 0}, {"offset": 42}), (None, {"offset": 1})], TIMEOUT_MS)
    first.set("conn", [(None, None)], TIMEOUT_MS)
    first.set("ü", [(A, {"position": 0.5})], TIMEOUT_MS)
    first.stop()
    assert list(json.loads(path.read_text(encoding="utf-8"))) == [
        '["conn",{"topic":"t","partition":0}]',
        '["ü",{"filename":"a.txt"}]',
    ]
    second = FileOffsetStore(path)
    second.start()
    assert second.get("conn", [{"partition": 0, "topic": "t"}, None]) == [
        ({"partition": 0, "topic": "t"}, {"offset": 42}),
        (None, None),
    ]
    assert second.get("ü", [A]) == [(A, {"position": 0.5})]
    assert second.connector_partitions("conn") == [{"topic": "t", "partition": 0}]


def test_file_delete_connector_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    first = FileOffsetStore(path)
    first.start()
    first.set("conn", [(A, {"position": 1})], TIMEOUT_MS)
    first.delete_connector("conn")
    second = FileOffsetStore(path)
    second.start()
    assert second.connector_partitions("conn") == []


def test_file_rewrite_leaves_no_temp_files(tmp_path: Path) -> None:
    local = FileOffsetStore(tmp_path / "offsets.json")
    local.start()
    for position in range(5):
        local.set("conn", [(A, {"position": position})], TIMEOUT_MS)
    local.delete_connector("conn")
    assert os.listdir(tmp_path) == ["offsets.json"]
    assert json.loads((tmp_path / "offsets.json").read_text(encoding="utf-8")) == {}


def test_file_write_failure_raises_naming_the_path_and_stores_nothing(tmp_path: Path) -> None:
    path = tmp_path / "missing-dir" / "offsets.json"
    local = FileOffsetStore(path)
    local.start()
    with pytest.raises(ConnectError, match="missing-dir"):
        local.set("conn", [(A, {"position": 1})], TIMEOUT_MS)
    assert local.get("conn", [A]) == [(A, None)]


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"",
        b"\xff\xfe\x00",
        b"[]",
        b'{"not a key": {"position": 1}}',
        b'{"[\\"conn\\",{\\"f\\":\\"a\\"}]": 5}',
        b'{"[\\"conn\\",{\\"f\\":\\"a\\"}]": {"position": [1]}}',
        b'{"[\\"conn\\",null]": {"position": NaN}}',
        b'{"[\\"conn\\",{\\"f\\":Infinity}]": {"position": 1}}',
    ],
)
def test_file_corrupt_file_raises_naming_the_path(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "offsets.json"
    path.write_bytes(content)
    local = FileOffsetStore(path)
    with pytest.raises(ConnectError, match=r"offsets file .*offsets\.json") as raised:
        local.start()
    assert str(path) in str(raised.value)


def test_file_store_must_be_started(tmp_path: Path) -> None:
    path = tmp_path / "offsets.json"
    path.write_text('{"[\\"conn\\",null]": {"position": 1}}', encoding="utf-8")
    local = FileOffsetStore(path)
    with pytest.raises(ConnectError, match="not started"):
        local.set("conn", [(A, {"position": 1})], TIMEOUT_MS)
    assert json.loads(path.read_text(encoding="utf-8")) == {'["conn",null]': {"position": 1}}, "file untouched"
    local.start()
    assert local.get("conn", [None]) == [(None, {"position": 1})]
    assert repr(local) == f'FileOffsetStore({str(path)!r}, {{["conn",null]={{"position":1}}}})'


# ---- wire format -----------------------------------------------------------------------------------------------


def test_offset_key_matches_kafka_connect_bytes() -> None:
    assert offset_key("conn", {"filename": "test.txt"}) == b'["conn",{"filename":"test.txt"}]'
    assert offset_key("conn", None) == b'["conn",null]'
    assert offset_key("c", {"b": 1, "a": "é"}) == '["c",{"b":1,"a":"é"}]'.encode()


def test_offset_value_is_compact_json_or_tombstone() -> None:
    assert offset_value({"position": 30, "done": False}) == b'{"position":30,"done":false}'
    assert offset_value(None) is None


def test_parse_offset_key_reads_connect_keys() -> None:
    assert parse_offset_key(b'["local-file-source",{"filename":"test.txt"}]') == (
        "local-file-source",
        {"filename": "test.txt"},
    )
    assert parse_offset_key(b'["conn",null]') == ("conn", None)
    assert parse_offset_key(offset_key("ü", {"b": 1, "a": 2})) == ("ü", {"b": 1, "a": 2})


@pytest.mark.parametrize(
    "key",
    [
        b"not json",
        b"\xff\xfe",
        b'{"conn": {}}',
        b'"conn"',
        b'["conn"]',
        b'["conn",{},1]',
        b"[1,{}]",
        b"[null,{}]",
        b'["conn",[1]]',
        b'["conn","partition"]',
    ],
)
def test_parse_offset_key_rejects_malformed_keys(key: bytes) -> None:
    assert parse_offset_key(key) is None


def test_package_exports() -> None:
    names = {"FileOffsetStore", "MemoryOffsetStore", "OffsetStore", "PartitionOffset"}
    names |= {"offset_key", "offset_value", "parse_offset_key"}
    assert names <= set(storage.__all__)
    assert all(hasattr(storage, name) for name in storage.__all__)


# ---- the Kafka store ---------------------------------------------------------------------------------------------


@pytest.mark.kafka
def test_kafka_topic_holds_kafka_connect_bytes_on_the_java_partition(
    kafka_stores: Callable[..., KafkaOffsetStore], unique_name: str, raw_records: RawRecords
) -> None:
    kafka = kafka_stores()
    kafka.set("conn", [(A, {"position": 1}), ({"f": "ü", "n": 1}, {"position": 2.5})], TIMEOUT_MS)
    kafka.set("conn", [(A, None)], TIMEOUT_MS)
    kafka.set("other", [(None, {"position": 3})], TIMEOUT_MS)
    kafka.delete_connector("conn")
    written = [
        (b'["conn",{"filename":"a.txt"}]', b'{"position":1}'),
        ('["conn",{"f":"ü","n":1}]'.encode(), b'{"position":2.5}'),
        (b'["conn",{"filename":"a.txt"}]', None),
        (b'["other",null]', b'{"position":3}'),
        ('["conn",{"f":"ü","n":1}]'.encode(), None),
    ]
    assert_on_java_partitions(raw_records, unique_name, written)


@pytest.mark.kafka
def test_kafka_second_store_sees_what_the_first_wrote(kafka_stores: Callable[..., KafkaOffsetStore]) -> None:
    first = kafka_stores()
    first.set("conn", [(A, {"position": 1}), (B, {"position": 2})], TIMEOUT_MS)
    second = kafka_stores()
    assert second.get("conn", [A, B]) == [(A, {"position": 1}), (B, {"position": 2})]
    first.set("conn", [(A, {"position": 10}), (B, None)], TIMEOUT_MS)
    second.refresh()
    assert second.get("conn", [A, B]) == [(A, {"position": 10}), (B, None)]
    assert second.connector_partitions("conn") == [A]


@pytest.mark.kafka
def test_kafka_records_connect_cannot_read_are_ignored(
    kafka_stores: Callable[..., KafkaOffsetStore], kafka_bootstrap: str, unique_name: str
) -> None:
    kafka_stores().stop()  # creates the topic
    produce(
        kafka_bootstrap,
        unique_name,
        [
            (b"not json", b'{"position":1}'),
            (b'["conn"]', b'{"position":1}'),
            (b'["conn",{"f":NaN}]', b'{"position":1}'),
            (b'["conn",{"f":[1]}]', b'{"position":1}'),
            (b'["conn",{"f":"bad value"}]', b"[1]"),
            (b'["conn",{"f":"nan value"}]', b'{"position":NaN}'),
            (b'["conn",{"f":"nested value"}]', b'{"position":{"x":1}}'),
            (b'["conn",{"f":"good"}]', b'{"position":7}'),
        ],
    )
    kafka = kafka_stores()
    assert kafka.connector_partitions("conn") == [{"f": "good"}]
    assert kafka.get("conn", [{"f": "good"}]) == [({"f": "good"}, {"position": 7})]


@pytest.mark.kafka
def test_kafka_keeps_writing_a_partition_under_the_key_bytes_already_stored(
    kafka_stores: Callable[..., KafkaOffsetStore], kafka_bootstrap: str, unique_name: str, raw_records: RawRecords
) -> None:
    kafka_stores().stop()
    java_key = b'["conn",{"partition":0,"topic":"t"}]'  # a HashMap's order, not the connector's
    produce(kafka_bootstrap, unique_name, [(java_key, b'{"offset":41}')])
    kafka = kafka_stores()
    kafka.set("conn", [({"topic": "t", "partition": 0}, {"offset": 42})], TIMEOUT_MS)
    kafka.set("conn", [({"topic": "t", "partition": 0}, None)], TIMEOUT_MS)
    assert [key for _, key, _ in raw_records(unique_name)] == [java_key] * 3
    assert kafka.connector_partitions("conn") == []


@pytest.mark.kafka
def test_kafka_failed_set_applies_nothing_until_the_topic_is_read_again(
    kafka_stores: Callable[..., KafkaOffsetStore], kafka_bootstrap: str, unique_name: str
) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    topic = NewTopic(unique_name, 3, 1, config={"cleanup.policy": "compact", "max.message.bytes": "1000"})
    admin.create_topics([topic])[unique_name].result(timeout=10)
    kafka = kafka_stores()
    a_partition = key_partition(offset_key("conn", A), 3)
    names = (f"big-{n}" for n in range(100))
    big = next({"filename": n} for n in names if key_partition(offset_key("conn", {"filename": n}), 3) != a_partition)
    with pytest.raises(ConnectError, match=rf"offsets of connector 'conn'.*topic '{unique_name}'.*too large"):
        kafka.set("conn", [(A, {"position": 1}), (big, {"blob": "x" * 5_000})], TIMEOUT_MS)
    assert kafka.get("conn", [A, big]) == [(A, None), (big, None)]
    # the broker took A's record (another partition than the rejected one); like Connect, the next read shows it
    kafka.refresh()
    assert kafka.get("conn", [A, big]) == [(A, {"position": 1}), (big, None)]
    kafka.set("conn", [(B, {"position": 2})], TIMEOUT_MS)
    assert kafka.get("conn", [B]) == [(B, {"position": 2})], "the store still writes after a failure"


def test_kafka_unreachable_broker_fails_start_within_the_timeout(unique_name: str) -> None:
    kafka = assert_start_times_out(KafkaOffsetStore, unique_name)
    with pytest.raises(ConnectError, match="not started"):
        kafka.get("conn", [A])


@pytest.mark.kafka
def test_kafka_repr_shows_topic_and_content(
    kafka_stores: Callable[..., KafkaOffsetStore], kafka_bootstrap: str, unique_name: str
) -> None:
    kafka = kafka_stores()
    kafka.set("conn", [(A, {"position": 3})], TIMEOUT_MS)
    assert repr(kafka) == (
        f'KafkaOffsetStore({unique_name!r} at {kafka_bootstrap}, {{["conn",{{"filename":"a.txt"}}]={{"position":3}}}})'
    )
