"""The JSON Schema converter against a real Schema Registry (Apicurio, Confluent's API): every type round trips,
bytes confluent-kafka's own JSON Schema deserializer reads field for field as Java's converter writes them, bytes its
serializer writes read back with their schema, and each refusal with what went wrong."""

from __future__ import annotations

import base64
import datetime
import decimal
import json
from typing import Any

import httpx
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer

from headwater.runtime.converters import JsonSchemaConverter, load_converter, load_header_converter
from headwater.runtime.converters.logical import decimal_bytes
from headwater.runtime.plugin_catalog import plugin_descs
from headwater.sdk import AvroSchema
from headwater.sdk.errors import ConfigError, ConnectError, RetriableError
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
    map_of,
    optional,
    struct,
)
from headwater.sdk.schemas import (
    decimal as decimal_schema,
)
from support.databases import free_port
from support.registry_converters import context, made

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

EVERY_TYPE = struct(
    "shop.Order",
    id=INT64,
    small=INT8,
    medium=INT16,
    count=INT32,
    ratio=FLOAT32,
    price=FLOAT64,
    paid=BOOLEAN,
    note=optional(STRING),
    blob=BYTES,
    amount=decimal_schema(2, 10),
    day=DATE,
    at_time=TIME,
    placed=TIMESTAMP,
    maybe_day=optional(DATE),
    tags=array(STRING),
    matrix=array(array(INT32)),
    props=map_of(STRING, INT32),
    codes=map_of(INT32, STRING),
    by_day=map_of(DATE, decimal_schema(1)),
    shipping=optional(struct("shop.Address", street=STRING, zip=optional(STRING))),
    lines=array(struct("shop.Line", sku=STRING, qty=INT16)),
    level=optional(INT32, 3),
    unit=optional(STRING, "kg"),
)
VALUE: dict[str, Any] = {
    "id": 2**40,
    "small": -8,
    "medium": 300,
    "count": -70_000,
    "ratio": 0.5,
    "price": 12.25,
    "paid": True,
    "note": None,
    "blob": b"\x00\xff",
    "amount": decimal.Decimal("-12.34"),
    "day": datetime.date(2026, 11, 29),
    "at_time": datetime.time(4, 5, 6, 789000),
    "placed": datetime.datetime(2026, 11, 29, 4, 5, 6, 789000, tzinfo=datetime.UTC),
    "maybe_day": None,
    "tags": ["a", "b"],
    "matrix": [[1, 2], [], [3]],
    "props": {"x": 1},
    "codes": {1: "one", 2: "two"},
    "by_day": {datetime.date(1970, 1, 2): decimal.Decimal("0.5")},
    "shipping": {"street": "Main 1", "zip": None},
    "lines": [{"sku": "s1", "qty": 2}],
    "level": 7,
    "unit": None,
}
PAYLOAD: dict[str, Any] = {
    # what Java's JsonSchemaData writes for VALUE: each logical type in its numeric form, bytes in base64
    **VALUE,
    "blob": "AP8=",
    "amount": base64.b64encode(decimal_bytes(decimal.Decimal("-12.34"), 2)).decode(),
    "day": 20_786,
    "at_time": 14_706_789,
    "placed": 1_795_925_106_789,
    "codes": [{"key": 1, "value": "one"}, {"key": 2, "value": "two"}],
    "by_day": [{"key": 1, "value": base64.b64encode(b"\x05").decode()}],
    "unit": "kg",  # a null with a default is written as the default
}


def converter(url: str, is_key: bool = False, **settings: str) -> JsonSchemaConverter:
    return made(JsonSchemaConverter, "io.confluent.connect.json.JsonSchemaConverter", url, is_key, settings)


def registered(url: str, subject: str) -> Any:
    response = httpx.get(f"{url}/subjects/{subject}/versions/latest", timeout=30)
    assert response.status_code == 200, response.text
    return response.json()


def test_every_type_round_trips_with_its_schema(schema_registry_url: str, unique_name: str) -> None:
    ours = converter(schema_registry_url)
    data = ours.from_connect(unique_name, EVERY_TYPE, VALUE)
    assert data is not None and data[0] == 0
    schema, value = converter(schema_registry_url).to_connect_data(unique_name, data)
    assert value == {**VALUE, "unit": "kg"}
    assert schema == EVERY_TYPE
    assert [f["field"] for f in schema["fields"]] == [f["field"] for f in EVERY_TYPE["fields"]]


def test_the_registered_schema_is_json_with_confluents_annotations(schema_registry_url: str, unique_name: str) -> None:
    converter(schema_registry_url).from_connect(unique_name, EVERY_TYPE, VALUE)
    found = registered(schema_registry_url, f"{unique_name}-value")
    assert found.get("schemaType") == "JSON"
    written = json.loads(found["schema"])
    assert written["title"] == "shop.Order" and written["type"] == "object"
    properties = written["properties"]
    assert [properties[name]["connect.index"] for name in properties] == list(range(len(EVERY_TYPE["fields"])))
    assert properties["small"] == {"type": "integer", "connect.type": "int8", "connect.index": 1}
    assert properties["note"] == {"oneOf": [{"type": "null"}, {"type": "string"}], "connect.index": 7}
    assert properties["amount"]["title"] == "org.apache.kafka.connect.data.Decimal"
    assert properties["amount"]["connect.parameters"] == {"scale": "2", "connect.decimal.precision": "10"}
    assert properties["placed"]["connect.type"] == "int64"


def test_confluent_kafkas_deserializer_reads_what_the_converter_writes(
    schema_registry_url: str, unique_name: str
) -> None:
    data = converter(schema_registry_url).from_connect(unique_name, EVERY_TYPE, VALUE)
    with SchemaRegistryClient({"url": schema_registry_url}) as client:
        read = JSONDeserializer(None, schema_registry_client=client)(data, context(unique_name))
    assert read == PAYLOAD


def test_the_converter_reads_what_confluent_kafkas_serializer_writes(
    schema_registry_url: str, unique_name: str
) -> None:
    """A schema as Java's converter registers it (connect.* annotations): every logical type reads as Python's."""
    java_schema = converter(schema_registry_url).from_connect(f"{unique_name}-java", EVERY_TYPE, VALUE)
    assert java_schema is not None
    schema_str = registered(schema_registry_url, f"{unique_name}-java-value")["schema"]
    with SchemaRegistryClient({"url": schema_registry_url}) as client:
        data = JSONSerializer(schema_str, client)(PAYLOAD, context(unique_name))
    schema, value = converter(schema_registry_url).to_connect_data(unique_name, data)
    assert value == {**VALUE, "unit": "kg"}
    assert schema is not None and [f["field"] for f in schema["fields"]] == [f["field"] for f in EVERY_TYPE["fields"]]


def test_a_plain_json_schema_reads_as_confluents_json_schema_data_maps_it(
    schema_registry_url: str, unique_name: str
) -> None:
    plain = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Reading",
        "type": "object",
        "properties": {
            "sensor": {"type": "string"},
            "value": {"type": "number"},
            "count": {"type": "integer"},
            "ok": {"type": "boolean"},
            "unit": {"type": ["string", "null"]},
            "kind": {"enum": ["a", "b"]},
            "where": {"$ref": "#/definitions/Place"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["sensor"],
        "definitions": {"Place": {"type": "object", "properties": {"room": {"type": "string"}}}},
    }
    sent = {
        "sensor": "t1",
        "value": 21.125,
        "count": 3,
        "ok": False,
        "unit": None,
        "kind": "b",
        "where": {"room": "r1"},
        "tags": ["x"],
    }
    with SchemaRegistryClient({"url": schema_registry_url}) as client:
        data = JSONSerializer(json.dumps(plain), client)(sent, context(unique_name))
    schema, value = converter(schema_registry_url).to_connect_data(unique_name, data)
    assert value == sent
    assert schema is not None and schema["name"] == "Reading"
    assert [(f["field"], f["type"], f["optional"]) for f in schema["fields"]] == [
        ("sensor", "string", False),
        ("value", "double", False),
        ("count", "int64", False),
        ("ok", "boolean", False),
        ("unit", "string", True),
        ("kind", "string", False),
        ("where", "struct", False),
        ("tags", "array", False),
    ]
    assert schema["fields"][5]["parameters"] == {
        "io.confluent.connect.json.Enum": "",
        "io.confluent.connect.json.Enum.a": "a",
        "io.confluent.connect.json.Enum.b": "b",
    }
    nonrequired = converter(schema_registry_url, **{"use.optional.for.nonrequired": "true"})
    schema, _ = nonrequired.to_connect_data(unique_name, data)
    assert schema is not None and [f["optional"] for f in schema["fields"]] == [False] + [True] * 7


def test_numeric_decimals_are_json_numbers_written_exactly(schema_registry_url: str, unique_name: str) -> None:
    schema = struct("a.Price", amount=decimal_schema(30), plain=optional(decimal_schema(2)))
    value = {"amount": decimal.Decimal("12345678901234567890.123456789012345678901234567890"), "plain": None}
    ours = converter(schema_registry_url, **{"decimal.format": "NUMERIC"})
    data = ours.from_connect(unique_name, schema, value)
    exact = b'{"amount":12345678901234567890.123456789012345678901234567890,"plain":null}'
    assert data is not None and data[5:] == exact
    assert converter(schema_registry_url).to_connect(unique_name, data) == value
    written = json.loads(registered(schema_registry_url, f"{unique_name}-value")["schema"])
    assert written["properties"]["amount"]["type"] == "number"


def test_an_avro_schema_is_written_as_the_connect_schema_it_maps_to(schema_registry_url: str, unique_name: str) -> None:
    avro = AvroSchema({"type": "record", "name": "Item", "namespace": "a", "fields": [{"name": "id", "type": "long"}]})
    ours = converter(schema_registry_url)
    schema, value = ours.to_connect_data(unique_name, ours.from_connect(unique_name, avro, {"id": 5}))
    assert value == {"id": 5}
    assert schema is not None and schema["name"] == "a.Item"


def test_the_record_subject_name_strategy_uses_the_title(schema_registry_url: str, unique_name: str) -> None:
    ours = converter(schema_registry_url, **{"value.subject.name.strategy": "topic-record"})
    ours.from_connect(unique_name, struct("a.Named", id=INT64), {"id": 1})
    assert registered(schema_registry_url, f"{unique_name}-a.Named")["schemaType"] == "JSON"
    with pytest.raises(ConnectError, match="needs a named record schema"):
        ours.from_connect(unique_name, INT64, 1)


def test_a_key_is_registered_under_the_key_subject(schema_registry_url: str, unique_name: str) -> None:
    ours = converter(schema_registry_url, is_key=True)
    assert ours.to_connect(unique_name, ours.from_connect(unique_name, STRING, "k1")) == "k1"
    written = json.loads(registered(schema_registry_url, f"{unique_name}-key")["schema"])
    assert written == {"$schema": "http://json-schema.org/draft-07/schema#", "type": "string"}


def test_without_auto_register_an_unregistered_schema_is_refused_naming_the_subject(
    schema_registry_url: str, unique_name: str
) -> None:
    ours = converter(schema_registry_url, **{"auto.register.schemas": "false"})
    with pytest.raises(ConnectError, match=f"find the schema of subject {unique_name}-value"):
        ours.from_connect(unique_name, struct("a.B", id=INT64), {"id": 1})


def test_use_latest_version_writes_with_the_subjects_latest_schema_and_holds_values_to_it(
    schema_registry_url: str, unique_name: str
) -> None:
    latest = struct("a.Latest", id=INT64, extra=optional(STRING))
    first = converter(schema_registry_url).from_connect(unique_name, latest, {"id": 1, "extra": "x"})
    assert first is not None
    ours = converter(schema_registry_url, **{"auto.register.schemas": "false", "use.latest.version": "true"})
    data = ours.from_connect(unique_name, latest, {"id": 2, "extra": None})
    assert data is not None and data[:5] == first[:5]
    assert ours.to_connect(unique_name, data) == {"id": 2, "extra": None}
    with pytest.raises(ConnectError, match=r"does not match its JSON Schema at \$\.id"):
        ours.from_connect(unique_name, struct("a.Latest", id=STRING), {"id": "two"})


def test_an_incompatible_schema_is_refused_with_the_registrys_message(
    schema_registry_url: str, unique_name: str
) -> None:
    ours = converter(schema_registry_url)
    ours.from_connect(unique_name, struct("a.Item", id=INT64), {"id": 1})
    response = httpx.put(
        f"{schema_registry_url}/config/{unique_name}-value",
        json={"compatibility": "BACKWARD"},
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    with pytest.raises(ConnectError) as refused:
        ours.from_connect(unique_name, struct("a.Item", id=STRING), {"id": "one"})
    message = str(refused.value)
    assert f"refused to register the schema of subject {unique_name}-value: " in message
    assert "compatib" in message.lower()


def test_an_unknown_schema_id_is_refused_naming_it(schema_registry_url: str, unique_name: str) -> None:
    with pytest.raises(ConnectError, match="could not find the schema of id 987654"):
        converter(schema_registry_url).to_connect(unique_name, b"\x00" + (987654).to_bytes(4, "big") + b"{}")


def test_an_avro_schema_id_is_refused_as_not_json(schema_registry_url: str, unique_name: str) -> None:
    avro = load_converter("avro", {"schema.registry.url": schema_registry_url}, is_key=False)
    try:
        data = avro.from_connect(unique_name, INT64, 1)
    finally:
        avro.close()  # type: ignore[attr-defined]
    with pytest.raises(ConnectError, match="is a AVRO schema, not a JSON Schema"):
        converter(schema_registry_url).to_connect(unique_name, data)


def test_bytes_in_another_framing_or_not_json_are_refused(schema_registry_url: str, unique_name: str) -> None:
    ours = converter(schema_registry_url)
    with pytest.raises(ConnectError, match="unknown magic byte 7b"):
        ours.to_connect(unique_name, b'{"id": 1}')
    data = ours.from_connect(unique_name, struct("a.E", id=INT64), {"id": 1})
    assert data is not None
    with pytest.raises(ConnectError, match="is not JSON text"):
        ours.to_connect(unique_name, data[:5] + b"{not json")


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ({"id": "not a number", "at": None}, r"at \$\.id: 'not a number' is not an int64"),
        ({"id": 2**63, "at": None}, r"at \$\.id: 9223372036854775808 is not an int64"),
        ({"id": True, "at": None}, r"at \$\.id: True is not an int64"),
        ({"id": 1, "at": "noon"}, r"at \$\.at: Time wants a date, time or datetime"),
        ({"id": None, "at": None}, r"at \$\.id: null, but its schema is not optional"),
        ({"id": 1, "at": None, "other": 2}, r"at \$: fields its schema does not name: other"),
        ({"id": 1, "at": None, "name": 5}, r"its JSON Schema at \$\.name: .*5 is not of type 'string'"),
        ({"id": 1, "at": None, "flag": "yes"}, r"its JSON Schema at \$\.flag: .*'yes' is not of type 'boolean'"),
    ],
)
def test_a_value_that_does_not_match_its_schema_is_refused_naming_the_field(
    schema_registry_url: str, unique_name: str, value: dict[str, Any], match: str
) -> None:
    schema = struct("a.C", id=INT64, at=optional(TIME), name=optional(STRING), flag=optional(BOOLEAN, False))
    with pytest.raises(ConnectError, match=f"the value for topic '{unique_name}'.*{match}"):
        converter(schema_registry_url).from_connect(unique_name, schema, value)


def test_a_nested_value_that_does_not_match_is_refused_with_its_path(
    schema_registry_url: str, unique_name: str
) -> None:
    schema = struct("a.N", lines=array(struct("a.L", qty=INT16)))
    with pytest.raises(ConnectError, match=r"at \$\.lines\[1\]\.qty: 'two' is not an int16"):
        converter(schema_registry_url).from_connect(unique_name, schema, {"lines": [{"qty": 1}, {"qty": "two"}]})


def test_reading_validates_against_the_writers_schema_only_when_asked(
    schema_registry_url: str, unique_name: str
) -> None:
    constrained = {"title": "a.Min", "type": "object", "properties": {"n": {"type": "integer", "minimum": 10}}}
    with SchemaRegistryClient({"url": schema_registry_url}) as client:
        serializer = JSONSerializer(json.dumps(constrained), client, conf={"validate": False})
        data = serializer({"n": 3}, context(unique_name))
    assert converter(schema_registry_url).to_connect(unique_name, data) == {"n": 3}  # Confluent's default: false
    strict = converter(schema_registry_url, **{"json.fail.invalid.schema": "true"})
    with pytest.raises(ConnectError, match=r"does not match its JSON Schema at \$\.n: 3 is less than the minimum"):
        strict.to_connect(unique_name, data)


def test_a_value_of_the_wrong_type_is_refused_on_read_even_without_validation(
    schema_registry_url: str, unique_name: str
) -> None:
    ours = converter(schema_registry_url)
    data = ours.from_connect(unique_name, struct("a.R", id=INT32), {"id": 1})
    assert data is not None
    with pytest.raises(ConnectError, match=r"does not match its schema at \$\.id: an integer wanted, got 'x'"):
        ours.to_connect(unique_name, data[:5] + b'{"id":"x"}')
    assert ours.to_connect_data(unique_name, data[:5] + b"null") == (None, None)  # as Java's SchemaAndValue.NULL
    with pytest.raises(ConnectError, match=r"at \$\.id: null or missing"):
        ours.to_connect(unique_name, data[:5] + b"{}")


def test_a_record_without_a_schema_is_refused_saying_what_to_do(schema_registry_url: str, unique_name: str) -> None:
    with pytest.raises(ConnectError, match=r"needs the record's value schema .* give the record a value_schema"):
        converter(schema_registry_url).from_connect(unique_name, None, {"id": 1})
    assert converter(schema_registry_url).from_connect(unique_name, None, None) is None  # a tombstone
    assert converter(schema_registry_url).to_connect_data(unique_name, None) == (None, None)


def test_an_unreachable_registry_is_a_retriable_error_naming_it() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    ours = converter(url)
    with pytest.raises(RetriableError, match=f"cannot reach the Schema Registry at {url}"):
        ours.from_connect("t", struct("a.D", id=INT64), {"id": 1})
    with pytest.raises(RetriableError, match=f"cannot reach the Schema Registry at {url}"):
        ours.to_connect("t", b"\x00\x00\x00\x00\x01{}")


def test_settings_it_cannot_honour_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"value\.converter\.schema\.registry\.url"):
        load_converter("jsonschema", {}, is_key=False)
    with pytest.raises(ConfigError, match=r"value\.converter\.decimal\.format"):
        load_converter("jsonschema", {"schema.registry.url": "http://r", "decimal.format": "HEX"}, is_key=False)
    with pytest.raises(ConfigError, match=r"preserve\.additional\.properties.*true is not supported"):
        load_converter(
            "jsonschema", {"schema.registry.url": "http://r", "preserve.additional.properties": "true"}, is_key=False
        )


def test_the_json_schema_converter_is_a_key_and_value_converter_only() -> None:
    with pytest.raises(ConfigError, match="convert keys and values, not headers"):
        load_header_converter("io.confluent.connect.json.JsonSchemaConverter", {"schema.registry.url": "http://r"})
    listed = {(desc.class_name, desc.plugin_type) for desc in plugin_descs()}
    name = "io.confluent.connect.json.JsonSchemaConverter"
    assert (name, "converter") in listed
    assert (name, "header_converter") not in listed
