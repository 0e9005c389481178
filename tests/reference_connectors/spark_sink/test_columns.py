"""Buffered records into Arrow tables: values parsed with the schema, metadata columns, and each record that does
not fit set apart with a reason (no SparkSession needed)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from headwater.reference_connectors.spark_sink import (
    ColumnBuilder,
    PartitionBuffer,
    RecordBuffer,
    infer_schema,
    parse_schema,
)
from headwater.reference_connectors.spark_sink.schema import table_schema
from headwater.sdk import SinkRecord, TopicPartition

TP = TopicPartition("orders", 3)
METADATA = ("topic", "partition", "offset", "timestamp", "key")


def builder(schema: str | pa.Schema, key_type: str = "string", metadata: tuple[str, ...] = METADATA) -> ColumnBuilder:
    values = parse_schema("value.schema", schema) if isinstance(schema, str) else schema
    names = {field: f"kafka_{field}" for field in metadata}
    return ColumnBuilder(values, table_schema(values, metadata, "kafka_", key_type), names, key_type)


def buffer_of(values: list[Any], keys: list[Any] | None = None, start: int = 100) -> PartitionBuffer:
    records = [
        SinkRecord(TP.topic, TP.partition, start + i, (keys or [None] * len(values))[i], v, 1_700_000_000_000 + i)
        for i, v in enumerate(values)
    ]
    buffer = RecordBuffer()
    buffer.add(records, now_ms=0)
    return buffer.partitions[TP]


def test_values_and_metadata_become_columns() -> None:
    values = [b'{"id":1,"name":"a","extra":[1]}', '{"id":2}', {"id": 3, "name": "c"}]
    table, rejected = builder("id BIGINT, name STRING").build(TP, buffer_of(values, keys=[b"k1", "k2", {"k": 3}]))
    assert rejected == []
    assert table.to_pylist() == [
        {
            "id": 1 + i,
            "name": name,
            "kafka_topic": "orders",
            "kafka_partition": 3,
            "kafka_offset": 100 + i,
            "kafka_timestamp": dt.datetime.fromtimestamp(1_700_000_000 + i / 1000, dt.UTC),
            "kafka_key": key,
        }
        for i, (name, key) in enumerate([("a", "k1"), (None, "k2"), ("c", '{"k":3}')])
    ]


def test_records_that_do_not_fit_are_set_apart_with_their_offset_and_reason() -> None:
    values = [
        b'{"id":1}',
        b"not json",
        None,
        b'{"id":"seven"}',
        b"[1,2]",
        b'{"id":2}{"id":3}',
        b'{"name":"no id"}',
        b'{"id":4,"at":"2024-02-30"}',
        b'{"id":5}',
    ]
    table, rejected = builder("id BIGINT NOT NULL, at DATE").build(TP, buffer_of(values))
    assert table.column("id").to_pylist() == [1, 5]
    assert table.column("kafka_offset").to_pylist() == [100, 108]
    assert [(r.offset, r.value) for r in rejected] == [(100 + i, values[i]) for i in (1, 2, 3, 4, 5, 6, 7)]
    reasons = {r.offset: r.reason for r in rejected}
    assert reasons[102] == "the value is null"
    assert "changed from number to string" in reasons[103]
    assert "2 JSON values" in reasons[105]
    assert reasons[106] == "null or missing NOT NULL column id"
    assert "2024-02-30" in reasons[107]
    assert rejected[0].where() == "topic 'orders' partition 3 offset 101"


def test_pretty_printed_values_fit() -> None:
    value = json.dumps({"id": 1, "name": "line\nbreak"}, indent=2).encode()
    assert b"\n" in value
    table, rejected = builder("id BIGINT, name STRING").build(TP, buffer_of([value, b'{"id":2}']))
    assert rejected == []
    assert table.column("name").to_pylist() == ["line\nbreak", None]


def test_typed_columns_parse_from_json() -> None:
    value = b'{"d":"2024-02-29","at":"2024-01-02T03:04:05.5+01:00","price":"12.34","ok":true,"f":1}'
    table, rejected = builder("d DATE, at TIMESTAMP, price DECIMAL(10,2), ok BOOLEAN, f DOUBLE").build(
        TP, buffer_of([value])
    )
    assert rejected == []
    row = table.to_pylist()[0]
    assert row["d"] == dt.date(2024, 2, 29)
    assert row["at"] == dt.datetime(2024, 1, 2, 2, 4, 5, 500000, tzinfo=dt.UTC)
    assert (row["price"], row["ok"], row["f"]) == (Decimal("12.34"), True, 1.0)


def test_a_string_key_column_rejects_keys_that_are_not_utf8_and_a_binary_one_keeps_them() -> None:
    values, keys = [b'{"id":1}', b'{"id":2}'], [b"\xff\xfe", b"ok"]
    table, rejected = builder("id BIGINT").build(TP, buffer_of(values, keys))
    assert table.column("kafka_key").to_pylist() == ["ok"]
    assert [(r.offset, r.reason, r.key) for r in rejected] == [(100, "the key is not UTF-8 text", b"\xff\xfe")]
    table, rejected = builder("id BIGINT", key_type="binary").build(TP, buffer_of(values, keys))
    assert rejected == [] and table.column("kafka_key").to_pylist() == keys


def test_only_the_chosen_metadata_columns_are_written() -> None:
    table, _ = builder("id BIGINT", metadata=("offset",)).build(TP, buffer_of([b'{"id":1}']))
    assert table.column_names == ["id", "kafka_offset"]


def test_a_batch_where_nothing_fits_gives_an_empty_table() -> None:
    table, rejected = builder("id BIGINT").build(TP, buffer_of([b"x", None]))
    assert table.num_rows == 0 and len(rejected) == 2
    assert table.schema.names[0] == "id"


def test_inference_takes_all_values_else_the_first_object_and_never_null_columns() -> None:
    schema = infer_schema([None, b'{"a":1,"b":null,"t":"2024-01-01T00:00:00Z"}', b'{"a":2,"c":"x"}'])
    assert schema == pa.schema(
        [("a", pa.int64()), ("b", pa.string()), ("t", pa.timestamp("us", tz="UTC")), ("c", pa.string())]
    )
    conflicting = [b"oops", b'{"a":1}', b'{"a":"one"}']
    assert infer_schema(conflicting) == pa.schema([("a", pa.int64())])
    assert infer_schema([b"1", None, b"[]"]) is None


def test_the_buffer_counts_records_and_bytes_and_drops_partitions() -> None:
    buffer = RecordBuffer()
    other = TopicPartition("orders", 4)
    records = [SinkRecord(TP.topic, TP.partition, i, b"key", b"v" * 10, None) for i in range(3)]
    records += [SinkRecord(other.topic, other.partition, 7, None, {"a": 1}, None)]
    buffer.add(records, now_ms=50)
    buffer.add([], now_ms=90)
    assert (buffer.records, buffer.bytes, buffer.oldest_ms) == (4, 3 * 13 + len(b'{"a":1}'), 50)
    assert buffer.partitions[other].values == [b'{"a":1}']
    buffer.drop([TP])
    assert (buffer.records, buffer.bytes, buffer.oldest_ms) == (1, 7, 50)
    taken = buffer.take()
    assert list(taken) == [other] and taken[other].last_offset == 7
    assert (buffer.records, buffer.bytes, buffer.oldest_ms) == (0, 0, None)


@pytest.mark.parametrize("count", [1, 1000])
def test_a_large_clean_batch_is_parsed_in_one_call(count: int, monkeypatch: pytest.MonkeyPatch) -> None:
    make = builder("id BIGINT")
    calls: list[int] = []
    original = make._misfit
    monkeypatch.setattr(make, "_misfit", lambda value: calls.append(1) or original(value))
    table, rejected = make.build(TP, buffer_of([b'{"id":%d}' % i for i in range(count)]))
    assert table.num_rows == count and rejected == [] and calls == []
