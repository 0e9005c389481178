"""Connect schemas to Avro and back by Confluent's AvroData rules: the exact schema text a Java worker registers
for the same Connect schema, and what Avro schemas written elsewhere read as."""

from __future__ import annotations

import decimal
import json
from typing import Any

import fastavro
import pytest

from headwater.runtime.converters.avro_data import (
    SchemaError,
    avro_text,
    from_datum,
    to_avro,
    to_connect,
    to_datum,
)
from headwater.runtime.converters.logical import decimal_bytes
from headwater.sdk.schemas import (
    DATE,
    INT8,
    INT32,
    INT64,
    STRING,
    TIME,
    TIMESTAMP,
    array,
    map_of,
    optional,
    struct,
)
from headwater.sdk.schemas import (
    decimal as decimal_schema,
)

UNNAMED = struct(
    None,
    id=INT64,
    name=optional(STRING),
    amount=decimal_schema(2),
    day=DATE,
    at=TIMESTAMP,
    tags=array(STRING),
    props=map_of(STRING, INT32),
    codes=map_of(INT32, STRING),
    small=INT8,
)
# what Confluent's AvroData writes for UNNAMED (its field order, property order and namespaces)
UNNAMED_AVRO = (
    '{"type":"record","name":"ConnectDefault","namespace":"io.confluent.connect.avro","fields":['
    '{"name":"id","type":"long"},'
    '{"name":"name","type":["null","string"],"default":null},'
    '{"name":"amount","type":{"type":"bytes","scale":2,"precision":64,"connect.version":1,'
    '"connect.parameters":{"scale":"2"},"connect.name":"org.apache.kafka.connect.data.Decimal",'
    '"logicalType":"decimal"}},'
    '{"name":"day","type":{"type":"int","connect.version":1,"connect.name":"org.apache.kafka.connect.data.Date",'
    '"logicalType":"date"}},'
    '{"name":"at","type":{"type":"long","connect.version":1,'
    '"connect.name":"org.apache.kafka.connect.data.Timestamp","logicalType":"timestamp-millis"}},'
    '{"name":"tags","type":{"type":"array","items":"string"}},'
    '{"name":"props","type":{"type":"map","values":"int"}},'
    '{"name":"codes","type":{"type":"array","items":{"type":"record","name":"MapEntry","fields":['
    '{"name":"key","type":"int"},{"name":"value","type":"string"}]}}},'
    '{"name":"small","type":{"type":"int","connect.type":"int8"}}]}'
)
ORDER = {
    **struct(
        "shop.Order",
        id=INT64,
        customer=struct(None, name=STRING),
        shipping=optional(struct(None, street=STRING, zip=optional(STRING))),
    ),
    "version": 3,
    "doc": "an order",
}
ORDER_AVRO = (
    '{"type":"record","name":"Order","namespace":"shop","fields":['
    '{"name":"id","type":"long"},'
    '{"name":"customer","type":{"type":"record","name":"ConnectDefault","namespace":"io.confluent.connect.avro",'
    '"fields":[{"name":"name","type":"string"}]}},'
    '{"name":"shipping","type":["null",{"type":"record","name":"ConnectDefault2",'
    '"namespace":"io.confluent.connect.avro","fields":[{"name":"street","type":"string"},'
    '{"name":"zip","type":["null","string"],"default":null}]}],"default":null}],'
    '"connect.doc":"an order","connect.version":3,"connect.name":"shop.Order"}'
)


@pytest.mark.parametrize(
    ("schema", "expected"), [(UNNAMED, UNNAMED_AVRO), (ORDER, ORDER_AVRO)], ids=["unnamed", "named"]
)
def test_a_connect_schema_becomes_the_avro_schema_avrodata_writes(schema: dict[str, Any], expected: str) -> None:
    assert avro_text(to_avro(schema)) == expected
    fastavro.parse_schema(json.loads(expected))  # and it is valid Avro


@pytest.mark.parametrize("schema", [UNNAMED, ORDER], ids=["unnamed", "named"])
def test_the_avro_schema_reads_back_as_the_same_connect_schema(schema: dict[str, Any]) -> None:
    assert to_connect(to_avro(schema)) == schema


def test_a_struct_used_twice_is_defined_once_and_named_after() -> None:
    address = struct(None, street=STRING)
    avro = to_avro(struct("shop.Customer", home=address, work=optional(address)))
    assert avro["fields"][1]["type"] == ["null", "io.confluent.connect.avro.ConnectDefault"]
    fastavro.parse_schema(avro)


def test_an_optional_value_with_a_default_puts_null_second() -> None:
    avro = to_avro(struct(None, level=optional(INT32, default=3)))
    assert avro["fields"][0] == {"name": "level", "type": [{"type": "int", "connect.default": 3}, "null"], "default": 3}
    fastavro.parse_schema(avro)


def test_avro_written_elsewhere_reads_as_avrodata_reads_it() -> None:
    avro = {
        "type": "record",
        "name": "Payment",
        "namespace": "bank",
        "doc": "a payment",
        "fields": [
            {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}},
            {"name": "memo", "type": ["null", "string"], "default": None, "doc": "free text"},
            {"name": "state", "type": {"type": "enum", "name": "State", "symbols": ["NEW", "DONE"]}},
            {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "tries", "type": "int", "default": 1},
        ],
    }
    schema = to_connect(avro)
    assert schema["name"] == "bank.Payment"
    assert schema["parameters"] == {
        "io.confluent.connect.avro.record.doc": "a payment",
        "io.confluent.connect.avro.field.doc.memo": "free text",
    }
    amount, memo, state, at, tries = schema["fields"]
    assert amount["name"] == "org.apache.kafka.connect.data.Decimal"
    assert amount["parameters"] == {"scale": "2", "connect.decimal.precision": "10"}
    assert memo == {"type": "string", "optional": True, "field": "memo"}
    assert state["type"] == "string" and state["name"] == "bank.State"
    assert state["parameters"]["io.confluent.connect.avro.Enum.DONE"] == "DONE"
    assert at["name"] == "org.apache.kafka.connect.data.Timestamp"
    assert tries["default"] == 1 and tries["parameters"] == {"io.confluent.connect.avro.field.default": "true"}


def test_a_union_of_several_types_is_refused_naming_the_field() -> None:
    avro = {"type": "record", "name": "R", "fields": [{"name": "either", "type": ["null", "int", "string"]}]}
    with pytest.raises(SchemaError, match=r"field 'either' of R is an Avro union of \[\"null\", \"int\", \"string\"\]"):
        to_connect(avro)


@pytest.mark.parametrize(
    ("unscaled", "expected"),
    [(0, "00"), (1234, "04d2"), (-100, "9c"), (128, "0080"), (-128, "80"), (255, "00ff"), (-256, "ff00")],
)
def test_a_decimal_is_its_unscaled_value_in_javas_bytes(unscaled: int, expected: str) -> None:
    assert decimal_bytes(decimal.Decimal(unscaled).scaleb(-2), 2).hex() == expected


def test_values_written_with_fastavro_read_back_field_for_field() -> None:
    import datetime
    import io

    value = {
        "id": 7,
        "name": None,
        "amount": decimal.Decimal("12.34"),
        "day": datetime.date(2026, 11, 29),
        "at": datetime.datetime(2026, 11, 29, 4, 5, 6, 789000, tzinfo=datetime.UTC),
        "tags": ["a", "b"],
        "props": {"x": 1},
        "codes": {1: "one", 2: "two"},
        "small": -3,
    }
    parsed = fastavro.parse_schema(to_avro(UNNAMED))
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed, to_datum(UNNAMED, value))
    read = fastavro.schemaless_reader(io.BytesIO(out.getvalue()), parsed, None)
    assert from_datum(UNNAMED, read) == value
    assert struct(None, t=TIME)["fields"][0]["name"] == "org.apache.kafka.connect.data.Time"
