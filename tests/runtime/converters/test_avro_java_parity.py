"""Headwater's Avro converter against the Java reference: Apicurio's Kafka Connect Avro converter (its AvroData is a
port of Confluent's) converts the same Connect records against the same registry, and Headwater writes the same
schema and the same bytes."""

from __future__ import annotations

import base64
import datetime
import decimal
from collections.abc import Iterator, Mapping
from typing import Any

import httpx
import pytest

from headwater.runtime.converters import AvroConverter, load_converter
from headwater.runtime.converters.logical import day_millis, decimal_bytes, epoch_days, epoch_millis
from headwater.sdk.schemas import (
    BOOLEAN,
    BYTES,
    DATE,
    FLOAT64,
    INT8,
    INT16,
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
from support.java_avro import java_avro

pytestmark = [pytest.mark.java, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

CASES: list[tuple[str, dict[str, Any], Any]] = [
    (
        "order",
        struct(
            "shop.Order",
            id=INT64,
            small=INT8,
            medium=INT16,
            count=INT32,
            price=FLOAT64,
            paid=BOOLEAN,
            note=optional(STRING),
            blob=BYTES,
            amount=decimal_schema(2, 10),
            loose=decimal_schema(3),
            day=DATE,
            at_time=TIME,
            placed=TIMESTAMP,
            tags=array(STRING),
            props=map_of(STRING, INT32),
            codes=map_of(INT32, STRING),
            customer=struct(None, name=STRING, vip=optional(BOOLEAN)),
            shipping=optional(struct("shop.Address", street=STRING, zip=optional(STRING))),
        ),
        {
            "id": 2**40,
            "small": -8,
            "medium": 300,
            "count": -70_000,
            "price": 12.25,
            "paid": True,
            "note": None,
            "blob": b"\x00\xff",
            "amount": decimal.Decimal("-12.34"),
            "loose": decimal.Decimal("1.500"),
            "day": datetime.date(2026, 11, 29),
            "at_time": datetime.time(4, 5, 6, 789000),
            "placed": datetime.datetime(2026, 11, 29, 4, 5, 6, 789000, tzinfo=datetime.UTC),
            "tags": ["a", "b"],
            "props": {"x": 1},
            "codes": {1: "one", 2: "two"},
            "customer": {"name": "Ada", "vip": None},
            "shipping": {"street": "Main 1", "zip": "12345"},
        },
    ),
    ("unnamed", struct(None, id=INT64, nested=optional(struct(None, n=INT32))), {"id": 1, "nested": {"n": 2}}),
    ("versioned", {**struct("a.V", id=INT64), "version": 3, "doc": "a versioned record"}, {"id": 9}),
    ("primitive", STRING, "just a string"),
    ("optional-primitive", optional(INT64), 42),
    ("timestamp", TIMESTAMP, datetime.datetime(2001, 2, 3, 4, 5, 6, tzinfo=datetime.UTC)),
]


def payload(schema: Mapping[str, Any], value: Any) -> Any:
    """``value`` as Kafka's JsonConverter payload of ``schema``."""
    if value is None:
        return None
    name, kind = schema.get("name"), schema["type"]
    if name == "org.apache.kafka.connect.data.Decimal":
        scale = int(schema["parameters"]["scale"])
        return base64.b64encode(decimal_bytes(value, scale)).decode()
    if name == "org.apache.kafka.connect.data.Date":
        return epoch_days(value)
    if name == "org.apache.kafka.connect.data.Time":
        return day_millis(value)
    if name == "org.apache.kafka.connect.data.Timestamp":
        return epoch_millis(value)
    if kind == "bytes":
        return base64.b64encode(value).decode()
    if kind == "array":
        return [payload(schema["items"], item) for item in value]
    if kind == "map":
        if schema["keys"]["type"] == "string":
            return {k: payload(schema["values"], v) for k, v in value.items()}
        return [[payload(schema["keys"], k), payload(schema["values"], v)] for k, v in value.items()]
    if kind == "struct":
        return {field["field"]: payload(field, value.get(field["field"])) for field in schema["fields"]}
    return value


@pytest.fixture
def headwater(schema_registry_url: str) -> Iterator[AvroConverter]:
    made = load_converter("avro", {"schema.registry.url": schema_registry_url}, is_key=False)
    assert isinstance(made, AvroConverter)
    yield made
    made.close()


def registered(url: str, data: bytes) -> str:
    schema_id = int.from_bytes(data[1:5], "big")
    found: str = httpx.get(f"{url}/schemas/ids/{schema_id}", timeout=30).json()["schema"]
    return found


def test_headwater_writes_the_schema_and_bytes_javas_converter_writes(
    headwater: AvroConverter, schema_registry_url: str, unique_name: str
) -> None:
    topics = [f"{unique_name}-{case}" for case, _, _ in CASES]
    java = java_avro(
        schema_registry_url,
        [
            (topic, {"schema": schema, "payload": payload(schema, value)})
            for topic, (_, schema, value) in zip(topics, CASES, strict=True)
        ],
    )
    for topic, (case, schema, value), theirs in zip(topics, CASES, java, strict=True):
        assert isinstance(theirs, bytes), f"{case}: Java failed: {theirs}"
        ours = headwater.from_connect(topic, schema, value)
        assert ours is not None
        assert ours[5:].hex() == theirs[5:].hex(), f"{case}: the Avro payloads differ"
        assert registered(schema_registry_url, ours) == registered(schema_registry_url, theirs), f"{case}: schemas"
        assert ours[:5] == theirs[:5], f"{case}: the framing or the schema id differs"
        assert headwater.to_connect(topic, theirs) == value
