"""Parity of InsertField, ReplaceField, HoistField, ExtractField and ValueToKey with Kafka Connect's own (4.3.1) on
keys and values with schemas: each case's source records through both, the output's key, value, schemas and
headers compared record by record (:func:`~support.transform_parity.assert_schema_parity`)."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.runtime.transforms import build_chain
from headwater.runtime.transforms.builtins import FIELD_TRANSFORMATIONS
from headwater.sdk.records import SourceRecord
from support.java_transforms import JavaTransforms
from support.parity_cases import Case, chain, source
from support.transform_parity import assert_schema_parity, python_apply, to_record

TIMESTAMP = {"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "version": 1}
DATE = {"type": "int32", "name": "org.apache.kafka.connect.data.Date", "version": 1}
DECIMAL = {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "version": 1, "parameters": {"scale": "2"}}
GEO = {"type": "struct", "name": "Geo", "optional": True, "fields": [{"field": "lat", "type": "double"}]}
ADDRESS = {
    "type": "struct",
    "name": "Address",
    "optional": True,
    "fields": [
        {"field": "city", "type": "string"},
        {"field": "zip", "type": "string", "optional": True},
        {"field": "geo", **GEO},
    ],
}
ORDER = {
    "type": "struct",
    "name": "Order",
    "version": 2,
    "doc": "an order",
    "parameters": {"p": "1"},
    "fields": [
        {"field": "id", "type": "int32"},
        {"field": "name", "type": "string", "optional": True},
        {"field": "amount", **DECIMAL},
        {"field": "ts", **TIMESTAMP, "optional": True},
        {"field": "day", **DATE},
        {"field": "raw", "type": "bytes", "optional": True},
        {"field": "tags", "type": "array", "items": {"type": "string"}, "optional": True},
        {"field": "level", "type": "int32", "optional": True, "default": 5},
        {"field": "a.b", "type": "boolean", "optional": True},
        {"field": "address", **ADDRESS},
    ],
}
OPTIONAL_ORDER = {**ORDER, "optional": True}
FULL = {
    "id": 1,
    "name": "widget",
    "amount": "MDk=",
    "ts": 1_700_000_000_123,
    "day": 19_000,
    "raw": "AAE=",
    "tags": ["a", "b"],
    "level": 7,
    "a.b": True,
    "address": {"city": "Oslo", "zip": "0150", "geo": {"lat": 59.9}},
}
NULLS = {"id": 2, "amount": "AA==", "day": -1, "name": None, "ts": None, "level": None, "address": None}
"""A payload without some optional fields, and a null field with a default: the transformations that rebuild the
struct write each field, the default in place of that null (Kafka Connect's ``Struct.get``)."""
NO_GEO = {**FULL, "id": 3, "address": {"city": "Bergen", "zip": None, "geo": None}}
SPELLED = {**{name: None for name in FULL}, "id": 4, "amount": "AA==", "day": 0, "level": 1}
"""Optional fields null, each spelled out, none with a default."""
ORDERS = [
    source(FULL, value_schema=ORDER),
    source(NULLS, value_schema=ORDER),
    source(NO_GEO, value_schema=OPTIONAL_ORDER, partition=2, timestamp=1_700_000_000_000),
    source(FULL, value_schema=ORDER, headers=[("h", "x")], key="k", key_schema={"type": "string"}),
]
"""Structs with several field types, logical types, optional fields null, a nested struct, a field default."""
UNCHANGED = [ORDERS[0], *ORDERS[2:], source(SPELLED, value_schema=ORDER)]
"""Records for the transformations that pass a struct on as it is (HoistField, ValueToKey's value): their payloads
spell out every field and have no null with a default, as the JVM side's JsonConverter writes a struct (each field,
the default in place of a null)."""
CITIES = [ORDERS[0], *ORDERS[2:]]
"""Records whose address is not null: a required nested field extracted from a null struct would be null, which the
JVM side's JsonConverter cannot write."""
TOMBSTONE = [source(None, value_schema=OPTIONAL_ORDER)]
PLACED = [
    source(FULL, value_schema=ORDER, partition=1, timestamp=5),
    source(NO_GEO, value_schema=OPTIONAL_ORDER, partition=0, timestamp=-1),
]
"""Records with a partition and a timestamp, for fields that must not be null."""
PRIMITIVES = [
    source(5, value_schema={"type": "int64"}),
    source("x", value_schema={"type": "string", "optional": True}),
    source(None, value_schema={"type": "string", "optional": True}),
    source("AAE=", value_schema={"type": "bytes", "name": "B", "version": 1}),
    source([1, 2], value_schema={"type": "array", "items": {"type": "int8"}}),
]
NOT_A_STRUCT = [source(5, value_schema={"type": "int64"}), source({"k": 1}, value_schema={
    "type": "map", "keys": {"type": "string"}, "values": {"type": "int32"}})]  # fmt: skip
KEY_SCHEMA = {"type": "struct", "name": "Key", "fields": [{"field": "k", "type": "string"}]}
KEYED = [
    source(FULL, key={"k": "one"}, key_schema=KEY_SCHEMA, value_schema=ORDER),
    source(1, key={"k": "two"}, key_schema={**KEY_SCHEMA, "optional": True}),
    source(1, key=None, key_schema={**KEY_SCHEMA, "optional": True}),
]
STRING_KEY = [source(1, key="k", key_schema={"type": "string"})]


def ins(**settings: str) -> dict[str, str]:
    return chain("InsertField$Value", {key.replace("_", "."): value for key, value in settings.items()})


INSERT: list[Case] = [
    ("InsertField topic, partition, timestamp, static", ins(topic_field="t", partition_field="p",
     timestamp_field="at", static_field="s", static_value="hw"), ORDERS),
    ("InsertField ? suffixes", ins(topic_field="t?", partition_field="p?", timestamp_field="at?"), ORDERS),
    ("InsertField ! suffixes", ins(topic_field="t!", partition_field="p!", timestamp_field="at!",
     static_field="s!", static_value="v"), PLACED),
    ("InsertField tombstone", ins(topic_field="t!"), TOMBSTONE),
    ("InsertField name the struct has", ins(topic_field="name"), ORDERS[:1]),
    ("InsertField empty name", ins(static_field="", static_value="v"), ORDERS[:1]),
    ("InsertField one name twice", ins(topic_field="x", static_field="x", static_value="v"), ORDERS[:1]),
    ("InsertField offset of a source record", ins(offset_field="o"), ORDERS[:1]),
    ("InsertField not a struct", ins(topic_field="t"), NOT_A_STRUCT),
    ("InsertField without defaults", ins(topic_field="t", replace_null_with_default="false"), PLACED),
    ("InsertField$Key", chain("InsertField$Key", {"topic.field": "t", "timestamp.field": "at"}), KEYED),
    ("InsertField$Key not a struct", chain("InsertField$Key", {"topic.field": "t"}), STRING_KEY),
]  # fmt: skip


NUMBERS = {
    "type": "struct",
    "fields": [
        {"field": "a", "type": "int32", "optional": True},
        {"field": "b", "type": "int64", "optional": True},
        {"field": "c", "type": "array", "items": {"type": "int32"}, "optional": True},
        {"field": "d", "type": "array", "items": {"type": "int64"}, "optional": True},
        {"field": "e", "type": "int32", "name": "X", "optional": True},
        {"field": "f", "type": "map", "keys": {"type": "int32"}, "values": {"type": "int32"}, "optional": True},
        {"field": "g", "type": "map", "keys": {"type": "int64"}, "values": {"type": "int32"}, "optional": True},
    ],
}
NUMBERED = [
    source({"a": 1, "b": 2, "c": [], "d": [], "e": 3, "f": None, "g": None}, value_schema=NUMBERS),
    source({"a": None, "b": 2, "c": [1], "d": [2], "e": None, "f": [[1, 2]], "g": []}, value_schema=NUMBERS),
    source({"a": None, "b": None, "c": [], "d": None, "e": 4, "f": [], "g": [[1, 2]]}, value_schema=NUMBERS),
    source({"a": 5, "b": None, "c": None, "d": None, "e": None, "f": [[1, 2]], "g": None}, value_schema=NUMBERS),
]
"""Fields of different schemas, for ReplaceField's renames that give a field the value of another: Kafka Connect
checks that value against the field's schema (its Java class; element by element in an array or a map)."""


def rep(**settings: str) -> dict[str, str]:
    return chain("ReplaceField$Value", settings)


REPLACE: list[Case] = [
    ("ReplaceField exclude", rep(exclude="name,address,nope"), ORDERS),
    ("ReplaceField include", rep(include="address,id,ts,nope"), ORDERS),
    ("ReplaceField renames", rep(renames="id:key,address:where,ts:at"), ORDERS),
    ("ReplaceField include, exclude, renames", rep(include="id,name,level", exclude="name", renames="level:lvl"),
     ORDERS),
    ("ReplaceField rename onto a kept field", rep(renames="id:name"), ORDERS[:1]),
    ("ReplaceField rename onto a dropped field", rep(exclude="name", renames="id:name"), ORDERS[:1]),
    ("ReplaceField rename's value of another type", rep(exclude="name", renames="name:id"), ORDERS[:1]),
    *[(f"ReplaceField {dropped}'s value into {kept}", rep(exclude=dropped, renames=f"{dropped}:{kept}"), NUMBERED)
      for dropped, kept in (("a", "b"), ("c", "d"), ("a", "e"), ("e", "a"), ("f", "g"), ("b", "a"))],
    ("ReplaceField nothing kept", rep(include="nope"), ORDERS[:2]),
    ("ReplaceField tombstone", rep(exclude="id"), TOMBSTONE),
    ("ReplaceField not a struct", rep(exclude="id"), NOT_A_STRUCT),
    ("ReplaceField without defaults", rep(exclude="name", replace_null_with_default="false"), PLACED),
    ("ReplaceField$Key", chain("ReplaceField$Key", {"renames": "k:key"}), KEYED),
    ("ReplaceField$Key not a struct", chain("ReplaceField$Key", {"exclude": "k"}), STRING_KEY),
]  # fmt: skip

HOIST: list[Case] = [
    ("HoistField struct", chain("HoistField$Value", {"field": "order"}), UNCHANGED),
    ("HoistField primitives", chain("HoistField$Value", {"field": "v"}), PRIMITIVES),
    ("HoistField tombstone", chain("HoistField$Value", {"field": "v"}), TOMBSTONE),
    ("HoistField empty name", chain("HoistField$Value", {"field": ""}), PRIMITIVES[:1]),
    ("HoistField$Key", chain("HoistField$Key", {"field": "key"}), [*KEYED, *STRING_KEY]),
]


def ext(field: str, v2: bool = False, **settings: str) -> dict[str, str]:
    syntax = {"field.syntax.version": "V2"} if v2 else {}
    return chain("ExtractField$Value", {"field": field, **syntax, **settings})


EXTRACT: list[Case] = [
    *[(f"ExtractField {name}", ext(name), ORDERS) for name in ("id", "name", "amount", "ts", "day", "tags", "level")],
    ("ExtractField struct", ext("address"), ORDERS),
    ("ExtractField dotted name, V1", ext("a.b"), ORDERS),
    ("ExtractField nested path, V1", ext("address.city"), ORDERS[:1]),
    ("ExtractField nested, V2", ext("address.city", v2=True), CITIES),
    ("ExtractField nested optional, V2", ext("address.zip", v2=True), ORDERS),
    ("ExtractField two levels, V2", ext("address.geo.lat", v2=True), [ORDERS[0], ORDERS[3]]),
    ("ExtractField nested struct, V2", ext("address.geo", v2=True), ORDERS),
    ("ExtractField backticks, V2", ext("`a.b`", v2=True), ORDERS),
    ("ExtractField through a non-struct, V2", ext("id.x", v2=True), ORDERS[:1]),
    ("ExtractField missing nested, V2", ext("address.nope", v2=True), ORDERS[:1]),
    ("ExtractField missing field", ext("nope"), ORDERS[:1]),
    ("ExtractField tombstone", ext("name"), TOMBSTONE),
    ("ExtractField tombstone, V2", ext("address.zip", v2=True), TOMBSTONE),
    ("ExtractField not a struct", ext("id"), NOT_A_STRUCT),
    ("ExtractField null not a struct", ext("id"), PRIMITIVES[2:3]),
    ("ExtractField without defaults", ext("name", replace_null_with_default="false"), PLACED),
    ("ExtractField$Key", chain("ExtractField$Key", {"field": "k"}), KEYED[:2]),
    ("ExtractField$Key not a struct", chain("ExtractField$Key", {"field": "k"}), STRING_KEY),
]

VALUE_TO_KEY: list[Case] = [
    ("ValueToKey fields", chain("ValueToKey", {"fields": "id,name"}), UNCHANGED),
    ("ValueToKey order given", chain("ValueToKey", {"fields": "address,level,id"}), UNCHANGED),
    ("ValueToKey logical types", chain("ValueToKey", {"fields": "ts,day,amount,raw"}), UNCHANGED),
    ("ValueToKey over a key with a schema", chain("ValueToKey", {"fields": "id"}), KEYED[:1]),
    ("ValueToKey missing field", chain("ValueToKey", {"fields": "id,nope"}), ORDERS[:1]),
    ("ValueToKey one field twice", chain("ValueToKey", {"fields": "name,id,name"}), UNCHANGED),
    ("ValueToKey tombstone", chain("ValueToKey", {"fields": "id"}), TOMBSTONE),
    ("ValueToKey not a struct", chain("ValueToKey", {"fields": "id"}), NOT_A_STRUCT),
    ("ValueToKey without defaults", chain("ValueToKey", {"fields": "id,name", "replace.null.with.default": "false"}),
     PLACED),
]  # fmt: skip

CASES: list[Case] = [*INSERT, *REPLACE, *HOIST, *EXTRACT, *VALUE_TO_KEY]
"""The parity table: (case, config, records). ``replace.null.with.default=false`` cases have no null field with a
default: the JVM side reads its input through the JsonConverter, which puts the default in place of such a null
before the transformation sees it (see :func:`test_without_defaults_a_null_field_stays_null`)."""


@pytest.mark.parametrize(("name", "config", "records"), CASES, ids=[case[0] for case in CASES])
def test_parity_with_schemas(
    java_transforms: JavaTransforms, name: str, config: dict[str, str], records: list[dict[str, Any]]
) -> None:
    assert_schema_parity(java_transforms, config, records)


def test_the_table_has_errors_and_successes_for_each_transformation() -> None:
    """Each transformation's cases include at least one failing and one passing record on Headwater's side, so
    that the table checks both the schemas built and the refusals."""
    for group in (INSERT, REPLACE, HOIST, EXTRACT, VALUE_TO_KEY):
        answers = [answer for _, config, records in group for answer in python_apply(config, records)]
        assert any(answer is not None and "error" not in answer for answer in answers)
        if group is not HOIST:
            assert any(answer is not None and "error" in answer for answer in answers)


SCHEMA = {"type": "struct", "optional": False, "fields": [{"field": "a", "type": "int64", "optional": False}]}
ONE_OF_EACH = {
    "InsertField$Value": {"topic.field": "t"},
    "ReplaceField$Value": {"exclude": "b"},
    "HoistField$Value": {"field": "h"},
    "ExtractField$Value": {"field": "a"},
    "ValueToKey": {"fields": "a"},
}


@pytest.mark.parametrize("name", sorted(ONE_OF_EACH))
def test_a_value_with_a_schema_is_transformed_not_refused(name: str) -> None:
    assert name in FIELD_TRANSFORMATIONS
    (out,) = python_apply(chain(name, ONE_OF_EACH[name]), [source({"a": 1}, value_schema=SCHEMA)])
    assert out is not None and "error" not in out


def test_without_defaults_a_null_field_stays_null() -> None:
    """``replace.null.with.default=false`` keeps a null field null where true gives its schema default (Kafka
    Connect's ``Struct.getWithoutDefault`` against ``Struct.get``), for each transformation that copies fields."""
    schema = {"type": "struct", "fields": [{"field": "a", "type": "int32", "optional": True, "default": 5}]}
    record = source({"a": None}, value_schema=schema)
    configs = {
        "InsertField$Value": ({"topic.field": "t"}, "value"),
        "ReplaceField$Value": ({"renames": "a:b"}, "value"),
        "ExtractField$Value": ({"field": "a"}, "value"),
        "ValueToKey": ({"fields": "a"}, "key"),
    }
    for name, (settings, part) in configs.items():
        found = []
        for replace in ("true", "false"):
            (out,) = python_apply(chain(name, {**settings, "replace.null.with.default": replace}), [record])
            assert out is not None and "error" not in out, (name, out)
            found.append(out[part] if name.startswith("Extract") else next(iter(out[part].values())))
        assert found == [5, None], name


def test_a_null_in_a_required_field_is_refused() -> None:
    """Kafka Connect's ``Struct.put`` refuses null in a required field (records its JsonConverter could not read, so
    not in the parity table): a hoisted null of a required schema, a copied null whose default is not taken."""
    (hoisted,) = python_apply(chain("HoistField$Value", {"field": "v"}), [source(None, value_schema=STRING_SCHEMA)])
    assert hoisted is not None and "Invalid value: null used for required field" in hoisted["error"]
    schema = {"type": "struct", "fields": [{"field": "a", "type": "int32", "default": 5}]}
    record = source({"a": None}, value_schema=schema)
    (kept,) = python_apply(ins(topic_field="t", replace_null_with_default="false"), [record])
    assert kept is not None and "required field" in kept["error"]
    (defaulted,) = python_apply(ins(topic_field="t"), [record])
    assert defaulted is not None and defaulted["value"] == {"a": 5, "t": "orders"}


STRING_SCHEMA = {"type": "string"}


@pytest.mark.parametrize(("name", "config", "records"), CASES[:1] + REPLACE[:1] + HOIST[:1] + VALUE_TO_KEY[:1])
def test_records_sharing_a_schema_share_the_schema_built(
    name: str, config: dict[str, str], records: list[dict[str, Any]]
) -> None:
    """A schema is built once for the records that share one (as Kafka Connect caches it), not once per record."""
    stages = build_chain(config)
    try:
        first, second = (stages.apply(to_record(records[0])) for _ in range(2))
    finally:
        stages.close()
    assert isinstance(first, SourceRecord) and isinstance(second, SourceRecord)
    part = "key_schema" if name.startswith("ValueToKey") else "value_schema"
    assert getattr(first, part) is not None and getattr(first, part) is getattr(second, part)
