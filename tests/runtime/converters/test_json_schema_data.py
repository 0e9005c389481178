"""Connect schemas and values to JSON Schema and back by Confluent's ``JsonSchemaData`` rules (the shapes its own tests
expect), without a registry: what each Connect schema becomes, what a JSON Schema without Connect's annotations
reads as, and each schema or value that is refused, naming where."""

from __future__ import annotations

import datetime
import decimal
from typing import Any

import pytest

from headwater.runtime.converters.json_schema_data import to_connect, to_json_schema
from headwater.runtime.converters.json_schema_values import dumps, loads, to_connect_value, to_json_value
from headwater.sdk.errors import ConnectError
from headwater.sdk.schemas import (
    DATE,
    FLOAT64,
    INT32,
    STRING,
    TIMESTAMP,
    array,
    map_of,
    optional,
    struct,
)
from headwater.sdk.schemas import (
    decimal as decimal_schema,
)

DRAFT_7 = "http://json-schema.org/draft-07/schema#"


def test_a_map_with_optional_string_keys_is_an_array_of_entries_as_confluents() -> None:
    # JsonSchemaDataTest.testFromConnectMapWithOptionalKey
    assert to_json_schema(map_of(optional(STRING), INT32)) == {
        "$schema": DRAFT_7,
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "key": {"oneOf": [{"type": "null"}, {"type": "string"}], "connect.index": 0},
                "value": {"type": "integer", "connect.type": "int32", "connect.index": 1},
            },
        },
        "connect.type": "map",
    }
    assert to_json_schema(map_of(STRING, INT32)) == {
        "$schema": DRAFT_7,
        "type": "object",
        "additionalProperties": {"type": "integer", "connect.type": "int32"},
        "connect.type": "map",
    }


def test_an_optional_struct_field_is_a_oneof_carrying_the_index_and_the_title_inside() -> None:
    made = to_json_schema(struct("a.Outer", inner=optional(struct("a.Inner", n=INT32))))
    assert made["properties"]["inner"] == {
        "oneOf": [
            {"type": "null"},
            {
                "title": "a.Inner",
                "type": "object",
                "properties": {"n": {"type": "integer", "connect.type": "int32", "connect.index": 0}},
            },
        ],
        "connect.index": 0,
    }


def test_settings_change_the_schema_as_confluents_keys_do() -> None:
    closed = to_json_schema(struct("a.S", amount=decimal_schema(2)), numeric_decimals=True, additional_properties=False)
    assert closed["additionalProperties"] is False
    assert closed["properties"]["amount"]["type"] == "number"
    assert to_connect(closed) == struct("a.S", amount=decimal_schema(2))


def test_defaults_of_logical_types_are_written_in_their_json_form_and_read_back() -> None:
    schema = struct(
        "a.D",
        amount=optional(decimal_schema(2), decimal.Decimal("1.50")),
        day=optional(DATE, datetime.date(1970, 1, 3)),
        at=optional(TIMESTAMP, datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=datetime.UTC)),
        tags=optional(array(STRING), ["x"]),
    )
    made = to_json_schema(schema)
    assert [made["properties"][f]["oneOf"][1]["default"] for f in ("amount", "day", "at", "tags")] == [
        "AJY=",
        2,
        1000,
        ["x"],
    ]
    assert to_connect(made) == schema
    assert to_json_value(schema, {"amount": None, "day": None, "at": None, "tags": None})["day"] == 2


def test_an_enum_string_round_trips() -> None:
    enum = {"enum": ["red", "green"]}
    schema = to_connect(enum)
    assert schema["type"] == "string"
    assert to_json_schema(schema) == {"$schema": DRAFT_7, **enum}


@pytest.mark.parametrize(
    ("json_schema", "match"),
    [
        ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, "a union of several types"),
        ({"type": ["string", "integer", "null"]}, "a union of several types"),
        ({"allOf": [{"type": "string"}]}, "allOf has no Connect schema"),
        ({}, "an empty or boolean JSON Schema"),
        ({"type": "array"}, "does not give one items schema"),
        ({"type": "null"}, "of type 'null' has no Connect schema"),
        ({"type": "integer", "connect.type": "int128"}, "unknown connect.type 'int128'"),
        ({"$ref": "https://example.com/x.json"}, "only local \\$refs"),
        (
            {"type": "object", "properties": {"next": {"$ref": "#"}}},
            "field 'next': the recursive \\$ref",
        ),
    ],
)
def test_a_json_schema_without_a_connect_schema_is_refused_naming_where(json_schema: Any, match: str) -> None:
    with pytest.raises(ConnectError, match=match):
        to_connect(json_schema)


@pytest.mark.parametrize(
    ("schema", "value", "match"),
    [
        (decimal_schema(2), decimal.Decimal("1.234"), "more digits after the point than the Decimal's scale 2"),
        (decimal_schema(2), decimal.Decimal("NaN"), "no finite Decimal"),
        (decimal_schema(2), 1.5, "a decimal.Decimal wanted, got float"),
        (INT32, 2**31, "is not an int32"),
        (FLOAT64, "1.5", "is not a double"),
        (DATE, datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC), "Date wants a date"),
        (map_of(STRING, INT32), {1: 2}, "the map's keys are strings"),
        (array(INT32), "abc", "a list wanted"),
    ],
)
def test_a_value_its_schema_does_not_admit_is_refused(schema: Any, value: Any, match: str) -> None:
    with pytest.raises(ConnectError, match=match):
        to_json_value(schema, value)


def test_nan_is_refused_as_json_cannot_hold_it() -> None:
    with pytest.raises(ConnectError, match="a value JSON cannot hold"):
        dumps(to_json_value(FLOAT64, float("nan")))


def test_a_decimal_reads_from_a_number_exactly_or_from_base64() -> None:
    schema = decimal_schema(3)
    assert to_connect_value(schema, loads("12345678901234567890.125")) == decimal.Decimal("12345678901234567890.125")
    assert to_connect_value(schema, to_json_value(schema, decimal.Decimal("-0.005"))) == decimal.Decimal("-0.005")


def test_properties_without_connect_index_keep_their_written_order() -> None:
    schema = to_connect({"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "boolean"}}})
    assert [f["field"] for f in schema["fields"]] == ["b", "a"]
    indexed = to_connect(
        {
            "type": "object",
            "properties": {
                "b": {"type": "string", "connect.index": 1},
                "a": {"type": "boolean", "connect.index": 0},
            },
        }
    )
    assert [f["field"] for f in indexed["fields"]] == ["a", "b"]
