"""The field transformations' settings: every one Kafka Connect 4.3.1 defines is defined, documented (the docs page
is generated from these), and nothing else is, but for the settings Kafka removed, which are refused; and what
they do not support, a key or value with a schema, is refused."""

from __future__ import annotations

import pytest

from headwater.runtime.transforms.builtins import BUILTIN_TRANSFORMATIONS, FIELD_TRANSFORMATIONS
from headwater.sdk.config import ConfigDef
from support.java_transforms import JavaTransforms
from support.parity_cases import chain, source
from support.transform_parity import python_apply

NULLS = "replace.null.with.default"
KAFKA_SETTINGS = {
    "InsertField": {"topic.field", "partition.field", "offset.field", "timestamp.field", "static.field",
                    "static.value", NULLS},
    "ReplaceField": {"exclude", "include", "renames", NULLS},
    "MaskField": {"fields", "replacement", NULLS},
    "HoistField": {"field"},
    "ExtractField": {"field", "field.syntax.version", NULLS},
    "ValueToKey": {"fields", NULLS},
    "Flatten": {"delimiter"},
    "Cast": {"spec", NULLS},
}  # fmt: skip
"""Each transformation's settings in Kafka Connect 4.3.1 (its ``CONFIG_DEF``)."""

REFUSED = {"ReplaceField": {"blacklist", "whitelist"}}
"""Settings Kafka Connect 4.0 removed (and ignores): defined so that they are refused with the replacement's name."""


def definition(name: str) -> ConfigDef:
    definition: ConfigDef = FIELD_TRANSFORMATIONS[name]().config_def()
    return definition


@pytest.mark.parametrize("name", sorted(FIELD_TRANSFORMATIONS))
def test_each_setting_is_kafkas_and_documented(name: str) -> None:
    base = name.split("$")[0]
    keys = {key.name: key for key in definition(name)}
    assert set(keys) == KAFKA_SETTINGS[base] | REFUSED.get(base, set())
    for key in keys.values():
        assert len(key.documentation) >= 30 and key.documentation.endswith("."), key


def test_every_field_transformation_has_both_names_and_both_variants() -> None:
    for base in KAFKA_SETTINGS:
        variants = ["ValueToKey"] if base == "ValueToKey" else [f"{base}$Key", f"{base}$Value"]
        for variant in variants:
            java_name = "org.apache.kafka.connect.transforms." + variant
            assert (
                BUILTIN_TRANSFORMATIONS[variant] is BUILTIN_TRANSFORMATIONS[java_name] is FIELD_TRANSFORMATIONS[variant]
            )
    assert FIELD_TRANSFORMATIONS["Cast$Key"].part == "key" and FIELD_TRANSFORMATIONS["Flatten$Value"].part == "value"


SCHEMA = {"type": "struct", "optional": False, "fields": [{"field": "a", "type": "int64", "optional": False}]}
ONE_OF_EACH = {
    "MaskField$Value": {"fields": "a"},
    "Flatten$Value": {},
    "Cast$Value": {"spec": "a:int8"},
}


@pytest.mark.parametrize("name", sorted(ONE_OF_EACH))
def test_a_value_with_a_schema_is_refused_not_stripped_of_it(java_transforms: JavaTransforms, name: str) -> None:
    """Kafka transforms a Struct and gives back its new schema; these built-ins are schemaless only, and refuse
    such a record (naming the schema) rather than drop its schema (the others: test_parity_field_schemas)."""
    config = chain(name, ONE_OF_EACH[name])
    record = source({"a": 1}, value_schema=SCHEMA)
    (kafka,) = java_transforms.apply(config, [record])
    assert kafka is not None and "error" not in kafka and "value_schema" in kafka
    (ours,) = python_apply(config, [record])
    assert ours is not None and "schemaless values only" in ours["error"] and "value_schema" in ours["error"]
    (schemaless,) = python_apply(config, [source({"a": 1})])
    assert schemaless is not None and "error" not in schemaless
