"""Parity of Cast, MaskField and Flatten with Kafka Connect's own (4.3.1) on keys and values with schemas: each case's
records (the JsonConverter's schema JSON and payload) through both sides, their output keys, values, schemas and
headers compared (a failure on one side must be one on the other).

Kafka's side reads and writes the records with its JsonConverter set to ``replace.null.with.default=false``
(:data:`KEEP_NULLS`): it then keeps a null where the schema has a default, as Headwater's payloads keep it, so that
the transformations' own ``replace.null.with.default`` shows. :data:`DEFAULT_CONVERTER` cases run with the
converter's defaults too. A struct with a default cannot be sent through Kafka's JsonConverter (it refuses the
schema: "Invalid default value"), so the defaults Flatten passes down from one are tested in memory only
(:func:`test_flatten_passes_a_struct_default_down`). Nor does Kafka's JDK 17 always write a float32 with
``Float.toString``'s shortest digits, as Headwater writes it (1.70000004E12 for 1.7E12, the same float32), so the
float32 casts here stay clear of such values.

None of the three reads ``field.syntax.version`` in Kafka Connect 4.3.1 (a dotted name is a top-level field's
name), and the ``V2`` cases show that Headwater does the same."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.runtime.error_handling.tolerance import StageFailed
from headwater.runtime.transforms import build_chain
from headwater.runtime.transforms.builtins.parts import DataError
from headwater.sdk.records import SourceRecord
from support.java_transforms import JavaTransforms
from support.parity_cases import Case, chain, source
from support.transform_parity import assert_schema_parity

KEEP_NULLS = {"replace.null.with.default": "false"}
SCHEMA_CONVERTER = KEEP_NULLS
"""The JsonConverter settings Kafka's side runs this module's cases with (``support.parity_report`` reads it)."""
DATA = "org.apache.kafka.connect.data."
TIMESTAMP = {"type": "int64", "name": DATA + "Timestamp", "version": 1}
DATE = {"type": "int32", "name": DATA + "Date", "version": 1}
TIME = {"type": "int32", "name": DATA + "Time", "version": 1}


def decimal(scale: int, **more: Any) -> dict[str, Any]:
    return {"type": "bytes", "name": DATA + "Decimal", "version": 1, "parameters": {"scale": str(scale)}, **more}


INNER = {
    "type": "struct",
    "name": "Inner",
    "optional": True,
    "fields": [{"field": "x", "type": "int32"}, {"field": "y", "type": "string", "optional": True}],
}
ROW = {
    "type": "struct",
    "name": "Row",
    "version": 2,
    "doc": "a row",
    "parameters": {"p": "v"},
    "fields": [
        {"field": "i8", "type": "int8"},
        {"field": "i16", "type": "int16", "optional": True},
        {"field": "i32", "type": "int32", "optional": True, "default": 7},
        {"field": "i64", "type": "int64", "optional": True},
        {"field": "f", "type": "float"},
        {"field": "d", "type": "double", "optional": True},
        {"field": "bo", "type": "boolean"},
        {"field": "s", "type": "string", "optional": True},
        {"field": "b", "type": "bytes", "optional": True},
        {"field": "dec", **decimal(2)},
        {"field": "dec0", **decimal(0, optional=True)},
        {"field": "dt", **DATE},
        {"field": "tm", **TIME, "optional": True},
        {"field": "ts", **TIMESTAMP},
        {"field": "arr", "type": "array", "items": {"type": "int32", "optional": True}, "optional": True},
        {"field": "m", "type": "map", "keys": {"type": "string"}, "values": {"type": "int32"}, "optional": True},
        {"field": "nested", **INNER},
    ],
}
FULL = {
    "i8": 100, "i16": -300, "i32": 70_000, "i64": 5_000_000_000, "f": 0.1, "d": 1234.5678, "bo": True, "s": "42",
    "b": "AAE=", "dec": "MDk=", "dec0": "/w==", "dt": 19_000, "tm": 3_723_004, "ts": 1_700_000_000_123,
    "arr": [1, None], "m": {"k": 1}, "nested": {"x": 1, "y": None},
}  # fmt: skip
NULLS = {
    "i8": -1, "i16": None, "i32": None, "i64": None, "f": -2.5, "d": None, "bo": False, "s": None, "b": None,
    "dec": "AA==", "dec0": None, "dt": 0, "tm": None, "ts": -1, "arr": None, "m": None, "nested": None,
}  # fmt: skip
ROWS = [
    source(FULL, value_schema=ROW),
    source(NULLS, value_schema=ROW),
    source({**FULL, "dec": "gAA=", "dt": -1, "ts": 86_400_000 * 3, "s": "-7"}, value_schema=ROW),
    source(None, value_schema={**ROW, "optional": True}),
]
"""A struct of every type, one with its optional fields null, one with other values, and a tombstone."""

KEY = {"type": "struct", "fields": [{"field": "id", "type": "int64"}, {"field": "ts", **TIMESTAMP}]}
KEYED = [
    source(FULL, value_schema=ROW, key={"id": 300, "ts": 5}, key_schema=KEY),
    source("v", key={"id": -1, "ts": 86_400_000}, key_schema=KEY),
]


def whole(payload: Any, **schema: Any) -> dict[str, Any]:
    return source(payload, value_schema=schema)


WHOLES = [
    whole(5_000_000_123, type="int64"),
    whole(-129, type="int32", optional=True, default=3),
    whole(None, type="int32", optional=True, default=3),
    whole("12", type="string", name="my.Code", version=4, doc="doc", parameters={"a": "b"}),
    whole(0.1, type="float"),
    whole(2.75, type="double"),
    whole(True, type="boolean"),
]
"""Whole values of the primitive types; named, optional and defaulted schemas; a tombstone."""

DOTTED = {
    "type": "struct",
    "fields": [
        {"field": "a.b", "type": "int32"},
        {"field": "a", "type": "struct", "fields": [{"field": "b", "type": "int32"}]},
    ],
}
DOTTED_RECORDS = [source({"a.b": 1, "a": {"b": 2}}, value_schema=DOTTED)]

DEEP = {
    "type": "struct",
    "name": "Outer",
    "version": 1,
    "fields": [
        {"field": "id", "type": "int32"},
        {
            "field": "inner",
            "type": "struct",
            "optional": True,
            "doc": "in",
            "fields": [
                {"field": "a", "type": "int32", "optional": True, "default": 3},
                {"field": "b", **TIMESTAMP, "optional": True, "doc": "when"},
                {
                    "field": "deep",
                    "type": "struct",
                    "fields": [{"field": "c", **decimal(2)}, {"field": "d", "type": "bytes", "optional": True}],
                },
            ],
        },
        {"field": "arr", "type": "array", "items": {"type": "string"}, "optional": True},
        {"field": "empty", "type": "struct", "fields": []},
    ],
}
DEEP_RECORDS = [
    source({"id": 1, "inner": {"a": 5, "b": 9, "deep": {"c": "MDk=", "d": "AAE="}}, "arr": ["x"], "empty": {}},
           value_schema=DEEP),
    source({"id": 2, "inner": {"a": None, "b": None, "deep": {"c": "AA==", "d": None}}, "arr": None, "empty": {}},
           value_schema=DEEP),
    source({"id": 3, "inner": None, "arr": [], "empty": {}}, value_schema=DEEP),
    source({"id": 4, "inner": None, "arr": [], "empty": {}}, value_schema={**DEEP, "optional": True}),
    source(None, value_schema={**DEEP, "optional": True}),
]  # fmt: skip
"""Nested structs (an optional one, with a defaulted and a logical field, holding a required one), arrays, an
empty struct; the same schema optional; a tombstone."""


MAPPED = {"type": "struct", "fields": [{"field": "m", "type": "map", "keys": {"type": "string"}, "values": DATE}]}
CLASHING = {
    "type": "struct",
    "fields": [
        {"field": "a_b", "type": "int32"},
        {"field": "a", "type": "struct", "fields": [{"field": "b", "type": "int32"}]},
    ],
}

TO_STRING = "i8:string,f:string,d:string,bo:string,b:string,dec:string,dec0:string,dt:string,tm:string,ts:string"

CAST_CASES: list[Case] = [
    ("numbers narrowed and widened", chain("Cast$Value", {
        "spec": "i8:int16,i16:int8,i32:float64,i64:int32,f:float64,d:int8,bo:int32,s:int64"}), ROWS),
    ("numbers to float32 and boolean", chain("Cast$Value", {
        "spec": "i8:float32,i16:boolean,i64:float32,d:float32,f:boolean,s:float32"}), ROWS),
    ("to string, logical types as Kafka renders them", chain("Cast$Value", {"spec": TO_STRING}), ROWS),
    ("Decimal and logical types to numbers", chain("Cast$Value", {
        "spec": "dec:int32,dec0:float64,dt:int64,tm:int16,ts:int32"}), ROWS),
    ("Decimal and logical types to float32 and boolean", chain("Cast$Value", {
        "spec": "dec:float32,dec0:boolean,dt:boolean,ts:float64,tm:float32"}), ROWS),
    ("string parsed", chain("Cast$Value", {"spec": "s:int8"}), ROWS),
    ("replace.null.with.default false", chain("Cast$Value", {
        "spec": "i32:string,i8:int64", "replace.null.with.default": "false"}), ROWS),
    ("a field the schema lacks", chain("Cast$Value", {"spec": "nope:int8,i8:boolean"}), ROWS),
    ("text that is no number", chain("Cast$Value", {"spec": "s:int32"}),
     [source({**FULL, "s": "4x"}, value_schema=ROW)]),
    ("bytes to a number", chain("Cast$Value", {"spec": "b:int32"}), ROWS),
    ("an array", chain("Cast$Value", {"spec": "arr:string"}), ROWS),
    ("a map", chain("Cast$Value", {"spec": "m:int64"}), ROWS),
    ("a struct", chain("Cast$Value", {"spec": "nested:string"}), ROWS),
    ("fields of a value that is no struct", chain("Cast$Value", {"spec": "a:int8"}), WHOLES),
    *[(f"whole value to {kind}", chain("Cast$Value", {"spec": kind}), WHOLES)
      for kind in ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string")],
    ("whole Decimal and Timestamp", chain("Cast$Value", {"spec": "string"}),
     [whole("MDk=", **decimal(2)), whole(5, **TIMESTAMP), whole(5, **TIMESTAMP, optional=True)]),
    ("whole bytes", chain("Cast$Value", {"spec": "string"}), [whole("AAE=", type="bytes")]),
    ("whole bytes to a number", chain("Cast$Value", {"spec": "int64"}), [whole("AAE=", type="bytes")]),
    ("whole struct", chain("Cast$Value", {"spec": "string"}), ROWS),
    ("Cast$Key fields", chain("Cast$Key", {"spec": "id:int8,ts:string"}), KEYED),
    ("Cast$Key whole", chain("Cast$Key", {"spec": "string"}),
     [source(1, key=7, key_schema={"type": "int64"}),
      source(1, key=None, key_schema={"type": "int64", "optional": True})]),
    ("dotted name with V2", chain("Cast$Value", {"spec": "a.b:string", "field.syntax.version": "V2"}),
     DOTTED_RECORDS),
]  # fmt: skip

MASK_CASES: list[Case] = [
    ("every maskable type", chain("MaskField$Value", {"fields": "i8,i16,i32,i64,f,d,bo,s,dec0,dt,tm,ts,arr,m"}), ROWS),
    ("Decimal of scale 2", chain("MaskField$Value", {"fields": "dec"}), ROWS),
    ("bytes", chain("MaskField$Value", {"fields": "b"}), ROWS),
    ("a struct", chain("MaskField$Value", {"fields": "nested"}), ROWS),
    ("numbers replaced", chain("MaskField$Value", {"fields": "i8,i16,i32,i64,f,d,s", "replacement": "300.75"}), ROWS),
    ("Decimal replaced, its scale", chain("MaskField$Value", {"fields": "dec", "replacement": "-1.50"}), ROWS),
    ("Decimal replaced, another scale", chain("MaskField$Value", {"fields": "dec", "replacement": "1.5"}), ROWS),
    ("Decimal of scale 0 replaced", chain("MaskField$Value", {"fields": "dec0", "replacement": "-20"}), ROWS),
    ("Decimal replaced, a negative scale", chain("MaskField$Value", {"fields": "dec0", "replacement": "2E+1"}), ROWS),
    ("text replaced", chain("MaskField$Value", {"fields": "s", "replacement": "***"}), ROWS),
    ("a number replaced with text", chain("MaskField$Value", {"fields": "i32", "replacement": "***"}), ROWS),
    ("a boolean replaced", chain("MaskField$Value", {"fields": "bo", "replacement": "1"}), ROWS),
    ("a date replaced", chain("MaskField$Value", {"fields": "dt", "replacement": "1"}), ROWS),
    ("an array replaced", chain("MaskField$Value", {"fields": "arr", "replacement": "1"}), ROWS),
    ("replace.null.with.default false", chain("MaskField$Value", {
        "fields": "i32,i8", "replace.null.with.default": "false"}), ROWS),
    ("a field the schema lacks", chain("MaskField$Value", {"fields": "nope"}), ROWS),
    ("a value that is no struct", chain("MaskField$Value", {"fields": "a"}), WHOLES),
    ("MaskField$Key", chain("MaskField$Key", {"fields": "id,ts"}), KEYED),
    ("dotted name with V2", chain("MaskField$Value", {"fields": "a.b", "field.syntax.version": "V2"}),
     DOTTED_RECORDS),
]  # fmt: skip

FLATTEN_CASES: list[Case] = [
    ("nested structs", chain("Flatten$Value"), DEEP_RECORDS),
    ("another delimiter", chain("Flatten$Value", {"delimiter": "__"}), DEEP_RECORDS),
    ("every type", chain("Flatten$Value"), [source(FULL, value_schema={**ROW, "fields": ROW["fields"][:-2]})]),
    ("a map", chain("Flatten$Value"), [source({"m": {"k": 1}}, value_schema=MAPPED)]),
    ("a map in the whole row", chain("Flatten$Value"), ROWS),
    ("two fields, one name", chain("Flatten$Value", {"delimiter": "_"}),
     [source({"a_b": 1, "a": {"b": 2}}, value_schema=CLASHING)]),
    ("a value that is no struct", chain("Flatten$Value"), WHOLES),
    ("Flatten$Key", chain("Flatten$Key"),
     [source(1, key={"k": {"a": 1, "b": {"c": "x"}}}, key_schema={"type": "struct", "fields": [
         {"field": "k", "type": "struct", "fields": [
             {"field": "a", "type": "int8"},
             {"field": "b", "type": "struct", "optional": True, "fields": [{"field": "c", "type": "string"}]}]}]})]),
    ("dotted names", chain("Flatten$Value", {"field.syntax.version": "V2"}),
     [source({"a.b": 1, "a": {"c": 2}}, value_schema={"type": "struct", "fields": [
         {"field": "a.b", "type": "int32"},
         {"field": "a", "type": "struct", "fields": [{"field": "c", "type": "int32"}]}]})]),
]  # fmt: skip

CASES: list[Case] = [
    *[(f"Cast {name}", config, records) for name, config, records in CAST_CASES],
    *[(f"MaskField {name}", config, records) for name, config, records in MASK_CASES],
    *[(f"Flatten {name}", config, records) for name, config, records in FLATTEN_CASES],
]
"""The parity table: (case, config, records), Kafka's converter keeping nulls (:data:`KEEP_NULLS`)."""

DEFAULT_CONVERTER: list[Case] = [
    ("Cast defaults filled", chain("Cast$Value", {"spec": "i32:string,i8:int64"}), ROWS[:2]),
    ("MaskField defaults filled", chain("MaskField$Value", {"fields": "i32,s"}), ROWS[:2]),
    ("Flatten nested structs", chain("Flatten$Value"), DEEP_RECORDS[:2]),
]
"""Cases whose output Kafka's JsonConverter writes the same with its own defaults (a null field takes its schema
default on the way in and out): the transformations fill the defaults in themselves. (Not a struct left null:
its flattened fields stay null in Headwater's payload, where Kafka's converter writes their defaults.)"""


def _ids(cases: list[Case]) -> list[str]:
    return [case[0] for case in cases]


@pytest.mark.parametrize(("name", "config", "records"), CASES, ids=_ids(CASES))
def test_headwater_agrees_with_kafka_on_schemas(
    java_transforms: JavaTransforms, name: str, config: dict[str, str], records: list[dict[str, Any]]
) -> None:
    assert_schema_parity(java_transforms, config, records, converter=KEEP_NULLS)


@pytest.mark.parametrize(("name", "config", "records"), DEFAULT_CONVERTER, ids=_ids(DEFAULT_CONVERTER))
def test_headwater_agrees_with_kafka_and_its_default_converter(
    java_transforms: JavaTransforms, name: str, config: dict[str, str], records: list[dict[str, Any]]
) -> None:
    assert_schema_parity(java_transforms, config, records)


SCHEMA = {"type": "struct", "name": "S", "fields": [{"field": "a", "type": "int64"}]}


@pytest.mark.parametrize(
    ("kind", "settings", "value", "schema"),
    [
        ("Cast$Value", {"spec": "a:string"}, {"a": "1"}, {**SCHEMA, "fields": [{"field": "a", "type": "string"}]}),
        ("MaskField$Value", {"fields": "a"}, {"a": 0}, SCHEMA),
        ("Flatten$Value", {}, {"a": 1}, SCHEMA),
    ],
)
def test_a_value_with_a_schema_is_transformed_with_it(
    kind: str, settings: dict[str, str], value: dict[str, Any], schema: dict[str, Any]
) -> None:
    """Cast, MaskField and Flatten no longer refuse a key or value with a schema: they give back the new value
    with its schema."""
    config = chain(kind, settings)
    record = SourceRecord(None, None, "t", {"a": 1}, None, None, 0, (), None, SCHEMA)
    out = build_chain(config).apply(record)
    assert isinstance(out, SourceRecord)
    assert out.value == value
    assert out.value_schema is not None and out.value_schema["name"] == "S"
    assert [(f["field"], f["type"]) for f in out.value_schema["fields"]] == [
        (f["field"], f["type"]) for f in schema["fields"]
    ]


def test_flatten_passes_a_struct_default_down() -> None:
    """Kafka Connect's Flatten gives a flattened field its own default, else the value the default of a struct it
    is nested in (the top level's too) gives it; a null struct with a default is flattened from its default."""
    inner = {
        "field": "inner",
        "type": "struct",
        "optional": True,
        "default": {"a": 8, "b": "z"},
        "fields": [{"field": "a", "type": "int32", "optional": True}, {"field": "b", "type": "string"}],
    }
    other = {"field": "other", "type": "struct", "optional": True, "fields": [{"field": "c", "type": "int64"}]}
    schema = {
        "type": "struct",
        "optional": True,
        "default": {"id": 0, "inner": None, "other": {"c": 1}},
        "fields": [{"field": "id", "type": "int32"}, inner, other],
    }
    record = SourceRecord(None, None, "t", {"id": 1, "inner": None, "other": None}, None, None, 0, (), None, schema)
    out = build_chain(chain("Flatten$Value")).apply(record)
    assert isinstance(out, SourceRecord) and out.value_schema is not None
    assert out.value == {"id": 1, "inner.a": 8, "inner.b": "z", "other.c": None}
    assert "default" not in out.value_schema and out.value_schema["optional"] is False
    assert [(f["field"], f["optional"], f.get("default")) for f in out.value_schema["fields"]] == [
        ("id", True, 0),
        ("inner.a", True, 8),
        ("inner.b", True, "z"),
        ("other.c", True, 1),
    ]


def test_cast_refuses_the_fields_of_a_struct_with_a_default() -> None:
    """Kafka Connect's Cast casts a schema's default with the schema, and cannot cast a struct: the fields of a
    struct with a default cannot be cast (not sent through Kafka's JsonConverter, which refuses such a schema)."""
    schema = {**SCHEMA, "optional": True, "default": {"a": 1}}
    record = SourceRecord(None, None, "t", {"a": 1}, None, None, 0, (), None, schema)
    with pytest.raises(StageFailed) as failed:
        build_chain(chain("Cast$Value", {"spec": "a:int8"})).apply(record)
    assert isinstance(failed.value.failure.error, DataError)
    assert "does not support casting from STRUCT" in str(failed.value.failure.error)
