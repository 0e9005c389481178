"""Parity of InsertField, ReplaceField, MaskField, HoistField, ExtractField and ValueToKey with Kafka Connect's
own (4.3.1), schemaless: each case's records through both, compared record by record."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest

from headwater.runtime.transforms import build_chain
from headwater.sdk.errors import ConfigError
from support.java_transforms import JavaTransforms, TransformConfigError
from support.parity_cases import Case, both, chain, sink, source
from support.transform_parity import assert_parity

NESTED = {"id": 7, "name": "ada", "address": {"city": "Oslo", "zip": "0150"}, "tags": ["a", "b"], "gone": None}
NOT_MAPS = [sink("text"), sink(5), sink([1, 2]), source(True)]
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
TYPED = {
    "s": "secret",
    "i": 123,
    "f": 1.5,
    "b": True,
    "d": decimal.Decimal("9.99"),
    "t": dt.datetime(2026, 1, 2, tzinfo=dt.UTC),
    "l": [1],
    "m": {"x": 1},
    "n": None,
}

CASES: list[Case] = [
    # InsertField
    (
        "insert topic partition offset timestamp",
        chain(
            "InsertField$Value",
            {"topic.field": "t", "partition.field": "p", "offset.field": "o", "timestamp.field": "ts"},
        ),
        [sink({"a": 1}), sink({"a": 1}, timestamp=None), sink({})],
    ),
    (
        "insert required and optional suffixes",
        chain("InsertField$Value", {"topic.field": "t!", "partition.field": "p?", "timestamp.field": "ts!"}),
        [*both({"a": 1}), sink({"a": 1}, timestamp=None)],
    ),
    (
        "insert static field",
        chain("InsertField$Value", {"static.field": "src", "static.value": "hw"}),
        [*both(NESTED), sink({"src": "old"})],
    ),
    (
        "insert into key",
        chain("InsertField$Key", {"topic.field": "t", "static.field": "s", "static.value": "v"}),
        [sink({"a": 1}, key={"k": 1}), source(None, key={"k": 2})],
    ),
    (
        "insert offset into a source record fails",
        chain("InsertField$Value", {"offset.field": "o"}),
        [source({"a": 1}), sink({"a": 1})],
    ),
    (
        "insert passes tombstones",
        chain("InsertField$Value", {"topic.field": "t"}),
        [*both(None), sink(None, key={"k": 1})],
    ),
    ("insert refuses non-maps", chain("InsertField$Value", {"topic.field": "t"}), NOT_MAPS),
    (
        "insert source record without partition",
        chain("InsertField$Value", {"partition.field": "p"}),
        [source({"a": 1}), source({"a": 1}, partition=2)],
    ),
    (
        "insert strips one suffix only",
        chain("InsertField$Value", {"topic.field": "a!!", "partition.field": "b?!", "timestamp.field": "?"}),
        [sink({})],
    ),
    (
        "insert an empty field name",
        chain("InsertField$Value", {"topic.field": "", "static.field": "!", "static.value": "v"}),
        [sink({})],
    ),
    (
        "insert trims names and values",
        chain("InsertField$Value", {"static.field": " s ", "static.value": " v "}),
        [sink({})],
    ),
    ("insert static empty value", chain("InsertField$Value", {"static.field": "s", "static.value": ""}), [sink({})]),
    # ReplaceField
    ("replace include", chain("ReplaceField$Value", {"include": "id,name,absent"}), [*both(NESTED)]),
    ("replace exclude", chain("ReplaceField$Value", {"exclude": "address,tags"}), [*both(NESTED)]),
    (
        "replace exclude wins over include",
        chain("ReplaceField$Value", {"include": "id,name", "exclude": "name"}),
        [*both(NESTED)],
    ),
    ("replace renames", chain("ReplaceField$Value", {"renames": "id:key,name:who,absent:x"}), [*both(NESTED)]),
    (
        "replace renames onto an existing field",
        chain("ReplaceField$Value", {"renames": "id:name"}),
        [sink({"id": 1, "name": "n"}), sink({"name": "n", "id": 1})],
    ),
    (
        "replace rename with include of the old name",
        chain("ReplaceField$Value", {"include": "id", "renames": "id:key"}),
        [*both(NESTED)],
    ),
    ("replace key", chain("ReplaceField$Key", {"exclude": "b"}), [sink(1, key={"a": 1, "b": 2})]),
    ("replace passes tombstones", chain("ReplaceField$Value", {"exclude": "a"}), [*both(None)]),
    ("replace refuses non-maps", chain("ReplaceField$Value", {"exclude": "a"}), NOT_MAPS),
    ("replace without settings", chain("ReplaceField$Value"), [*both(NESTED)]),
    (
        "replace java split renames",
        chain("ReplaceField$Value", {"renames": ":blank,a:b:"}),
        [sink({"": 1, "a": 2, "b": 3})],
    ),
    (
        "replace duplicates",
        chain("ReplaceField$Value", {"exclude": "a,a", "include": "b,b,a"}),
        [sink({"a": 1, "b": 2, "c": 3})],
    ),
    ("mask duplicate fields", chain("MaskField$Value", {"fields": "a,a"}), [sink({"a": "x"})]),
    # MaskField
    (
        "mask every type with its empty value",
        chain("MaskField$Value", {"fields": "s,i,f,b,d,t,l,m,n,absent"}),
        [*both(TYPED)],
    ),
    ("mask bytes", chain("MaskField$Value", {"fields": "x"}), [sink({"x": b"\x01"})]),
    (
        "mask strings with a replacement",
        chain("MaskField$Value", {"fields": "s,n", "replacement": "***"}),
        [*both(TYPED)],
    ),
    (
        "mask numbers with a replacement",
        chain("MaskField$Value", {"fields": "i,f,d", "replacement": "0"}),
        [*both(TYPED)],
    ),
    (
        "mask a float with a decimal replacement",
        chain("MaskField$Value", {"fields": "f", "replacement": "2.5"}),
        [sink({"f": 1.0}), sink({"f": 1.0, "i": 2})],
    ),
    (
        "mask an integer with a decimal replacement fails",
        chain("MaskField$Value", {"fields": "i", "replacement": "2.5"}),
        [sink({"i": 1})],
    ),
    (
        "mask a number with text fails",
        chain("MaskField$Value", {"fields": "i", "replacement": "abc"}),
        [sink({"i": 1}), sink({"i": None})],
    ),
    (
        "mask a boolean with a replacement fails",
        chain("MaskField$Value", {"fields": "b", "replacement": "1"}),
        [sink({"b": True})],
    ),
    (
        "mask a map with a replacement fails",
        chain("MaskField$Value", {"fields": "m", "replacement": "1"}),
        [sink({"m": {"x": 1}})],
    ),
    (
        "mask replacement java number syntax",
        chain("MaskField$Value", {"fields": "i,f", "replacement": "+7"}),
        [sink({"i": 1, "f": 1.0})],
    ),
    (
        "mask replacement python-only syntax",
        chain("MaskField$Value", {"fields": "i", "replacement": "1_0"}),
        [sink({"i": 1}), sink({"f": 1.0})],
    ),
    (
        "mask replacements beyond a long or a double",
        chain("MaskField$Value", {"fields": "i,f,d", "replacement": "1e20"}),
        [sink({"i": 1, "f": 1.0, "d": decimal.Decimal(1)})],
    ),
    (
        "mask replacement overflowing",
        chain("MaskField$Value", {"fields": "i,f", "replacement": "-1e400"}),
        [sink({"i": 1, "f": 1.0})],
    ),
    (
        "mask replacement with a fraction",
        chain("MaskField$Value", {"fields": "i,f", "replacement": "-7.9"}),
        [sink({"i": 1, "f": 1.0})],
    ),
    ("mask key", chain("MaskField$Key", {"fields": "a"}), [sink(1, key={"a": "x", "b": 2})]),
    ("mask passes tombstones", chain("MaskField$Value", {"fields": "a"}), [*both(None)]),
    ("mask refuses non-maps", chain("MaskField$Value", {"fields": "a"}), NOT_MAPS),
    # HoistField
    (
        "hoist value",
        chain("HoistField$Value", {"field": "wrapped"}),
        [*both(NESTED), sink("text"), sink(5), sink([1]), sink(None)],
    ),
    (
        "hoist key",
        chain("HoistField$Key", {"field": "k"}),
        [sink(1, key=9), source(1, key=None), sink(1, key={"a": 1})],
    ),
    # ExtractField
    ("extract value field", chain("ExtractField$Value", {"field": "name"}), [*both(NESTED), sink({"x": 1})]),
    ("extract nested map", chain("ExtractField$Value", {"field": "address"}), [*both(NESTED)]),
    ("extract key field", chain("ExtractField$Key", {"field": "id"}), [sink(1, key={"id": 5}), source(1, key=None)]),
    ("extract passes tombstones", chain("ExtractField$Value", {"field": "a"}), [*both(None)]),
    ("extract refuses non-maps", chain("ExtractField$Value", {"field": "a"}), NOT_MAPS),
    (
        "extract dotted name with V1",
        chain("ExtractField$Value", {"field": "address.city"}),
        [sink(NESTED), sink({"address.city": "flat"})],
    ),
    (
        "extract nested with V2",
        chain("ExtractField$Value", {"field": "address.city", "field.syntax.version": "V2"}),
        [*both(NESTED), sink({"address": None}), sink({"id": 1}), sink({"address.city": "flat"})],
    ),
    (
        "extract nested non-map with V2 fails",
        chain("ExtractField$Value", {"field": "name.first", "field.syntax.version": "v2"}),
        [sink(NESTED)],
    ),
    (
        "extract backticks with V2",
        chain("ExtractField$Value", {"field": "`a.b`.c", "field.syntax.version": "V2"}),
        [sink({"a.b": {"c": 1}}), sink({"a": {"b": {"c": 2}}})],
    ),
    (
        "extract trailing dot with V2",
        chain("ExtractField$Value", {"field": "a.", "field.syntax.version": "V2"}),
        [sink({"a": {"": 1}}), sink({"a.": 2})],
    ),
    (
        "extract escaped backtick with V2",
        chain("ExtractField$Value", {"field": "`a\\`.b`.c", "field.syntax.version": "V2"}),
        [sink({"a`.b": {"c": 1}})],
    ),
    (
        "extract deep with V2",
        chain("ExtractField$Key", {"field": "a.b.c", "field.syntax.version": "V2"}),
        [sink(1, key={"a": {"b": {"c": [1]}}}), sink(1, key={"a": {"b": 1}})],
    ),
    # ValueToKey
    ("value to key", chain("ValueToKey", {"fields": "id,name,absent"}), [*both(NESTED, key="old")]),
    ("value to key refuses tombstones and non-maps", chain("ValueToKey", {"fields": "id"}), [*both(None), *NOT_MAPS]),
]

CONFIG_ERRORS: list[tuple[str, dict[str, str]]] = [
    ("insert nothing", chain("InsertField$Value")),
    ("insert static field without value", chain("InsertField$Value", {"static.field": "s"})),
    ("insert empty static field without value", chain("InsertField$Value", {"static.field": "!"})),
    ("replace bad rename", chain("ReplaceField$Value", {"renames": "a"})),
    ("replace empty rename part", chain("ReplaceField$Value", {"renames": "a:"})),
    ("mask without fields", chain("MaskField$Value")),
    ("mask empty fields", chain("MaskField$Value", {"fields": ""})),
    ("mask empty replacement", chain("MaskField$Value", {"fields": "a", "replacement": ""})),
    ("hoist without field", chain("HoistField$Value")),
    ("extract without field", chain("ExtractField$Value")),
    ("extract bad syntax version", chain("ExtractField$Value", {"field": "a", "field.syntax.version": "V3"})),
    ("extract unpaired backtick", chain("ExtractField$Value", {"field": "`a.b", "field.syntax.version": "V2"})),
    ("value to key without fields", chain("ValueToKey")),
    ("value to key empty fields", chain("ValueToKey", {"fields": ""})),
    ("replace rename with three parts", chain("ReplaceField$Value", {"renames": "a:b:c"})),
]


@pytest.mark.parametrize(("name", "config", "records"), CASES, ids=[case[0] for case in CASES])
def test_field_transformations_agree_with_kafka(
    java_transforms: JavaTransforms, name: str, config: dict[str, str], records: list[dict[str, object]]
) -> None:
    assert_parity(java_transforms, config, records)


@pytest.mark.parametrize(("name", "config"), CONFIG_ERRORS, ids=[case[0] for case in CONFIG_ERRORS])
def test_bad_configs_are_refused_by_both(java_transforms: JavaTransforms, name: str, config: dict[str, str]) -> None:
    with pytest.raises(TransformConfigError):
        java_transforms.apply(config, [sink({"a": 1})])
    with pytest.raises(ConfigError):
        build_chain(config)


@pytest.mark.parametrize(("setting", "instead"), [("blacklist", "exclude"), ("whitelist", "include")])
def test_the_settings_kafka_4_removed_are_refused_where_kafka_ignores_them(
    java_transforms: JavaTransforms, setting: str, instead: str
) -> None:
    config = chain("ReplaceField$Value", {setting: "a"})
    (kafka,) = java_transforms.apply(config, [sink({"a": 1, "b": 2})])
    assert kafka is not None and kafka["value"] == {"a": 1, "b": 2}  # Kafka 4 drops nothing, says nothing
    with pytest.raises(ConfigError, match=f"use {instead}") as refused:
        build_chain(config)
    assert refused.value.key == f"transforms.t.{setting}"


def test_an_empty_v2_path_is_refused_where_kafka_fails_every_record(java_transforms: JavaTransforms) -> None:
    config = chain("ExtractField$Value", {"field": "", "field.syntax.version": "V2"})
    (kafka,) = java_transforms.apply(config, [sink({"": 1})])
    assert kafka is not None and "error" in kafka  # Kafka accepts the config, then fails each record
    with pytest.raises(ConfigError, match="at least one step") as refused:
        build_chain(config)
    assert refused.value.key == "transforms.t.field"
