"""Records with a Kafka Connect value schema into Arrow columns: the type of every Connect schema, values taken as the
converters give them (never through JSON text), the records that do not fit set apart with the field named, and
which schema changes a table follows (no SparkSession needed)."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from headwater.reference_connectors.spark_sink import ColumnBuilder, RecordBuffer, parse_schema
from headwater.reference_connectors.spark_sink.record_schema import (
    IncompatibleSchema,
    UnsupportedSchema,
    arrow_schema,
    evolve,
)
from headwater.reference_connectors.spark_sink.schema import table_schema
from headwater.sdk import SinkRecord, TopicPartition
from headwater.sdk.schemas import (
    BOOLEAN,
    BYTES,
    DATE,
    FLOAT32,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    TIME,
    TIMESTAMP,
    array,
    decimal,
    map_of,
    optional,
    struct,
)

TP = TopicPartition("orders", 0)
MICROS = {"type": "int64", "optional": False, "name": "io.debezium.time.MicroTimestamp", "version": 1}
EVERY = struct(
    "shop.Order",
    i8=INT8,
    i16=INT16,
    i32=INT32,
    i64=INT64,
    f=FLOAT32,
    d=FLOAT64,
    ok=BOOLEAN,
    note=optional(STRING),
    raw=BYTES,
    amount=decimal(2, 10),
    loose=decimal(3),
    day=DATE,
    at=TIMESTAMP,
    clock=TIME,
    micros=MICROS,
    tags=array(STRING),
    attrs=optional(map_of(STRING, optional(INT64))),
    address=optional(struct("shop.Address", city=STRING, zip=optional(INT32))),
)
VALUE: dict[str, Any] = {
    "i8": -8,
    "i16": 16,
    "i32": 32,
    "i64": 2**40,
    "f": 1.5,
    "d": 2.25,
    "ok": True,
    "note": None,
    "raw": b"\x00\xff",
    "amount": Decimal("12.34"),
    "loose": Decimal("1.5"),
    "day": dt.date(2024, 2, 29),
    "at": dt.datetime(2024, 1, 2, 3, 4, 5, 123000, tzinfo=dt.UTC),
    "clock": dt.time(1, 2, 3, 456000),
    "micros": 1_700_000_000_000_000,
    "tags": ["a", "b"],
    "attrs": {"k": 1, "none": None},
    "address": {"city": "Lyon", "zip": None},
}


def buffered(values: list[Any], schemas: list[Any]) -> Any:
    records = [
        SinkRecord(TP.topic, TP.partition, 10 + i, None, v, 0, value_schema=s)
        for i, (v, s) in enumerate(zip(values, schemas, strict=True))
    ]
    buffer = RecordBuffer()
    buffer.add(records, now_ms=0)
    return buffer.partitions[TP]


def builder(values: pa.Schema, configured: bool = False) -> ColumnBuilder:
    columns = table_schema(values, ("offset",), "kafka_", "string")
    return ColumnBuilder(values, columns, {"offset": "kafka_offset"}, "string", configured)


def test_every_connect_type_becomes_its_column_type_and_values_go_in_as_given() -> None:
    columns = arrow_schema(EVERY)
    assert [(f.name, str(f.type), f.nullable) for f in columns] == [
        ("i8", "int8", False),
        ("i16", "int16", False),
        ("i32", "int32", False),
        ("i64", "int64", False),
        ("f", "float", False),
        ("d", "double", False),
        ("ok", "bool", False),
        ("note", "string", True),
        ("raw", "binary", False),
        ("amount", "decimal128(10, 2)", False),
        ("loose", "decimal128(38, 3)", False),  # no precision: Spark's largest
        ("day", "date32[day]", False),
        ("at", "timestamp[us, tz=UTC]", False),
        ("clock", "int32", False),  # Spark has no TIME: milliseconds since midnight
        ("micros", "int64", False),  # Debezium's temporal integers stay integers
        ("tags", "list<element: string not null>", False),
        ("attrs", "map<string, int64>", True),
        ("address", "struct<city: string not null, zip: int32>", True),
    ]
    buffer = buffered([VALUE, VALUE], [EVERY, EVERY])
    assert buffer.typed == 2 and buffer.values[0] is VALUE  # kept as given: no JSON text made
    table, rejected = builder(columns).build(TP, buffer)
    assert rejected == []
    row = table.to_pylist()[1]
    expected = {**VALUE, "loose": Decimal("1.500"), "clock": 3_723_456, "attrs": [("k", 1), ("none", None)]}
    assert row == {**expected, "kafka_offset": 11}


@pytest.mark.parametrize(
    ("schema", "problem"),
    [
        (struct("t", big=decimal(2, 39)), "field big is a Decimal of precision 39"),
        (struct("t", m=map_of(optional(STRING), INT64)), "field m is a map with optional keys"),
        (struct("t", inner=struct("u")), "field inner is a struct without fields"),
        (STRING, "not a struct"),
    ],
)
def test_schemas_no_table_holds_are_refused_naming_the_field(schema: dict[str, Any], problem: str) -> None:
    with pytest.raises(UnsupportedSchema, match=problem):
        arrow_schema(schema)


def test_values_that_do_not_fit_their_schema_or_column_are_set_apart_with_the_field_named() -> None:
    misfits = [
        ({**VALUE, "i64": 2.5}, "field i64 holds a Python float, not a int64"),
        ({**VALUE, "at": 1_700_000_000_000}, "field at holds a Python int, not a Timestamp"),
        ({**VALUE, "day": dt.datetime(2024, 1, 1)}, "field day holds a Python datetime, not a Date"),
        ({**VALUE, "i8": 300}, "field i8 does not fit the column's int8"),
        ({**VALUE, "amount": Decimal("1.234")}, "field amount does not fit the column's decimal128(10, 2)"),
        ({**VALUE, "address": {"zip": 1}}, "null in the required field address.city"),
        ({**VALUE, "tags": ["a", None]}, "null in the required field tags[]"),
        ({**VALUE, "i32": None}, "null in the required field i32"),
        ("not a dict", "the value is a Python str, not a struct"),
        (None, "the value is null"),
    ]
    values = [VALUE] + [value for value, _ in misfits] + [VALUE]
    table, rejected = builder(arrow_schema(EVERY)).build(TP, buffered(values, [EVERY] * len(values)))
    assert table.column("kafka_offset").to_pylist() == [10, 10 + len(values) - 1]
    assert [r.offset for r in rejected] == list(range(11, 11 + len(misfits)))
    for record, (_, reason) in zip(rejected, misfits, strict=True):
        assert record.reason.startswith(reason), (record.reason, reason)


def test_a_partition_mixing_json_values_and_schemas_keeps_offset_order() -> None:
    schema = struct("t", id=INT64, name=optional(STRING))
    values = [b'{"id":1,"name":"json"}', {"id": 2, "name": "typed"}, b'{"id":"three"}', {"id": 4}, "x"]
    schemas = [None, schema, None, schema, STRING]
    table, rejected = builder(arrow_schema(schema)).build(TP, buffered(values, schemas))
    assert table.select(["id", "name", "kafka_offset"]).to_pylist() == [
        {"id": 1, "name": "json", "kafka_offset": 10},
        {"id": 2, "name": "typed", "kafka_offset": 11},
        {"id": 4, "name": None, "kafka_offset": 13},
    ]
    assert [r.offset for r in rejected] == [12, 14]
    assert "changed from number to string" in rejected[0].reason  # the JSON reader's reason, as for JSON records
    assert rejected[1].reason == "the value's schema is a 'string', not a struct: only structs become rows"


def test_a_configured_schema_drops_extra_fields_and_sets_apart_what_it_cannot_hold() -> None:
    configured = builder(parse_schema("value.schema", "id BIGINT NOT NULL, qty INT, price DECIMAL(6,2)"), True)
    fits = struct("t", id=INT32, qty=INT64, price=decimal(2, 10), extra=STRING)
    wrong = struct("t", id=INT64, qty=STRING)
    lacks = struct("t", qty=INT32)
    huge = struct("t", id=INT64, big=decimal(0, 50))
    values = [
        {"id": 1, "qty": 5, "price": Decimal("1.50"), "extra": "dropped"},
        {"id": 2, "qty": 2**40, "price": Decimal("1"), "extra": ""},  # too large for INT: Arrow checks each value
        {"id": 3, "qty": "five"},
        {"qty": 1},
        {"id": 5, "big": Decimal(1)},
    ]
    table, rejected = configured.build(TP, buffered(values, [fits, fits, wrong, lacks, huge]))
    assert table.to_pylist() == [{"id": 1, "qty": 5, "price": Decimal("1.50"), "kafka_offset": 10}]
    reasons = [r.reason for r in rejected]
    assert reasons[0].startswith("field qty does not fit the column's int32")
    assert reasons[1] == "field qty is string in the record schema, int32 in value.schema"
    assert reasons[2] == "the NOT NULL column id is missing from the record schema"
    assert reasons[3].startswith("field big is a Decimal of precision 50")


def test_the_buffer_counts_values_with_a_schema_without_serializing_them() -> None:
    schema = struct("t", id=INT64, name=STRING, raw=BYTES)
    buffer = RecordBuffer()
    buffer.add([SinkRecord("t", 0, 0, None, {"id": 1, "name": "abc", "raw": b"12"}, 0, value_schema=schema)], 0)
    assert buffer.bytes == len("id") + 8 + len("name") + 3 + len("raw") + 2
    buffer.drop([TopicPartition("t", 0)])
    assert buffer.bytes == 0


V1 = pa.schema([pa.field("id", pa.int64(), False), ("qty", pa.int32()), ("kafka_offset", pa.int64())])
META = {"kafka_offset"}


@pytest.mark.parametrize(
    ("record", "columns", "change"),
    [
        (struct("t", id=INT64, qty=optional(INT32), note=optional(STRING)), "id qty kafka_offset note", "new column"),
        (struct("t", id=INT64), "id qty kafka_offset", ""),  # a nullable column dropped: null
        (struct("t", id=INT32, qty=optional(INT16)), "id qty kafka_offset", ""),  # narrower: cast
        (struct("t", id=INT64, qty=optional(INT64)), "id qty kafka_offset", "column qty int32 -> int64"),
    ],
)
def test_compatible_record_schemas_add_nullable_columns_and_widen(
    record: dict[str, Any], columns: str, change: str
) -> None:
    merged, found = evolve(V1, arrow_schema(record), META)
    assert merged.names == columns.split()
    assert str(found).startswith(change) and bool(found) == bool(change)
    if "new" in change:
        assert merged.field("note").nullable and not found.widened
    if "->" in change:
        assert merged.field("qty").type == pa.int64() and found.widened


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        (struct("t", id=INT64, qty=optional(STRING)), "field qty is string in the record schema and int32 in the"),
        (struct("t", id=INT64, must=INT32), "field must is new and required"),
        (struct("t", qty=optional(INT32)), "the NOT NULL column id is missing"),
        (struct("t", id=FLOAT64), "field id is double in the record schema and int64"),
        (struct("t", id=INT64, kafka_offset=optional(INT64)), "field kafka_offset has the name of a metadata column"),
    ],
)
def test_incompatible_record_schemas_are_refused_naming_the_field(record: dict[str, Any], problem: str) -> None:
    with pytest.raises(IncompatibleSchema, match=problem):
        evolve(V1, arrow_schema(record), META)


def test_a_struct_column_gains_new_optional_fields_and_loosens_a_field_made_optional() -> None:
    column = arrow_schema(struct("t", address=optional(struct("a", city=STRING))))
    record = arrow_schema(struct("t", address=optional(struct("a", city=optional(STRING), zip=optional(INT32)))))
    merged, change = evolve(column, record, set())
    assert merged.field("address").type == pa.struct([("city", pa.string()), ("zip", pa.int32())])
    assert change.added == ("column address struct<city: string not null> -> struct<city: string, zip: int32>",)
    with pytest.raises(IncompatibleSchema, match="field address is struct<city: string not null, zip: int32 not null>"):
        evolve(column, arrow_schema(struct("t", address=optional(struct("a", city=STRING, zip=INT32)))), set())
